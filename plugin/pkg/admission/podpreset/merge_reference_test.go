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

package podpreset

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
	"github.com/admitkit/admitkit/plugin/internal/scalebenchtest"
)

// referenceMerge is mergeList written the plain way, every lookup a linear
// search and every item tagged with where it came from: what the indexed
// merge must agree with on every input.
func referenceMerge[T any](o owner, original []T, presets []*preset, l list[T]) ([]T, []conflict) {
	r := &refMerge[T]{o: o, presets: presets, l: l}
	r.claimPresetWins()
	r.placeOwn(original)
	nbase := len(r.entries)
	for _, c := range r.claims {
		if !c.placed {
			r.entries = append(r.entries, refEntry[T]{item: c.item, src: c.src})
			r.changed = true
		}
	}
	for pi, p := range presets {
		if policy := p.spec.ConflictPolicy; policy != settingsv1alpha1.ConflictPolicyPodWins && policy != settingsv1alpha1.ConflictPolicyPresetWins {
			r.merge(pi)
		}
	}
	for pi, p := range presets {
		if p.spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyPodWins {
			r.merge(pi)
		}
	}
	if !r.changed {
		return original, r.conflicts
	}
	sort.SliceStable(r.entries[nbase:], func(a, b int) bool { return r.entries[nbase+a].src < r.entries[nbase+b].src })
	merged := make([]T, len(r.entries))
	for j := range r.entries {
		merged[j] = r.entries[j].item
	}
	return merged, r.conflicts
}

// refMerge is referenceMerge's state.
type refMerge[T any] struct {
	o         owner
	presets   []*preset
	l         list[T]
	claims    []*refClaim[T]
	entries   []refEntry[T]
	conflicts []conflict
	changed   bool
}

// refEntry is an item of the merged list.
type refEntry[T any] struct {
	item T
	// src is the index of the preset the item is from, -1 for the pod.
	src int
}

// refClaim is a PresetWins item's claim on its keys.
type refClaim[T any] struct {
	src    int
	item   T
	placed bool
}

func (r *refMerge[T]) claimWith(key listKey[T], item *T) *refClaim[T] {
	for _, c := range r.claims {
		if key.same(&c.item, item) {
			return c
		}
	}
	return nil
}

func (r *refMerge[T]) firstWith(key listKey[T], item *T) int {
	for j := range r.entries {
		if key.same(&r.entries[j].item, item) {
			return j
		}
	}
	return -1
}

// claimPresetWins lets PresetWins items claim their keys first, in preset
// order.
func (r *refMerge[T]) claimPresetWins() {
	for pi, p := range r.presets {
		if p.spec.ConflictPolicy != settingsv1alpha1.ConflictPolicyPresetWins {
			continue
		}
		items := r.l.items(&p.spec)
		for i := range items {
			duplicate, conflicting := false, false
			for _, key := range r.l.keys {
				c := r.claimWith(key, &items[i])
				if c == nil {
					continue
				}
				if apiequality.Semantic.DeepEqual(c.item, items[i]) {
					duplicate = true
					continue
				}
				conflicting = true
				r.conflicts = append(r.conflicts, conflict{err: fmt.Errorf("%s: %s conflicts with the one from %s", p, key.describe(&items[i]), r.presets[c.src])})
			}
			if !duplicate && !conflicting {
				r.claims = append(r.claims, &refClaim[T]{src: pi, item: items[i]})
			}
		}
	}
}

// placeOwn places the pod's items, each replaced by the first claim it
// meets that differs from it, or dropped when that claim is already
// placed.
func (r *refMerge[T]) placeOwn(original []T) {
	for _, own := range original {
		var winner *refClaim[T]
		for _, key := range r.l.keys {
			c := r.claimWith(key, &own)
			if c == nil {
				continue
			}
			if apiequality.Semantic.DeepEqual(c.item, own) {
				c.placed = true
				continue
			}
			if winner == nil {
				winner = c
			}
		}
		switch {
		case winner == nil:
			r.entries = append(r.entries, refEntry[T]{item: own, src: -1})
		case !winner.placed:
			winner.placed = true
			r.entries = append(r.entries, refEntry[T]{item: winner.item, src: winner.src})
			r.changed = true
		default:
			r.changed = true
		}
	}
}

// merge adds preset pi's items that meet none of the list's keys, and
// reports those that meet a different item.
func (r *refMerge[T]) merge(pi int) {
	p := r.presets[pi]
	items := r.l.items(&p.spec)
	for i := range items {
		item := &items[i]
		duplicate, conflicting := false, false
		for _, key := range r.l.keys {
			j := r.firstWith(key, item)
			if j < 0 {
				continue
			}
			if p.spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyPodWins {
				conflicting = true
				break
			}
			if apiequality.Semantic.DeepEqual(r.entries[j].item, *item) {
				duplicate = true
				continue
			}
			conflicting = true
			r.conflicts = append(r.conflicts, r.conflictWith(p, key, item, j))
		}
		if !duplicate && !conflicting {
			r.entries = append(r.entries, refEntry[T]{item: *item, src: pi})
			r.changed = true
		}
	}
}

// conflictWith is p's item conflicting with entry j.
func (r *refMerge[T]) conflictWith(p *preset, key listKey[T], item *T, j int) conflict {
	where, reject := "in "+r.o.String(), p.spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyReject
	if src := r.entries[j].src; src >= 0 {
		where = "from " + r.presets[src].String()
		reject = reject || r.presets[src].spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyReject
	}
	return conflict{err: fmt.Errorf("%s: %s conflicts with the one %s", p, key.describe(item), where), reject: reject}
}

// genPresets makes presets over the generator's small alphabets, so that
// items collide within a preset, across presets and with the pod's.
func genPresets(g *fuzzobjectstest.PodPresets) []*preset {
	var out []*preset
	for n := g.Next(5); n > 0; n-- {
		kind := podPresetKind
		if g.Next(3) == 0 {
			kind = clusterPodPresetKind
		}
		out = append(out, &preset{kind: kind, name: g.Name("p"), spec: settingsv1alpha1.PodPresetSpec{
			Env: g.Env(), EnvFrom: g.EnvFrom(), Volumes: g.Volumes(), VolumeMounts: g.Mounts(), ConflictPolicy: g.Policy(),
		}})
	}
	return out
}

// sameMerge merges one list both ways and fails unless the lists, the
// conflicts (text and order) and whether the original came back as itself
// all agree.
func sameMerge[T any](t *testing.T, what string, original []T, presets []*preset, l list[T]) {
	t.Helper()
	o := owner{kind: "container", name: "c"}
	want, wantErrs := referenceMerge(o, original, presets, l)
	got, gotErrs := mergeList(o, original, presets, l)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s: merged list differs from the reference (-want +got):\n%s", what, diff)
	}
	if diff := cmp.Diff(conflictTexts(wantErrs), conflictTexts(gotErrs)); diff != "" {
		t.Fatalf("%s: conflicts differ from the reference (-want +got):\n%s", what, diff)
	}
	if aliases(original, want) != aliases(original, got) {
		t.Fatalf("%s: the reference returned the original %v, the merge %v", what, aliases(original, want), aliases(original, got))
	}
}

func aliases[T any](a, b []T) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}

// conflictTexts renders conflicts with whether they refuse the pod.
func conflictTexts(conflicts []conflict) []string {
	out := make([]string, len(conflicts))
	for i, c := range conflicts {
		out[i] = fmt.Sprintf("%s (reject %t)", c.err, c.reject)
	}
	return out
}

func checkAgainstReference(t *testing.T, data []byte) { checkMerges(t, data, 0) }

// checkMerges compares the merges of the lists data generates, with pad
// items that no preset names put before the pod's own. The generated lists
// are shorter than linearSearchMax, so padding by linearSearchMax runs the
// same collisions through the indexed search.
func checkMerges(t *testing.T, data []byte, pad int) {
	g := &fuzzobjectstest.PodPresets{Source: fuzzobjectstest.NewSource(data)}
	env, envFrom, volumes, mounts := g.Env(), g.EnvFrom(), g.Volumes(), g.Mounts()
	for i := range pad {
		env = append([]corev1.EnvVar{{Name: fmt.Sprintf("PAD%d", i), Value: "v"}}, env...)
		envFrom = append([]corev1.EnvFromSource{configMapEnv(fmt.Sprintf("pad%d", i), "")}, envFrom...)
		volumes = append([]corev1.Volume{emptyDir(fmt.Sprintf("pad%d", i))}, volumes...)
		mounts = append([]corev1.VolumeMount{{Name: fmt.Sprintf("pad%d", i), MountPath: fmt.Sprintf("/pad%d", i)}}, mounts...)
	}
	presets := genPresets(g)
	sameMerge(t, "env", env, presets, envList)
	sameMerge(t, "envFrom", envFrom, presets, envFromList)
	sameMerge(t, "volumes", volumes, presets, volumeList)
	sameMerge(t, "volumeMounts", mounts, presets, mountList)
}

// The indexed merge agrees with the linear one on random pods and presets,
// with small lists searched in order, and with the pod's lists padded so
// that every merge goes through the maps.
func TestMergeListMatchesReference(t *testing.T) {
	for _, pad := range []int{0, linearSearchMax} {
		r := rand.New(rand.NewPCG(15, 1))
		for i := 0; i < 3000; i++ {
			data := make([]byte, r.IntN(200))
			for j := range data {
				data[j] = byte(r.UintN(256))
			}
			t.Run(fmt.Sprintf("padded-by-%d/%d", pad, i), func(t *testing.T) { checkMerges(t, data, pad) })
		}
	}
}

func FuzzMergeList(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 0, 0, 2, 1, 1, 0, 4, 2, 0, 1, 1, 2, 2, 0, 3, 3, 1, 0, 2, 1, 0, 1, 2, 2, 1, 0, 0, 1})
	f.Add([]byte("the same names again and again and again and again"))
	f.Fuzz(checkAgainstReference)
}

// The merges of a preset of n items into a container of n items, n in
// 1,000, 4,000 and 16,000: the cost per item stays flat. Half the
// preset's items are already in the container (duplicates), half are new;
// "conflicts" makes every item of a second preset contradict the first, so
// that each conflict also names the preset it contradicts.
func BenchmarkMergeList(b *testing.B) {
	for _, n := range scalebenchtest.Sizes {
		var pod, env []corev1.EnvVar
		var mounts, podMounts []corev1.VolumeMount
		var envFrom, podEnvFrom []corev1.EnvFromSource
		var volumes, podVolumes []corev1.Volume
		for i := 0; i < n; i++ {
			pod = append(pod, corev1.EnvVar{Name: fmt.Sprintf("POD_%d", i), Value: "v"})
			env = append(env, corev1.EnvVar{Name: fmt.Sprintf("POD_%d", i+n/2), Value: "v"})
			podMounts = append(podMounts, corev1.VolumeMount{Name: fmt.Sprintf("v%d", i), MountPath: fmt.Sprintf("/m/%d", i)})
			mounts = append(mounts, corev1.VolumeMount{Name: fmt.Sprintf("v%d", i+n/2), MountPath: fmt.Sprintf("/m/%d", i+n/2)})
			podEnvFrom = append(podEnvFrom, configMapEnv(fmt.Sprintf("cm%d", i), ""))
			envFrom = append(envFrom, configMapEnv(fmt.Sprintf("cm%d", i+n/2), ""))
			podVolumes = append(podVolumes, emptyDir(fmt.Sprintf("v%d", i)))
			volumes = append(volumes, emptyDir(fmt.Sprintf("v%d", i+n/2)))
		}
		presets := []*preset{{kind: podPresetKind, name: "p", spec: settingsv1alpha1.PodPresetSpec{Env: env, EnvFrom: envFrom, Volumes: volumes, VolumeMounts: mounts}}}
		o := owner{kind: "container", name: "c"}
		b.Run(fmt.Sprintf("env/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() { mergeList(o, pod, presets, envList) })
		})
		b.Run(fmt.Sprintf("envFrom/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() { mergeList(o, podEnvFrom, presets, envFromList) })
		})
		b.Run(fmt.Sprintf("volumes/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() { mergeList(o, podVolumes, presets, volumeList) })
		})
		b.Run(fmt.Sprintf("volumeMounts/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() { mergeList(o, podMounts, presets, mountList) })
		})

		// Every policy at once: a PresetWins preset replacing half of the
		// pod's items and adding as many, a PodWins one giving way on every
		// item. Mounts are replaced by name while their path changes.
		var enforcedEnv, yieldingEnv []corev1.EnvVar
		var enforcedMounts []corev1.VolumeMount
		for i := 0; i < n; i++ {
			enforcedEnv = append(enforcedEnv, corev1.EnvVar{Name: fmt.Sprintf("POD_%d", i+n/2), Value: "enforced"})
			yieldingEnv = append(yieldingEnv, corev1.EnvVar{Name: fmt.Sprintf("POD_%d", i), Value: "other"})
			enforcedMounts = append(enforcedMounts, corev1.VolumeMount{Name: fmt.Sprintf("v%d", i+n/2), MountPath: fmt.Sprintf("/e/%d", i+n/2)})
		}
		policies := []*preset{
			{kind: podPresetKind, name: "enforce", spec: settingsv1alpha1.PodPresetSpec{Env: enforcedEnv, VolumeMounts: enforcedMounts, ConflictPolicy: settingsv1alpha1.ConflictPolicyPresetWins}},
			{kind: podPresetKind, name: "yield", spec: settingsv1alpha1.PodPresetSpec{Env: yieldingEnv, VolumeMounts: podMounts, ConflictPolicy: settingsv1alpha1.ConflictPolicyPodWins}},
		}
		b.Run(fmt.Sprintf("policies-env/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() { mergeList(o, pod, policies, envList) })
		})
		b.Run(fmt.Sprintf("policies-volumeMounts/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() { mergeList(o, podMounts, policies, mountList) })
		})

		contradict := make([]corev1.EnvVar, n)
		for i := range contradict {
			contradict[i] = corev1.EnvVar{Name: env[i].Name, Value: "other"}
		}
		twoPresets := append(presets, &preset{kind: podPresetKind, name: "q", spec: settingsv1alpha1.PodPresetSpec{Env: contradict}})
		b.Run(fmt.Sprintf("conflicts/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() {
				if _, errs := mergeList(o, nil, twoPresets, envList); len(errs) != n {
					b.Fatalf("%d conflicts, want %d", len(errs), n)
				}
			})
		})
	}
}
