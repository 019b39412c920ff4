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

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// What runs where decides the order of presets and mutators. In-process,
// and in the webhook server's one call per pod, the PodPreset plugin runs
// first and the LocationMutator last, and Gatekeeper's mutators run as one
// set until it settles. kube-apiserver runs MutatingAdmissionPolicies in
// no set order among themselves, and before every webhook: a compiled
// mutator runs in either order with the presets' policy, and before every
// mutator left to a webhook. So each compiled mutator for which that order
// may matter is refused too, and the plugin runs it in its own order.

// keepMutatorsApart refuses, into r, each of the compiled mutators cs that
// may meet what a preset of src writes or reads in a pod, or what a
// mutator held by the plugin (held: refused, but not in a schema conflict,
// as the plugin runs none of those) writes or reads. A mutator refused
// here is held too, so the check runs again until it refuses nothing.
func keepMutatorsApart(cs []*compiledMutator, src Sources, held []*mutation.Mutator, r *Result) []*compiledMutator {
	writes, reads := presetLocations(src)
	var kept []*compiledMutator
	for _, c := range cs {
		if appliesToPods(c.m) && mutation.MayMeet(c.m, writes, reads) {
			r.Refused = append(r.Refused, refusalOf(c.m, field.ErrorList{field.Forbidden(locationPath,
				"it may meet what a PodPreset or ClusterPodPreset writes or reads in a pod, and a policy runs in no set order with the presets' policy")}))
			held = append(held, c.m)
			continue
		}
		kept = append(kept, c)
	}
	for changed := true; changed; {
		changed = false
		cs, kept = kept, nil
		for _, c := range cs {
			if other := firstMet(c.m, held); other != nil {
				r.Refused = append(r.Refused, refusalOf(c.m, field.ErrorList{field.Forbidden(locationPath,
					fmt.Sprintf("it may meet %s, which did not compile and runs after every policy", other.ID()))}))
				held = append(held, c.m)
				changed = true
				continue
			}
			kept = append(kept, c)
		}
	}
	return kept
}

// firstMet is the first of held whose order with m may matter, or nil:
// one may change what the other reads, or add a label the other selects
// by.
func firstMet(m *mutation.Mutator, held []*mutation.Mutator) *mutation.Mutator {
	for _, h := range held {
		if mayMeet(m, h) && (mutation.MayAffect(m, h) || mutation.MayAffect(h, m) ||
			addsLabelSelectedBy(m, h) || addsLabelSelectedBy(h, m)) {
			return h
		}
	}
	return nil
}

// appliesToPods reports whether m may change a pod: an AssignMetadata
// applies to every kind its match selects.
func appliesToPods(m *mutation.Mutator) bool {
	bindings := m.Bindings()
	return bindings == nil || slices.ContainsFunc(bindings, func(b mutation.Binding) bool {
		return b.GVK.Group == "" && b.GVK.Kind == "Pod"
	})
}

// presetLocations are the locations of a pod the presets of src (every
// mode, every conflict policy) write, and those they read: the items they
// add and the annotations that record them; the labels their selectors
// read, the annotations that exempt a pod, and the containers they pick.
func presetLocations(src Sources) (writes, reads []path.Path) {
	presets, _ := collectPresets(src)
	if len(presets) == 0 {
		return nil, nil
	}
	fields := func(names ...string) []path.Node {
		nodes := make([]path.Node, len(names))
		for i, n := range names {
			nodes[i] = path.Object{Reference: n}
		}
		return nodes
	}
	at := func(nodes ...[]path.Node) path.Path {
		return path.Path{Nodes: slices.Concat(nodes...)}
	}
	everyContainer := func(list string) []path.Node {
		return []path.Node{path.Object{Reference: "spec"}, path.Object{Reference: list}, path.List{KeyField: "name", Glob: true}}
	}
	byName := func(name string) []path.Node { return []path.Node{path.List{KeyField: "name", KeyValue: name}} }
	for _, p := range presets {
		writes = append(writes, at(fields("metadata", "annotations", p.annotationKey())))
		for _, v := range p.spec.Volumes {
			writes = append(writes, at(fields("spec", "volumes"), byName(v.Name)))
		}
		for _, list := range []string{"containers", "initContainers"} {
			for _, e := range p.spec.Env {
				writes = append(writes, at(everyContainer(list), fields("env"), byName(e.Name)))
			}
			if len(p.spec.EnvFrom) > 0 {
				writes = append(writes, at(everyContainer(list), fields("envFrom")))
			}
			if len(p.spec.VolumeMounts) > 0 {
				writes = append(writes, at(everyContainer(list), fields("volumeMounts")))
			}
			reads = append(reads, at(everyContainer(list), fields("name")))
		}
		for _, key := range selectorKeysOf(p) {
			reads = append(reads, at(fields("metadata", "labels", key)))
		}
	}
	// What decides whether a pod is exempt (the plugin's exclude
	// annotation, a mirror pod's).
	for _, key := range []string{"podpreset.admission.kubernetes.io/exclude", "kubernetes.io/config.mirror"} {
		reads = append(reads, at(fields("metadata", "annotations", key)))
	}
	// A preset reads what it writes: the pod's own items decide a
	// conflict.
	return writes, append(reads, writes...)
}

// selectorKeysOf are the label keys a preset's selector reads from a pod.
func selectorKeysOf(p *presetIn) []string {
	var keys []string
	for k := range p.spec.Selector.MatchLabels {
		keys = append(keys, k)
	}
	for _, r := range p.spec.Selector.MatchExpressions {
		keys = append(keys, r.Key)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// heldMutators are the mutators the plugin runs though they are not
// compiled: those held for it (src.Held), and those of all that did not
// compile but for those in a schema conflict, which the plugin runs none of.
func heldMutators(src Sources, all []*mutation.Mutator, compiled []*compiledMutator, conflicts map[mutation.ID][]string) []*mutation.Mutator {
	held := slices.Clone(src.Held)
	for _, m := range all {
		if len(conflicts[m.ID()]) > 0 || slices.ContainsFunc(compiled, func(c *compiledMutator) bool { return c.m == m }) {
			continue
		}
		held = append(held, m)
	}
	slices.SortFunc(held, func(a, b *mutation.Mutator) int { return strings.Compare(a.ID().String(), b.ID().String()) })
	return held
}
