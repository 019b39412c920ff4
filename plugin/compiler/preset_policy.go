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

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// presetPolicy is what the compiled presets make.
type presetPolicy struct {
	mutating        admissionregistrationv1.MutatingAdmissionPolicy
	mutatingBinding admissionregistrationv1.MutatingAdmissionPolicyBinding
	// validating is nil unless a compiled preset's conflictPolicy is
	// Reject.
	validating        *admissionregistrationv1.ValidatingAdmissionPolicy
	validatingBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// presetScope is where a list is merged: the pod (volumes), or each init
// container or container.
type presetScope struct {
	// list is the CEL list of the pod's items, given the list's field.
	list func(field string) string
	// has is the CEL test that the list's field is set.
	has func(field string) string
	// path is the CEL string of the JSON Patch path of the list's owner.
	path string
	// owner is the CEL string naming the owner in a conflict, as the
	// plugin does.
	owner string
	// containers is the pod's field of the containers the scope is one
	// of, "" for the pod.
	containers string
	// picker is the preset's selector of this kind of container; nil for
	// the pod.
	picker func(*settingsv1alpha1.PodPresetSpec) *settingsv1alpha1.ContainerSelector
}

var podScope = presetScope{
	list:  func(f string) string { return "object.spec.?" + f + ".orValue([])" },
	has:   func(f string) string { return "has(object.spec." + f + ")" },
	path:  `"/spec"`,
	owner: `"the pod"`,
}

// containerScope is the scope of the element c, at index i, of the pod's
// field containers (containers or initContainers), which kind names.
func containerScope(containers, kind string, picker func(*settingsv1alpha1.PodPresetSpec) *settingsv1alpha1.ContainerSelector) presetScope {
	return presetScope{
		list:       func(f string) string { return "c.?" + f + ".orValue([])" },
		has:        func(f string) string { return "has(c." + f + ")" },
		path:       `"/spec/` + containers + `/" + string(i)`,
		owner:      `(c.name == "" ? "` + kind + `" : "` + kind + ` \"" + c.name + "\"")`,
		containers: containers,
		picker:     picker,
	}
}

var (
	initContainerScope = containerScope("initContainers", "init container",
		func(s *settingsv1alpha1.PodPresetSpec) *settingsv1alpha1.ContainerSelector { return s.InitContainers })
	regularContainerScope = containerScope("containers", "container",
		func(s *settingsv1alpha1.PodPresetSpec) *settingsv1alpha1.ContainerSelector { return s.Containers })
)

// presetCEL builds the expressions of one set of compiled presets.
type presetCEL struct {
	presets  []*presetIn
	families []family // every preset's items, family by family, in preset order
}

func newPresetCEL(presets []*presetIn) *presetCEL {
	b := &presetCEL{presets: presets}
	for pi, p := range presets {
		for fi, f := range familiesOf(p, pi) {
			if pi == 0 {
				b.families = append(b.families, family{name: f.name, keyNames: f.keyNames})
			}
			b.families[fi].entries = append(b.families[fi].entries, f.entries...)
		}
	}
	return b
}

// scopes pairs each family with where it is merged.
func (b *presetCEL) scopes() []struct {
	scope    presetScope
	families []family
} {
	return []struct {
		scope    presetScope
		families []family
	}{
		{podScope, b.families[:1]},
		{initContainerScope, b.families[1:]},
		{regularContainerScope, b.families[1:]},
	}
}

func matchVar(pi int) string { return fmt.Sprintf("variables.preset%d", pi) }

// active is the CEL condition that entry e's preset applies in scope s
// (it selects the pod and picks the container c), "" when it never does.
func (b *presetCEL) active(e *entry, s presetScope) string {
	cond := matchVar(e.preset)
	if s.picker == nil {
		return cond
	}
	sel := s.picker(&b.presets[e.preset].spec)
	switch {
	case sel == nil, sel.Exclude && len(sel.Names) == 0:
		return cond
	case sel.Exclude:
		return "(" + cond + " && !(c.name in " + celStrings(sel.Names) + "))"
	case len(sel.Names) == 0:
		return ""
	default:
		return "(" + cond + " && c.name in " + celStrings(sel.Names) + ")"
	}
}

// podConflict is the CEL condition that the pod's list holds an item
// with e's key k that differs from e: the first such item, the one the
// plugin compares with.
func podConflict(e *entry, k int, list string) string {
	has := e.keyConds[k]("x")
	return fmt.Sprintf("(%[1]s.exists(x, %[2]s) && %[1]s.filter(x, %[2]s)[0] != %[3]s)", list, has, e.literal)
}

// conflict is the CEL condition, in scope s, that the presets conflict:
// an item differs from the pod's with the same key, or two active items
// that share a key differ. Either way the plugin leaves every preset out
// (or refuses the pod), so which item it met first does not matter.
func (b *presetCEL) conflict(s presetScope, families []family) string {
	var terms []string
	for _, f := range families {
		list := s.list(f.name)
		for t := range f.entries {
			e := &f.entries[t]
			active := b.active(e, s)
			if active == "" {
				continue
			}
			var withPod []string
			for k := range e.keys {
				withPod = append(withPod, podConflict(e, k, list))
			}
			terms = append(terms, "("+active+" && ("+celOr(withPod)+"))")
			for u := range f.entries[:t] {
				other := &f.entries[u]
				if otherActive := b.active(other, s); otherActive != "" && e.differs(other) {
					terms = append(terms, "("+active+" && "+otherActive+")")
				}
			}
		}
	}
	return celOr(terms)
}

// patches is the CEL list of JSON Patch operations, in scope s, that
// append every item the plugin appends when nothing conflicts: an active
// item whose key the pod's list lacks and no earlier active item has (with
// no conflict, an item with the same key is the same item). Items holding
// lists of Object literals crash kube-apiserver 1.36.0 to 1.36.3
// (kubernetes#142181): the values are plain maps.
func (b *presetCEL) patches(s presetScope, families []family) string {
	var ops []string
	for _, f := range families {
		list := s.list(f.name)
		var items []string
		for t := range f.entries {
			e := &f.entries[t]
			active := b.active(e, s)
			if active == "" {
				continue
			}
			var earlier []string
			for u := range f.entries[:t] {
				other := &f.entries[u]
				if otherActive := b.active(other, s); otherActive != "" && other.keys[0] == e.keys[0] {
					earlier = append(earlier, otherActive)
				}
			}
			cond := active + " && !" + list + ".exists(x, " + e.keyConds[0]("x") + ")"
			if len(earlier) > 0 {
				cond += " && !(" + celOr(earlier) + ")"
			}
			items = append(items, "(("+cond+") ? ["+e.literal+"] : [])")
		}
		if len(items) == 0 {
			continue
		}
		path := s.path + ` + "/` + f.name
		ops = append(ops, "["+celConcat(items)+"].map(xs, size(xs) == 0 ? [] : ("+s.has(f.name)+
			" ? [] : [JSONPatch{op: \"add\", path: "+path+`", value: []}]) + xs.map(x, JSONPatch{op: "add", path: `+path+`/-", value: x}))[0]`)
	}
	return celConcat(ops)
}

// rejections is the CEL list of the plugin's messages for the conflicts,
// in scope s, of the items of Reject presets: each conflicts only with the
// pod's item (rejectRefusals refuses a Reject preset whose keys another
// item shares), in the plugin's order: item by item, key by key.
func (b *presetCEL) rejections(s presetScope, families []family) string {
	var msgs []string
	for _, f := range families {
		list := s.list(f.name)
		for t := range f.entries {
			e := &f.entries[t]
			p := b.presets[e.preset]
			active := b.active(e, s)
			if !p.rejects() || active == "" {
				continue
			}
			for k := range e.keys {
				text := celString(fmt.Sprintf("%s: %s conflicts with the one in ", p, e.describe[k])) + " + " + s.owner
				msgs = append(msgs, "(("+active+" && "+podConflict(e, k, list)+") ? ["+text+"] : [])")
			}
		}
	}
	return celConcat(msgs)
}

// inContainers maps a CEL list expression over a container list of the
// pod, with the container as c and its index as i, and flattens the
// results.
func inContainers(field, expr string) string {
	if expr == "[]" {
		return "[]"
	}
	return "object.spec.?" + field + ".orValue([]).transformList(i, c, " + expr + ").flatten()"
}

// anyContainer is the CEL condition that cond holds of some container c.
func anyContainer(field, cond string) string {
	if cond == "false" {
		return "false"
	}
	return "object.spec.?" + field + ".orValue([]).exists(c, " + cond + ")"
}

// matchVariables are the variables a policy's expressions read: the pod's
// labels, the namespace's when a namespaceSelector reads them, and whether
// each preset selects the pod, as preset0, preset1...
func (b *presetCEL) matchVariables() []admissionregistrationv1.Variable {
	vars := []admissionregistrationv1.Variable{{Name: "labels", Expression: "object.metadata.?labels.orValue({})"}}
	readsNamespace := false
	for _, p := range b.presets {
		readsNamespace = readsNamespace || p.cluster() && (len(p.namespaceSelector.MatchLabels) > 0 || len(p.namespaceSelector.MatchExpressions) > 0)
	}
	if readsNamespace {
		vars = append(vars, admissionregistrationv1.Variable{Name: "namespaceLabels", Expression: "namespaceObject.metadata.?labels.orValue({})"})
	}
	for pi, p := range b.presets {
		// presetRefusal refused every preset whose selectors do not
		// convert: the errors cannot occur here.
		selects, _ := celSelector(&p.spec.Selector, "variables.labels")
		var where string
		if p.cluster() {
			where, _ = celSelector(p.namespaceSelector, "variables.namespaceLabels")
		} else {
			// The request's namespace, as the plugin reads it: a pod sent
			// without metadata.namespace is still in it.
			where = "request.namespace == " + celString(p.src.Namespace)
		}
		vars = append(vars, admissionregistrationv1.Variable{Name: strings.TrimPrefix(matchVar(pi), "variables."), Expression: where + " && " + selects})
	}
	return vars
}

// presetMatchConditions leave out what the plugin leaves alone: mirror
// pods and pods that exclude presets.
var presetMatchConditions = []admissionregistrationv1.MatchCondition{
	{Name: "not-a-mirror-pod", Expression: `!("kubernetes.io/config.mirror" in object.metadata.?annotations.orValue({}))`},
	{Name: "not-excluded", Expression: `object.metadata.?annotations[?"podpreset.admission.kubernetes.io/exclude"].orValue("") != "true"`},
}

// podCreates are the requests the plugin acts on: pod creates, no
// subresource.
func podCreates() *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		},
	}}}
}

// buildPresetPolicy makes the policies of the compiled presets, in the
// plugin's order.
func buildPresetPolicy(presets []*presetIn) presetPolicy {
	b := newPresetCEL(presets)
	vars := b.matchVariables()
	var matched, conflicts, patches []string
	for pi := range presets {
		matched = append(matched, matchVar(pi))
	}
	var annotations []string
	for pi, p := range presets {
		annotations = append(annotations, fmt.Sprintf(`(%s ? [JSONPatch{op: "add", path: %s, value: %s}] : [])`,
			matchVar(pi), celString("/metadata/annotations/"+jsonPointerToken(p.annotationKey())), celString(p.resourceVersion)))
	}
	for _, sf := range b.scopes() {
		conflict := b.conflict(sf.scope, sf.families)
		ops := b.patches(sf.scope, sf.families)
		if sf.scope.containers == "" {
			conflicts = append(conflicts, conflict)
			patches = append(patches, ops)
			continue
		}
		conflicts = append(conflicts, anyContainer(sf.scope.containers, conflict))
		patches = append(patches, inContainers(sf.scope.containers, ops))
	}
	vars = append(vars,
		admissionregistrationv1.Variable{Name: "matched", Expression: celOr(matched)},
		admissionregistrationv1.Variable{Name: "conflict", Expression: celOr(conflicts)})
	patches = append(patches, `(has(object.metadata.annotations) ? [] : [JSONPatch{op: "add", path: "/metadata/annotations", value: {}}])`)
	patches = append(patches, annotations...)

	meta := metav1.ObjectMeta{Name: presetPolicyName}
	out := presetPolicy{
		mutating: admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: meta,
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				MatchConstraints: podCreates(),
				MatchConditions:  presetMatchConditions,
				Variables:        vars,
				Mutations: []admissionregistrationv1.Mutation{{
					PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{
						Expression: "!variables.matched || variables.conflict ? [] : " + celConcat(patches),
					},
				}},
				// Applying the presets again to what they made changes
				// nothing, and a preset may select a label something after
				// this policy set.
				ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
				// The plugin never admits a pod without its presets.
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			},
		},
		mutatingBinding: admissionregistrationv1.MutatingAdmissionPolicyBinding{
			ObjectMeta: meta,
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: presetPolicyName},
		},
	}

	var rejections []string
	for _, sf := range b.scopes() {
		msgs := b.rejections(sf.scope, sf.families)
		if sf.scope.containers == "" {
			rejections = append(rejections, msgs)
			continue
		}
		rejections = append(rejections, inContainers(sf.scope.containers, msgs))
	}
	if slices.ContainsFunc(presets, (*presetIn).rejects) {
		// The match variables, without matched and conflict.
		out.validating, out.validatingBinding = rejectPolicy(slices.Clone(vars[:len(vars)-2]), celConcat(rejections))
	}
	return out
}

// rejectPolicy is the ValidatingAdmissionPolicy that refuses a pod whose
// conflicts involve a Reject preset, with the plugin's message. It runs
// after every mutation: the mutating policy left such a pod as it came,
// so it finds the conflicts the mutating policy found.
func rejectPolicy(vars []admissionregistrationv1.Variable, rejections string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	vars = append(vars, admissionregistrationv1.Variable{Name: "rejections", Expression: rejections})
	const podName = `"Pod " + request.namespace + "/" + (object.metadata.?name.orValue("") == "" && object.metadata.?generateName.orValue("") != "" ? object.metadata.generateName + "*" : object.metadata.?name.orValue(""))`
	meta := metav1.ObjectMeta{Name: presetPolicyName}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: meta,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: podCreates(),
				MatchConditions:  presetMatchConditions,
				Variables:        vars,
				Validations: []admissionregistrationv1.Validation{{
					Expression: "size(variables.rejections) == 0",
					// The plugin's errors are aggregated: one alone, or
					// the distinct ones in brackets.
					MessageExpression: podName + ` + " refused by pod presets whose conflictPolicy is Reject: " + ` +
						`(size(variables.rejections.distinct()) == 1 ? variables.rejections[0] : "[" + variables.rejections.distinct().join(", ") + "]")`,
					Reason: ptr.To(metav1.StatusReasonForbidden),
				}},
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			},
		}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: meta,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        presetPolicyName,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		}
}
