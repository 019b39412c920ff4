/*
Copyright The admitkit Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package match decides whether a LocationMutator mutator applies to an
// object, with the criteria of Gatekeeper's `spec.match`: kinds, scope,
// namespaces, excludedNamespaces, labelSelector, namespaceSelector, name and
// source. Every criterion must hold; an empty criterion holds for all.
package match

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Match is `spec.match` of a Gatekeeper mutator, field for field.
type Match struct {
	// Source is All (the default), Original or Generated. Generated
	// objects come from Gatekeeper's expansion, which does not exist
	// in-process, so a Generated mutator never applies.
	//
	// +kubebuilder:validation:Enum=All;Generated;Original
	Source string `json:"source,omitempty"`
	// Kinds lists groups and kinds; an empty list matches every kind.
	Kinds []Kinds `json:"kinds,omitempty"`
	// Scope is Cluster or Namespaced; any other value matches both, as in
	// Gatekeeper.
	Scope string `json:"scope,omitempty"`
	// Namespaces are wildcards (`kube-*`, `*-system`, `*kube*`) one of which
	// the object's namespace must match.
	//
	// +kubebuilder:validation:items:Pattern=`^\*?[-:a-z0-9]*\*?$`
	Namespaces []string `json:"namespaces,omitempty"`
	// ExcludedNamespaces are wildcards none of which may match.
	//
	// +kubebuilder:validation:items:Pattern=`^\*?[-:a-z0-9]*\*?$`
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// LabelSelector is tested against the object's own labels.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// NamespaceSelector is tested against the labels of the object's
	// namespace (a Namespace's own labels for a Namespace).
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// Name is a wildcard on metadata.name (and on generateName for a prefix
	// or contains wildcard).
	//
	// +kubebuilder:validation:Pattern=`^\*?[-:a-z0-9]*\*?$`
	Name string `json:"name,omitempty"`
}

// Kinds is one entry of Match.Kinds. `*` or an empty list means any.
type Kinds struct {
	APIGroups []string `json:"apiGroups,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
}

// Source values.
const (
	SourceAll       = "All"
	SourceOriginal  = "Original"
	SourceGenerated = "Generated"
)

// Scope values that restrict a match.
const (
	ScopeCluster    = "Cluster"
	ScopeNamespaced = "Namespaced"
)

// ErrNamespaceUnknown is returned (wrapped) when a namespaceSelector must be
// tested and the object's namespace cannot be found.
var ErrNamespaceUnknown = errors.New("namespace not found")

// NamespaceLabelsFunc returns the labels of the named namespace, or an error
// when it is not known.
type NamespaceLabelsFunc func(name string) (labels.Labels, error)

// Target is what a Matcher looks at. The plugin fills it from the admission
// request and the object's metadata before any conversion.
type Target struct {
	// GVK of the object; only the group and kind are matched.
	GVK schema.GroupVersionKind
	// Namespace of the request (or of the object when the request has none).
	Namespace    string
	Name         string
	GenerateName string
	Labels       labels.Labels
	// NamespaceLabels looks up a namespace's labels; it is only called when
	// a namespaceSelector needs them.
	NamespaceLabels NamespaceLabelsFunc
}

func (t *Target) isNamespace() bool { return t.GVK.Group == "" && t.GVK.Kind == "Namespace" }

// Matcher is a compiled Match.
type Matcher struct {
	spec               Match
	generated          bool
	namespaces         []wildcard
	excludedNamespaces []wildcard
	name               *wildcard
	labelSelector      labels.Selector
	namespaceSelector  labels.Selector
}

var wildcardRE = regexp.MustCompile(`^\*?[-:a-z0-9]*\*?$`)

// Compile validates m and prepares its wildcards and selectors. The errors
// name fields below fldPath.
func Compile(m Match, fldPath *field.Path) (*Matcher, field.ErrorList) {
	var errs field.ErrorList
	out := &Matcher{spec: m}
	switch m.Source {
	case "", SourceAll, SourceOriginal:
	case SourceGenerated:
		out.generated = true
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("source"), m.Source, []string{SourceAll, SourceOriginal, SourceGenerated}))
	}
	out.namespaces, errs = compileWildcards(m.Namespaces, fldPath.Child("namespaces"), errs)
	out.excludedNamespaces, errs = compileWildcards(m.ExcludedNamespaces, fldPath.Child("excludedNamespaces"), errs)
	if m.Name != "" {
		if wildcardRE.MatchString(m.Name) {
			w := parseWildcard(m.Name)
			out.name = &w
		} else {
			errs = append(errs, invalidWildcard(fldPath.Child("name"), m.Name))
		}
	}
	out.labelSelector, errs = compileSelector(m.LabelSelector, fldPath.Child("labelSelector"), errs)
	out.namespaceSelector, errs = compileSelector(m.NamespaceSelector, fldPath.Child("namespaceSelector"), errs)
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

func compileWildcards(patterns []string, fldPath *field.Path, errs field.ErrorList) ([]wildcard, field.ErrorList) {
	var out []wildcard
	for i, p := range patterns {
		if !wildcardRE.MatchString(p) {
			errs = append(errs, invalidWildcard(fldPath.Index(i), p))
			continue
		}
		out = append(out, parseWildcard(p))
	}
	return out, errs
}

func invalidWildcard(fldPath *field.Path, pattern string) *field.Error {
	return field.Invalid(fldPath, pattern, "must match "+wildcardRE.String())
}

func compileSelector(sel *metav1.LabelSelector, fldPath *field.Path, errs field.ErrorList) (labels.Selector, field.ErrorList) {
	if sel == nil {
		return nil, errs
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, append(errs, field.Invalid(fldPath, sel.String(), err.Error()))
	}
	return s, errs
}

// NeedsNamespaceLabels reports whether Matches may call
// Target.NamespaceLabels.
func (m *Matcher) NeedsNamespaceLabels() bool { return m.namespaceSelector != nil }

// ReadsObjectLabels reports whether Matches may read Target.Labels: a
// labelSelector, or a namespaceSelector, which a Namespace's own labels
// answer. Everything else it reads comes from the request.
func (m *Matcher) ReadsObjectLabels() bool {
	return m.labelSelector != nil || m.namespaceSelector != nil
}

// Matches reports whether t satisfies every criterion. The criteria are
// tested in Gatekeeper's order (kinds, scope, namespaces,
// excludedNamespaces, labelSelector, namespaceSelector, name, source) and
// the first failure stops the test, so the namespace lookup happens only
// for objects that pass everything before it, and errors exactly when
// Gatekeeper's would.
func (m *Matcher) Matches(t *Target) (bool, error) {
	if !m.kindsMatch(t) || !m.scopeMatch(t) || !m.namespacesMatch(t) {
		return false, nil
	}
	if m.labelSelector != nil && !m.labelSelector.Matches(labelsOrEmpty(t.Labels)) {
		return false, nil
	}
	if m.namespaceSelector != nil {
		ok, err := m.namespaceSelectorMatch(t)
		if err != nil || !ok {
			return false, err
		}
	}
	if m.name != nil && !m.name.matches(t.Name) && !m.name.matchesGenerateName(t.GenerateName) {
		return false, nil
	}
	// Every object here is an original one; Generated objects come from
	// Gatekeeper's expansion, which does not exist in-process.
	return !m.generated, nil
}

// namespacesMatch applies namespaces and excludedNamespaces.
func (m *Matcher) namespacesMatch(t *Target) bool {
	if len(m.namespaces) == 0 && len(m.excludedNamespaces) == 0 {
		return true
	}
	ns, ok := namespaceOf(t)
	if !ok {
		return true
	}
	if len(m.namespaces) > 0 && !anyWildcard(m.namespaces, ns) {
		return false
	}
	return !anyWildcard(m.excludedNamespaces, ns)
}

func labelsOrEmpty(l labels.Labels) labels.Labels {
	if l == nil {
		return labels.Set(nil)
	}
	return l
}

func (m *Matcher) kindsMatch(t *Target) bool {
	if len(m.spec.Kinds) == 0 {
		return true
	}
	for _, k := range m.spec.Kinds {
		if listAllows(k.APIGroups, t.GVK.Group) && listAllows(k.Kinds, t.GVK.Kind) {
			return true
		}
	}
	return false
}

func listAllows(list []string, v string) bool {
	if len(list) == 0 {
		return true
	}
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}

func (m *Matcher) scopeMatch(t *Target) bool {
	hasNamespace := t.Namespace != ""
	switch m.spec.Scope {
	case ScopeCluster:
		return t.isNamespace() || !hasNamespace
	case ScopeNamespaced:
		return !t.isNamespace() && hasNamespace
	default:
		return true
	}
}

// namespaceOf is the name the namespace lists are compared with; false means
// a cluster-scoped object, which those lists never disqualify.
func namespaceOf(t *Target) (string, bool) {
	if t.isNamespace() {
		return t.Name, true
	}
	if t.Namespace == "" {
		return "", false
	}
	return t.Namespace, true
}

func (m *Matcher) namespaceSelectorMatch(t *Target) (bool, error) {
	if t.isNamespace() {
		return m.namespaceSelector.Matches(labelsOrEmpty(t.Labels)), nil
	}
	if t.Namespace == "" {
		return true, nil
	}
	if t.NamespaceLabels == nil {
		return false, fmt.Errorf("%w: %q (no namespace lister)", ErrNamespaceUnknown, t.Namespace)
	}
	l, err := t.NamespaceLabels(t.Namespace)
	if err != nil {
		return false, err
	}
	return m.namespaceSelector.Matches(labelsOrEmpty(l)), nil
}

func anyWildcard(patterns []wildcard, s string) bool {
	for _, p := range patterns {
		if p.matches(s) {
			return true
		}
	}
	return false
}

// wildcard is a Gatekeeper wildcard taken apart: a leading `*` makes it a
// suffix match, a trailing one a prefix match, both a contains match
// (a lone `*` is both, and matches everything).
type wildcard struct {
	text                string
	anyBefore, anyAfter bool
}

func parseWildcard(pattern string) wildcard {
	w := wildcard{text: pattern}
	if strings.HasPrefix(w.text, "*") {
		w.anyBefore, w.text = true, w.text[1:]
	}
	if strings.HasSuffix(w.text, "*") {
		w.anyAfter, w.text = true, strings.TrimSuffix(w.text, "*")
	} else if pattern == "*" {
		w.anyAfter = true
	}
	return w
}

func (w wildcard) matches(s string) bool {
	switch {
	case w.anyBefore && w.anyAfter:
		return strings.Contains(s, w.text)
	case w.anyBefore:
		return strings.HasSuffix(s, w.text)
	case w.anyAfter:
		return strings.HasPrefix(s, w.text)
	default:
		return w.text == s
	}
}

// matchesGenerateName tests a generateName, which is only the start of the
// final name: a suffix or exact pattern cannot be decided from it.
func (w wildcard) matchesGenerateName(generateName string) bool {
	if generateName == "" || !w.anyAfter {
		return false
	}
	return w.matches(generateName)
}
