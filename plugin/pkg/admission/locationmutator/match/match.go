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
	Source string `json:"source,omitempty"`
	// Kinds lists groups and kinds; an empty list matches every kind.
	Kinds []Kinds `json:"kinds,omitempty"`
	// Scope is Cluster or Namespaced; any other value matches both, as in
	// Gatekeeper.
	Scope string `json:"scope,omitempty"`
	// Namespaces are wildcards (`kube-*`, `*-system`, `*kube*`) one of which
	// the object's namespace must match.
	Namespaces []string `json:"namespaces,omitempty"`
	// ExcludedNamespaces are wildcards none of which may match.
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// LabelSelector is tested against the object's own labels.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// NamespaceSelector is tested against the labels of the object's
	// namespace (a Namespace's own labels for a Namespace).
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// Name is a wildcard on metadata.name (and on generateName for a prefix
	// or contains wildcard).
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
	spec              Match
	never             bool
	labelSelector     labels.Selector
	namespaceSelector labels.Selector
}

var wildcardRE = regexp.MustCompile(`^\*?[-:a-z0-9]*\*?$`)

// Compile validates m and prepares its selectors. The errors name fields
// below fldPath.
func Compile(m Match, fldPath *field.Path) (*Matcher, field.ErrorList) {
	var errs field.ErrorList
	out := &Matcher{spec: m}
	switch m.Source {
	case "", SourceAll, SourceOriginal:
	case SourceGenerated:
		out.never = true
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("source"), m.Source, []string{SourceAll, SourceOriginal, SourceGenerated}))
	}
	for i, w := range m.Namespaces {
		if !wildcardRE.MatchString(w) {
			errs = append(errs, field.Invalid(fldPath.Child("namespaces").Index(i), w, "must match "+wildcardRE.String()))
		}
	}
	for i, w := range m.ExcludedNamespaces {
		if !wildcardRE.MatchString(w) {
			errs = append(errs, field.Invalid(fldPath.Child("excludedNamespaces").Index(i), w, "must match "+wildcardRE.String()))
		}
	}
	if m.Name != "" && !wildcardRE.MatchString(m.Name) {
		errs = append(errs, field.Invalid(fldPath.Child("name"), m.Name, "must match "+wildcardRE.String()))
	}
	if m.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(m.LabelSelector)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("labelSelector"), m.LabelSelector.String(), err.Error()))
		}
		out.labelSelector = s
	}
	if m.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(m.NamespaceSelector)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("namespaceSelector"), m.NamespaceSelector.String(), err.Error()))
		}
		out.namespaceSelector = s
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// NeedsNamespaceLabels reports whether Matches may call
// Target.NamespaceLabels.
func (m *Matcher) NeedsNamespaceLabels() bool { return m.namespaceSelector != nil }

// Kinds returns the kinds criterion, so that callers can index on it.
func (m *Matcher) Kinds() []Kinds { return m.spec.Kinds }

// Matches reports whether t satisfies every criterion. The criteria are
// tested in Gatekeeper's order and the first failure stops the test, so the
// namespace lookup happens only for objects that pass everything before it.
func (m *Matcher) Matches(t *Target) (bool, error) {
	if m.never {
		return false, nil
	}
	if !m.kindsMatch(t) || !m.scopeMatch(t) {
		return false, nil
	}
	if len(m.spec.Namespaces) > 0 || len(m.spec.ExcludedNamespaces) > 0 {
		if ns, ok := namespaceOf(t); ok {
			if len(m.spec.Namespaces) > 0 && !anyWildcard(m.spec.Namespaces, ns) {
				return false, nil
			}
			if anyWildcard(m.spec.ExcludedNamespaces, ns) {
				return false, nil
			}
		}
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
	if m.spec.Name != "" && !wildcardMatches(m.spec.Name, t.Name) && !wildcardMatchesGenerateName(m.spec.Name, t.GenerateName) {
		return false, nil
	}
	return true, nil
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

func anyWildcard(patterns []string, s string) bool {
	for _, p := range patterns {
		if wildcardMatches(p, s) {
			return true
		}
	}
	return false
}

// wildcardMatches applies a Gatekeeper wildcard: a leading `*` makes it a
// suffix match, a trailing one a prefix match, both a contains match.
func wildcardMatches(pattern, s string) bool {
	pre := strings.HasPrefix(pattern, "*")
	suf := len(pattern) > 1 && strings.HasSuffix(pattern, "*") || pattern == "*"
	switch {
	case pre && suf:
		return strings.Contains(s, strings.Trim(pattern, "*"))
	case pre:
		return strings.HasSuffix(s, pattern[1:])
	case suf:
		return strings.HasPrefix(s, pattern[:len(pattern)-1])
	default:
		return pattern == s
	}
}

// wildcardMatchesGenerateName tests a generateName, which is only the start
// of the final name: a suffix or exact pattern cannot be decided from it.
func wildcardMatchesGenerateName(pattern, generateName string) bool {
	if generateName == "" {
		return false
	}
	pre := strings.HasPrefix(pattern, "*")
	suf := len(pattern) > 1 && strings.HasSuffix(pattern, "*") || pattern == "*"
	switch {
	case pre && suf:
		return strings.Contains(generateName, strings.Trim(pattern, "*"))
	case suf:
		return strings.HasPrefix(generateName, pattern[:len(pattern)-1])
	default:
		return false
	}
}
