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
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// presetPolicy is what the compiled presets make.
type presetPolicy struct {
	// mutating is nil, and so are the validating and warning policies,
	// when no compiled preset is enforced.
	mutating        *admissionregistrationv1.MutatingAdmissionPolicy
	mutatingBinding *admissionregistrationv1.MutatingAdmissionPolicyBinding
	// validating is nil unless a compiled preset's conflictPolicy is
	// Reject.
	validating        *admissionregistrationv1.ValidatingAdmissionPolicy
	validatingBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// warning warns of a conflict that leaves the presets out.
	warning        *admissionregistrationv1.ValidatingAdmissionPolicy
	warningBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// trials reports what the presets in Warn or Audit mode would do; nil
	// when no compiled preset is in either.
	trials        *admissionregistrationv1.ValidatingAdmissionPolicy
	trialsBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
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
	presets []*presetIn
	// vars are the CEL variables, preset by preset, that hold whether it
	// selects the pod.
	vars     []string
	families []family // every preset's items, family by family, in preset order
	// tooLong holds the items whose condition grew past maxCondition.
	tooLong map[*presetIn][]*field.Path
}

// maxCondition bounds the condition of one item. Whether a PodWins mount
// is appended depends on whether each earlier PodWins mount sharing its
// name or path was, so chains of them nest; a policy is stored in etcd
// and evaluated on every pod create, and a preset whose chain grows past
// this is left to the plugin.
const maxCondition = 16 << 10

func newPresetCEL(presets []*presetIn, vars []string) *presetCEL {
	b := &presetCEL{presets: presets, vars: vars, tooLong: map[*presetIn][]*field.Path{}}
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

// matchVarName names the variable that holds whether the compiled preset
// pi selects the pod.
func matchVarName(pi int) string { return fmt.Sprintf("preset%d", pi) }

// active is the CEL condition that entry e's preset applies in scope s
// (it selects the pod and picks the container c), "" when it never does.
func (b *presetCEL) active(e *entry, s presetScope) string {
	cond := b.vars[e.preset]
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

// lacks is the CEL condition that no item x of list meets cond. It is
// written as a filter that keeps nothing, not as !exists: kube-apiserver's
// CEL charges an exists more than twice what it charges such a filter per
// item (the exists tests its result at every step), and the presets'
// policy makes these walks for every item of every container, which makes
// most of its cost against the 1,000,000 each expression may spend.
func lacks(list, cond string) string {
	return fmt.Sprintf("size(%s.filter(x, %s)) == 0", list, cond)
}

// podConflict is the CEL condition that the pod's list holds an item
// with e's key k that differs from e: the first such item, the one the
// plugin compares with. One filter, not an exists then a filter, for
// the reason lacks gives.
func podConflict(e *entry, k int, list string) string {
	return bind("f", fmt.Sprintf("%s.filter(x, %s)", list, e.keyConds[k]("x")), fmt.Sprintf("(size(f) > 0 && f[0] != %s)", e.literal))
}

// conflict is the CEL condition, in scope s, that the presets conflict:
// an item differs from the pod's with the same key (unless a PresetWins
// item claims the key), or two active items that share a key differ.
// Either way the plugin leaves every preset out (or refuses the pod), so
// which item it met first does not matter.
func (b *presetCEL) conflict(s presetScope, families []family) string {
	var terms []string
	for _, f := range families {
		list := s.list(f.name)
		for t := range f.entries {
			e := &f.entries[t]
			active := b.active(e, s)
			if active == "" || b.yields(e) {
				continue
			}
			if !b.enforces(e) {
				// An item whose key a PresetWins item claims meets that
				// item, not the pod's: the pair below.
				var withPod []string
				for k := range e.keys {
					withPod = append(withPod, podConflict(e, k, list))
				}
				cond := "(" + active + " && (" + or(withPod) + "))"
				if claimed := b.claimed(s, f, e); claimed != "false" {
					cond = "(" + cond + " && !(" + claimed + "))"
				}
				terms = append(terms, cond)
			}
			for u := range f.entries[:t] {
				other := &f.entries[u]
				if otherActive := b.active(other, s); otherActive != "" && !b.yields(other) && e.differs(other) {
					terms = append(terms, "("+active+" && "+otherActive+")")
				}
			}
		}
	}
	return or(terms)
}

// patches is the CEL list of JSON Patch operations, in scope s, that
// put PresetWins items in place of the pod's (see replacements) and
// append every item the plugin appends when nothing conflicts, in preset
// order, then item order (where the plugin puts them back after merging
// PresetWins items first and PodWins items last). Items holding lists of Object literals crash
// kube-apiserver 1.36.0 to 1.36.3 (kubernetes#142181): the values are
// plain maps.
func (b *presetCEL) patches(s presetScope, families []family) string {
	var ops []string
	for _, f := range families {
		appended := b.appended(s, f)
		var items []string
		for t := range f.entries {
			if cond := appended(t); cond != "" {
				items = append(items, "(("+cond+") ? ["+f.entries[t].literal+"] : [])")
			}
		}
		if replacements := b.replacements(s, f); replacements != "[]" {
			ops = append(ops, replacements)
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

// appended returns, for each entry of f, the CEL condition in scope s
// that the plugin appends it when nothing conflicts ("" when it never
// does):
//
//   - an item of a preset that does not yield, when it is active, the pod's
//     list lacks its key and no earlier such item has it (with no conflict,
//     an item with the same key is the same item);
//   - an item of a PodWins preset, merged after all of those, when it is
//     active and no item has any key of its: not the pod's, not an active
//     item of a preset that does not yield, not an earlier PodWins item
//     that was appended.
func (b *presetCEL) appended(s presetScope, f family) func(t int) string {
	list := s.list(f.name)
	memo := map[int]string{}
	var cond func(t int) string
	cond = func(t int) string {
		if c, ok := memo[t]; ok {
			return c
		}
		e := &f.entries[t]
		active := b.active(e, s)
		if active == "" {
			memo[t] = ""
			return ""
		}
		terms := []string{active}
		switch {
		case b.enforces(e):
			// A claim the pod has no item for is appended.
			terms = []string{b.claim(s, f, t), lacks(list, e.keyConds[0]("x"))}
		case !b.yields(e):
			terms = append(terms, lacks(list, e.keyConds[0]("x")))
			var earlier []string
			for u := range f.entries[:t] {
				other := &f.entries[u]
				if otherActive := b.active(other, s); otherActive != "" && !b.yields(other) && !b.enforces(other) && other.keys[0] == e.keys[0] {
					earlier = append(earlier, otherActive)
				}
			}
			if claimed := b.claimed(s, f, e); claimed != "false" {
				earlier = append(earlier, claimed)
			}
			if len(earlier) > 0 {
				terms = append(terms, "!("+or(earlier)+")")
			}
		default:
			for k := range e.keys {
				terms = append(terms, lacks(list, e.keyConds[k]("x")))
			}
			var found []string
			for u := range f.entries {
				other := &f.entries[u]
				if u == t || e.sharedKey(other) < 0 {
					continue
				}
				switch {
				case !b.yields(other):
					if otherActive := b.active(other, s); otherActive != "" {
						found = append(found, otherActive)
					}
				case u < t && len(e.keys) == 1:
					// With one key, an earlier active PodWins item with
					// it was appended, or gave way to an item with the
					// same key: either way this one gives way.
					if otherActive := b.active(other, s); otherActive != "" {
						found = append(found, otherActive)
					}
				case u < t:
					// A mount shares its name or its path: whether the
					// earlier one was appended is its own condition.
					if otherAppended := cond(u); otherAppended != "" {
						found = append(found, "("+otherAppended+")")
					}
				}
			}
			if len(found) > 0 {
				terms = append(terms, "!("+or(found)+")")
			}
		}
		memo[t] = strings.Join(terms, " && ")
		if len(memo[t]) > maxCondition {
			b.tooLong[b.presets[e.preset]] = append(b.tooLong[b.presets[e.preset]], e.path)
			memo[t] = "false"
		}
		return memo[t]
	}
	return cond
}

func (b *presetCEL) yields(e *entry) bool { return b.presets[e.preset].yields() }

func (b *presetCEL) enforces(e *entry) bool { return b.presets[e.preset].enforces() }

// claimed is the CEL condition, in scope s, that an active PresetWins item
// of f has e's key (PresetWins presets have single-key items only: see
// presetRefusal). The plugin places such items first, so every other item
// with the key meets the first of them.
func (b *presetCEL) claimed(s presetScope, f family, e *entry) string {
	var terms []string
	for u := range f.entries {
		other := &f.entries[u]
		if !b.enforces(other) || other.keys[0] != e.keys[0] {
			continue
		}
		if active := b.active(other, s); active != "" {
			terms = append(terms, active)
		}
	}
	return or(terms)
}

// claim is the CEL condition, in scope s, that PresetWins entry t of f
// claims its key: it is the first active PresetWins item with it.
func (b *presetCEL) claim(s presetScope, f family, t int) string {
	e := &f.entries[t]
	active := b.active(e, s)
	if active == "" {
		return ""
	}
	var earlier []string
	for u := range f.entries[:t] {
		other := &f.entries[u]
		if b.enforces(other) && other.keys[0] == e.keys[0] {
			if otherActive := b.active(other, s); otherActive != "" {
				earlier = append(earlier, otherActive)
			}
		}
	}
	if len(earlier) == 0 {
		return active
	}
	return active + " && !(" + or(earlier) + ")"
}

// firstClaim is a CEL chain, in scope s, that gives then(c) for the first
// active PresetWins entry c of f with e's key, and otherwise.
func (b *presetCEL) firstClaim(s presetScope, f family, e *entry, then func(c *entry) string, otherwise string) string {
	chain := otherwise
	for u := len(f.entries) - 1; u >= 0; u-- {
		other := &f.entries[u]
		if !b.enforces(other) || other == e || other.keys[0] != e.keys[0] {
			continue
		}
		if active := b.active(other, s); active != "" {
			chain = "((" + active + ") ? " + then(other) + " : " + chain + ")"
		}
	}
	return chain
}

// replacements is the CEL list of JSON Patch operations, in scope s, that
// put claims in place in the pod's list of f: the first pod item with a
// claimed key becomes the claim, and each later one that differs from it
// goes, last first so that the indexes hold.
func (b *presetCEL) replacements(s presetScope, f family) string {
	list := s.list(f.name)
	path := s.path + ` + "/` + f.name + `/"`
	var replaces, drops []string
	for t := range f.entries {
		e := &f.entries[t]
		if !b.enforces(e) {
			continue
		}
		claim := b.claim(s, f, t)
		if claim == "" {
			continue
		}
		has := e.keyConds[0]("y")
		first := list + ".transformList(j, y, " + has + " ? [j] : []).flatten()"
		replaces = append(replaces, "(("+claim+") && "+list+".exists(y, "+has+") ? [JSONPatch{op: \"replace\", path: "+path+" + string("+first+"[0]), value: "+e.literal+"}] : [])")
		drops = append(drops, "(("+claim+") && "+has+" && j != "+first+"[0] && y != "+e.literal+")")
	}
	if len(replaces) == 0 {
		return "[]"
	}
	return celConcat(replaces) + " + " + list + ".transformList(j, y, (" + or(drops) + ") ? [j] : []).flatten().reverse().map(j, JSONPatch{op: \"remove\", path: " + path + " + string(j)})"
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

// conflicts is the CEL list of the plugin's messages for every conflict in
// scope s, in its order: item by item of the presets that do not yield
// (PodWins items never conflict), key by key. An item is compared with
// the first item holding its key: the pod's, or else the first item of an
// earlier preset that was appended, which names the preset.
func (b *presetCEL) conflicts(s presetScope, families []family) string {
	var msgs []string
	for _, f := range families {
		list := s.list(f.name)
		appended := b.firstAppended(s, f)
		// PresetWins items are placed first: their conflicts with one
		// another come first.
		for t := range f.entries {
			e := &f.entries[t]
			active := b.active(e, s)
			if active == "" || !b.enforces(e) {
				continue
			}
			prefix := fmt.Sprintf("%s: %s conflicts with the one from ", b.presets[e.preset], e.describe[0])
			chain := "[]"
			for u := t - 1; u >= 0; u-- {
				other := &f.entries[u]
				otherActive := b.active(other, s)
				if !b.enforces(other) || other.keys[0] != e.keys[0] || otherActive == "" {
					continue
				}
				then := "[]"
				if !apiequality.Semantic.DeepEqual(e.item, other.item) {
					then = "[" + celString(prefix+b.presets[other.preset].String()) + "]"
				}
				chain = "((" + otherActive + ") ? " + then + " : " + chain + ")"
			}
			if chain != "[]" {
				msgs = append(msgs, "("+active+" ? "+chain+" : [])")
			}
		}
		for t := range f.entries {
			e := &f.entries[t]
			p := b.presets[e.preset]
			active := b.active(e, s)
			if active == "" || p.yields() || p.enforces() {
				continue
			}
			for k := range e.keys {
				has := e.keyConds[k]("x")
				prefix := fmt.Sprintf("%s: %s conflicts with the one ", p, e.describe[k])
				// Earlier items with the key, the first appended one
				// first: a chain of conditions.
				chain := "[]"
				for u := t - 1; u >= 0; u-- {
					other := &f.entries[u]
					cond := appended(u)
					if other.keys[k] != e.keys[k] || cond == "" || b.yields(other) {
						continue
					}
					then := "[]"
					if !apiequality.Semantic.DeepEqual(e.item, other.item) {
						then = "[" + celString(prefix+"from "+b.presets[other.preset].String()) + "]"
					}
					chain = "((" + cond + ") ? " + then + " : " + chain + ")"
				}
				withPod := fmt.Sprintf("(%[1]s.filter(x, %[2]s)[0] != %[3]s ? [%[4]s + %[5]s] : [])", list, has, e.literal, celString(prefix+"in "), s.owner)
				unclaimed := "(" + list + ".exists(x, " + has + ") ? " + withPod + " : " + chain + ")"
				// The first claim of the key is the item this one meets.
				met := b.firstClaim(s, f, e, func(c *entry) string {
					if apiequality.Semantic.DeepEqual(e.item, c.item) {
						return "[]"
					}
					return "[" + celString(prefix+"from "+b.presets[c.preset].String()) + "]"
				}, unclaimed)
				msgs = append(msgs, "("+active+" ? "+met+" : [])")
			}
		}
	}
	return celConcat(msgs)
}

// firstAppended returns, for each entry of f of a preset that does not
// yield, the CEL condition in scope s that the plugin appends it, conflicts
// or not: it is active and no item holds a key of its when it is merged,
// not the pod's, not an earlier one appended.
func (b *presetCEL) firstAppended(s presetScope, f family) func(t int) string {
	list := s.list(f.name)
	memo := map[int]string{}
	var cond func(t int) string
	cond = func(t int) string {
		if c, ok := memo[t]; ok {
			return c
		}
		e := &f.entries[t]
		active := b.active(e, s)
		if active == "" || b.yields(e) {
			memo[t] = ""
			return ""
		}
		terms := []string{active}
		for k := range e.keys {
			terms = append(terms, lacks(list, e.keyConds[k]("x")))
		}
		var found []string
		for u := range f.entries[:t] {
			other := &f.entries[u]
			if b.yields(other) || e.sharedKey(other) < 0 {
				continue
			}
			if len(e.keys) == 1 {
				// With one key, the first active item with it is
				// appended: any earlier active one means this is not.
				if otherActive := b.active(other, s); otherActive != "" {
					found = append(found, otherActive)
				}
			} else if otherAppended := cond(u); otherAppended != "" {
				found = append(found, "("+otherAppended+")")
			}
		}
		if len(found) > 0 {
			terms = append(terms, "!("+or(found)+")")
		}
		memo[t] = strings.Join(terms, " && ")
		if len(memo[t]) > maxCondition {
			b.tooLong[b.presets[e.preset]] = append(b.tooLong[b.presets[e.preset]], e.path)
			memo[t] = "false"
		}
		return memo[t]
	}
	return cond
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

// presetMatchVariables are the variables a policy's expressions read: the pod's
// labels, the namespace's when a namespaceSelector reads them, and whether
// each preset selects the pod, named names.
func presetMatchVariables(presets []*presetIn, names []string) []admissionregistrationv1.Variable {
	vars := []admissionregistrationv1.Variable{{Name: "labels", Expression: "object.metadata.?labels.orValue({})"}}
	readsNamespace := false
	for _, p := range presets {
		readsNamespace = readsNamespace || p.cluster() && (len(p.namespaceSelector.MatchLabels) > 0 || len(p.namespaceSelector.MatchExpressions) > 0)
	}
	if readsNamespace {
		vars = append(vars, admissionregistrationv1.Variable{Name: "namespaceLabels", Expression: "namespaceObject.metadata.?labels.orValue({})"})
	}
	for pi, p := range presets {
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
		vars = append(vars, admissionregistrationv1.Variable{Name: names[pi], Expression: where + " && " + selects})
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
// plugin's order, or returns the presets with items whose condition is
// too long.
func buildPresetPolicy(compiled []*presetIn) (presetPolicy, map[*presetIn][]*field.Path) {
	var out presetPolicy
	tooLong := map[*presetIn][]*field.Path{}
	names := make([]string, len(compiled))
	for pi := range compiled {
		names[pi] = matchVarName(pi)
	}
	var enforced []*presetIn
	var enforcedNames []string
	for pi, p := range compiled {
		if p.enforced() {
			enforced, enforcedNames = append(enforced, p), append(enforcedNames, names[pi])
		}
	}
	var b *presetCEL
	if len(enforced) > 0 {
		out, b = buildEnforced(enforced, enforcedNames)
		maps.Copy(tooLong, b.tooLong)
	}
	if len(enforced) < len(compiled) {
		out.trials, out.trialsBinding = buildTrials(compiled, names, b, tooLong)
	}
	if len(tooLong) > 0 {
		return presetPolicy{}, tooLong
	}
	return out, nil
}

// buildEnforced makes the policies that apply the enforced presets, and
// the CEL builder it made them with: their conflicts on a pod are what the
// presets in Warn or Audit mode are tried against.
func buildEnforced(presets []*presetIn, names []string) (presetPolicy, *presetCEL) {
	vars := presetMatchVariables(presets, names)
	b := newPresetCEL(presets, variablesOf(names))
	var matched, conflicts, patches []string
	for pi := range presets {
		matched = append(matched, b.vars[pi])
	}
	var annotations []string
	for pi, p := range presets {
		annotations = append(annotations, fmt.Sprintf(`(%s ? [JSONPatch{op: "add", path: %s, value: %s}] : [])`,
			b.vars[pi], celString("/metadata/annotations/"+jsonPointerToken(p.annotationKey())), celString(p.resourceVersion)))
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
		admissionregistrationv1.Variable{Name: "matched", Expression: or(matched)},
		admissionregistrationv1.Variable{Name: "conflict", Expression: or(conflicts)})
	patches = append(patches, `(has(object.metadata.annotations) ? [] : [JSONPatch{op: "add", path: "/metadata/annotations", value: {}}])`)
	patches = append(patches, annotations...)

	meta := metav1.ObjectMeta{Name: presetPolicyName}
	out := presetPolicy{
		mutating: &admissionregistrationv1.MutatingAdmissionPolicy{
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
		mutatingBinding: &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			ObjectMeta: meta,
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: presetPolicyName},
		},
	}

	rejections, conflictMsgs := b.messages()
	var presetNames []string
	for pi, p := range presets {
		presetNames = append(presetNames, "("+b.vars[pi]+" ? ["+celString(p.String())+"] : [])")
	}
	// The match variables, without matched and conflict.
	matchVars := vars[:len(vars)-2]
	refuses := slices.ContainsFunc(presets, (*presetIn).rejects)
	if refuses {
		out.validating, out.validatingBinding = presetValidation(presetPolicyName,
			append(slices.Clone(matchVars), admissionregistrationv1.Variable{Name: "rejections", Expression: rejections}),
			admissionregistrationv1.Validation{
				Expression:        "size(variables.rejections) == 0",
				MessageExpression: podNameCEL + ` + " refused by pod presets whose conflictPolicy is Reject: " + ` + aggregateCEL("variables.rejections"),
				Reason:            ptr.To(metav1.StatusReasonForbidden),
			}, admissionregistrationv1.Deny)
	}
	// A conflict that refuses nothing leaves the presets out, and the
	// plugin tells the pod's creator why in a warning.
	warnVars := append(slices.Clone(matchVars),
		admissionregistrationv1.Variable{Name: "conflicts", Expression: conflictMsgs},
		admissionregistrationv1.Variable{Name: "presets", Expression: celConcat(presetNames)})
	warnWhen := "size(variables.conflicts) == 0"
	if refuses {
		warnVars = append(warnVars, admissionregistrationv1.Variable{Name: "rejections", Expression: rejections})
		warnWhen += " || size(variables.rejections) > 0"
	}
	out.warning, out.warningBinding = presetValidation(presetPolicyName+"-conflicts", warnVars, admissionregistrationv1.Validation{
		Expression: warnWhen,
		MessageExpression: `"pod presets not applied to " + ` + podNameCEL + ` + " because they conflict (none of " + variables.presets.join(", ") + " was applied): " + ` +
			aggregateCEL("variables.conflicts"),
	}, admissionregistrationv1.Warn)
	return out, b
}

// messages are the CEL lists of the plugin's messages, in its order, for
// the conflicts that refuse the pod (those of Reject presets) and for
// every conflict.
func (b *presetCEL) messages() (rejections, conflicts string) {
	var rejects, all []string
	for _, sf := range b.scopes() {
		r, c := b.rejections(sf.scope, sf.families), b.conflicts(sf.scope, sf.families)
		if sf.scope.containers != "" {
			r, c = inContainers(sf.scope.containers, r), inContainers(sf.scope.containers, c)
		}
		rejects = append(rejects, r)
		all = append(all, c)
	}
	return celConcat(rejects), celConcat(all)
}

// variablesOf is the CEL reference of each variable named.
func variablesOf(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "variables." + n
	}
	return out
}

// podNameCEL names the pod as the plugin does: Pod namespace/name, or
// namespace/generateName* when it has no name yet.
const podNameCEL = `"Pod " + request.namespace + "/" + (object.metadata.?name.orValue("") == "" && object.metadata.?generateName.orValue("") != "" ? object.metadata.generateName + "*" : object.metadata.?name.orValue(""))`

// aggregateCEL is a non-empty list of messages as the plugin aggregates
// them: one alone, or the distinct ones in brackets.
func aggregateCEL(list string) string {
	return "(size(" + list + ".distinct()) == 1 ? " + list + "[0] : \"[\" + " + list + ".distinct().join(\", \") + \"]\")"
}

// presetValidation is a ValidatingAdmissionPolicy of one validation, and
// its binding with action. It runs after every mutation: the mutating
// policy left a pod whose presets conflict as it came, so it finds the
// conflicts the mutating policy found.
func presetValidation(name string, vars []admissionregistrationv1.Variable, validation admissionregistrationv1.Validation, action admissionregistrationv1.ValidationAction) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	meta := metav1.ObjectMeta{Name: name}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: meta,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: podCreates(),
				MatchConditions:  presetMatchConditions,
				Variables:        vars,
				Validations:      []admissionregistrationv1.Validation{validation},
				FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			},
		}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: meta,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        name,
				ValidationActions: []admissionregistrationv1.ValidationAction{action},
			},
		}
}
