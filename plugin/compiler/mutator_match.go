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

package compiler

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// A mutator's applyTo and spec.match become one CEL condition on the
// request, read as the plugin reads them (admission.go's target,
// match/match.go): the request's kind and operation, the request's
// namespace (none for a Namespace, which is matched by its own name and
// labels), the object's name or, for a prefix wildcard, its generateName.
// Each mutation of the policy is guarded by its mutator's condition, since
// the policy's own matchConditions hold for all of them.

// The policy's variables: what the matchers read of the request, named
// once for every mutation. kube-apiserver evaluates a variable when an
// expression first reads it, on the object that mutation is given.
var matchVariables = []struct{ name, expression string }{
	// isNamespace: a Namespace object, which has no namespace of its own.
	{"isNamespace", `request.kind.group == "" && request.kind.kind == "Namespace"`},
	// targetNamespace is the request's namespace, or the object's when the
	// request has none. The request's fields left empty are absent
	// (omitempty), hence has().
	{"targetNamespace", `variables.isNamespace ? "" : ((has(request.namespace) && request.namespace != "") ? request.namespace : ` +
		`(("namespace" in object.metadata && object.metadata.namespace != null) ? object.metadata.namespace : ""))`},
	// objectName is the object's name, the request's when it has none.
	{"objectName", `("name" in object.metadata && object.metadata.name != "") ? object.metadata.name : (has(request.name) ? request.name : "")`},
	// generateName is the object's metadata.generateName, "" for none.
	{"generateName", `("generateName" in object.metadata && object.metadata.generateName != null) ? object.metadata.generateName : ""`},
	// objectLabels are the object's labels, empty for none.
	{"objectLabels", `("labels" in object.metadata && object.metadata.labels != null) ? object.metadata.labels : {}`},
	// namespaceLabels are the labels of the object's namespace; read only
	// for an object in a namespace. namespaceObject is typed: its labels
	// are absent or a map, never null.
	{"namespaceLabels", `has(namespaceObject.metadata.labels) ? namespaceObject.metadata.labels : {}`},
}

const (
	isNamespace     = "variables.isNamespace"
	targetNamespace = "variables.targetNamespace"
	objectName      = "variables.objectName"
	generateName    = "variables.generateName"
	objectLabels    = "variables.objectLabels"
	namespaceLabels = "variables.namespaceLabels"
)

// appliesTo is the condition of applyTo: the request's group, version and
// kind, and its operation. An AssignMetadata, with no applyTo, applies to
// every kind on CREATE and UPDATE.
func appliesTo(bindings []mutation.Binding) string {
	if bindings == nil {
		return `request.operation in ["CREATE", "UPDATE"]`
	}
	var gvks []schema.GroupVersionKind
	ops := map[schema.GroupVersionKind][]string{}
	for _, b := range bindings {
		if _, ok := ops[b.GVK]; !ok {
			gvks = append(gvks, b.GVK)
		}
		ops[b.GVK] = append(ops[b.GVK], b.Operation)
	}
	alts := make([]string, len(gvks))
	for i, gvk := range gvks {
		alts[i] = fmt.Sprintf("(request.kind.group == %s && request.kind.version == %s && request.kind.kind == %s && request.operation in %s)",
			celString(gvk.Group), celString(gvk.Version), celString(gvk.Kind), celStrings(ops[gvk]))
	}
	return or(alts)
}

// matches is the condition of spec.match, in the plugin's order of
// criteria. match.Compile has validated the selectors, so an error here
// is one celSelector has no CEL form for.
func matches(m *match.Matcher) (string, field.ErrorList) {
	spec := m.Spec()
	var all []string
	if len(spec.Kinds) > 0 {
		alts := make([]string, len(spec.Kinds))
		for i, k := range spec.Kinds {
			alts[i] = and([]string{allows(k.APIGroups, "request.kind.group"), allows(k.Kinds, "request.kind.kind")})
		}
		all = append(all, or(alts))
	}
	switch spec.Scope {
	case match.ScopeCluster:
		all = append(all, fmt.Sprintf(`(%s || %s == "")`, isNamespace, targetNamespace))
	case match.ScopeNamespaced:
		all = append(all, fmt.Sprintf(`(!%s && %s != "")`, isNamespace, targetNamespace))
	}
	if include, exclude := m.NamespacePatterns(); len(include)+len(exclude) > 0 {
		// A Namespace is matched by its own name; a cluster-scoped
		// object by none of the lists.
		ns := fmt.Sprintf("(%s ? %s : %s)", isNamespace, objectName, targetNamespace)
		var test []string
		if len(include) > 0 {
			test = append(test, anyPattern(include, ns))
		}
		if len(exclude) > 0 {
			test = append(test, "!("+anyPattern(exclude, ns)+")")
		}
		all = append(all, fmt.Sprintf(`((!%s && %s == "") || %s)`, isNamespace, targetNamespace, and(test)))
	}
	if spec.LabelSelector != nil {
		sel, err := celSelector(spec.LabelSelector, objectLabels)
		if err != nil {
			return "", field.ErrorList{field.Invalid(field.NewPath("spec", "match", "labelSelector"), spec.LabelSelector, err.Error())}
		}
		all = append(all, sel)
	}
	if spec.NamespaceSelector != nil {
		own, err := celSelector(spec.NamespaceSelector, objectLabels)
		if err != nil {
			return "", field.ErrorList{field.Invalid(field.NewPath("spec", "match", "namespaceSelector"), spec.NamespaceSelector, err.Error())}
		}
		its, _ := celSelector(spec.NamespaceSelector, namespaceLabels)
		all = append(all, fmt.Sprintf(`(%s ? %s : (%s == "" || %s))`, isNamespace, own, targetNamespace, its))
	}
	if p, ok := m.NamePattern(); ok {
		test := pattern(p, objectName)
		if p.AnyAfter {
			// generateName is only the start of the name: a prefix or
			// contains wildcard can be decided from it.
			test = fmt.Sprintf(`(%s || (%s != "" && %s))`, test, generateName, pattern(p, generateName))
		}
		all = append(all, test)
	}
	return and(all), nil
}

// allows is the test of a list where empty or `*` allows anything.
func allows(list []string, v string) string {
	if len(list) == 0 || slices.Contains(list, "*") {
		return "true"
	}
	return fmt.Sprintf("%s in %s", v, celStrings(list))
}

func anyPattern(ps []match.Pattern, v string) string {
	alts := make([]string, len(ps))
	for i, p := range ps {
		alts[i] = pattern(p, v)
	}
	return or(alts)
}

// pattern is the test of a Gatekeeper wildcard on the CEL string v.
func pattern(p match.Pattern, v string) string {
	t := celString(p.Text)
	switch {
	case p.AnyBefore && p.AnyAfter:
		return fmt.Sprintf("%s.contains(%s)", v, t)
	case p.AnyBefore:
		return fmt.Sprintf("%s.endsWith(%s)", v, t)
	case p.AnyAfter:
		return fmt.Sprintf("%s.startsWith(%s)", v, t)
	}
	return fmt.Sprintf("(%s == %s)", v, t)
}

func and(terms []string) string { return join(terms, " && ", "true") }
func or(terms []string) string  { return join(terms, " || ", "false") }

func join(terms []string, op, empty string) string {
	var kept []string
	for _, t := range terms {
		if t != empty {
			kept = append(kept, t)
		}
	}
	switch len(kept) {
	case 0:
		return empty
	case 1:
		return kept[0]
	}
	return "(" + strings.Join(kept, op) + ")"
}
