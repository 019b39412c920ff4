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

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// preset is one PodPreset or ClusterPodPreset that selects the pod, with
// its spec defaulted the way kube-apiserver defaults the pod's own fields.
type preset struct {
	kind            string
	name            string
	resourceVersion string
	spec            settingsv1alpha1.PodPresetSpec
}

func (p *preset) String() string { return fmt.Sprintf("%s %q", p.kind, p.name) }

// annotationKey is where the pod records that this preset was applied.
func (p *preset) annotationKey() string {
	if p.kind == clusterPodPresetKind {
		return clusterPodPresetAnnotationPrefix + p.name
	}
	return podPresetAnnotationPrefix + p.name
}

// listKey is one way of identifying an item of a merged list: two items
// with the same key must be the same item, or the presets conflict.
type listKey[T any] struct {
	of       func(*T) itemKey
	describe func(*T) string
}

// itemKey is the value of a listKey. Names, paths and the parts of an
// envFrom source are strings; the widest key (envFrom) has three.
type itemKey struct{ a, b, c string }

func (k listKey[T]) same(a, b *T) bool { return k.of(a) == k.of(b) }

// list describes one of the lists a preset merges into a pod.
type list[T any] struct {
	items func(*settingsv1alpha1.PodPresetSpec) []T
	keys  []listKey[T]
	// deepCopy gives the pod its own copy of an item: the preset's is
	// cached and shared by every pod it is merged into.
	deepCopy func(*T) T
}

// mergeList merges every preset's items (preset order, then item order)
// after the original ones. An item equal to one already there is skipped,
// so merging twice gives the same list; one that shares a key with a
// different item is a conflict. Items appended from earlier presets count as
// already there, so two presets cannot both add, or disagree on, one item.
// original is never modified: the result is a new slice once anything is
// appended, and original itself when nothing is.
//
// Items are found by key through maps built once per merge, so a pod and a
// preset of n items each cost O(n), not O(n²): both are the namespace
// user's to make large.
func mergeList[T any](o owner, original []T, presets []*preset, l list[T]) ([]T, []error) {
	total := countItems(presets, l)
	if total == 0 {
		return original, nil
	}
	merged := original
	// at[k] holds, for each value of key k, the first item of merged that
	// has it: the one a linear search finds. Small lists are searched:
	// most pods and presets have a handful of items, for which maps would
	// cost more than they save.
	var at []map[itemKey]int
	if len(original)+total > linearSearchMax {
		at = make([]map[itemKey]int, len(l.keys))
		for k, key := range l.keys {
			at[k] = make(map[itemKey]int, len(original)+total)
			for j := range original {
				addIfAbsent(at[k], key.of(&original[j]), j)
			}
		}
	}
	var from origins[T]
	var errs []error
	for pi, p := range presets {
		items := l.items(&p.spec)
		for i := range items {
			item := &items[i]
			duplicate, conflict := false, false
			for k, key := range l.keys {
				j, found := find(merged, at, k, key, key.of(item))
				if !found {
					continue
				}
				if apiequality.Semantic.DeepEqual(merged[j], *item) {
					duplicate = true
					continue
				}
				conflict = true
				origin := "in " + o.String()
				if j >= len(original) {
					if earlier, ok := from.first(presets, pi, l, k, key.of(&merged[j])); ok {
						origin = "from " + earlier.String()
					}
				}
				errs = append(errs, fmt.Errorf("%s: %s conflicts with the one %s", p, key.describe(item), origin))
			}
			if duplicate || conflict {
				continue
			}
			if len(merged) == len(original) {
				// The first item appended: make room for every item the
				// presets could add, so the list is allocated once.
				merged = make([]T, len(original), len(original)+total)
				copy(merged, original)
			}
			// No key of an appended item is in the maps yet (or it would
			// have been a duplicate or a conflict).
			for k, index := range at {
				index[l.keys[k].of(item)] = len(merged)
			}
			merged = append(merged, l.deepCopy(item))
		}
	}
	return merged, errs
}

// linearSearchMax is the longest merged list searched item by item. It is
// a variable so that tests can run every merge through the maps.
var linearSearchMax = 16

// find returns the first item of merged whose key k is v, through at when
// the merge indexed the list.
func find[T any](merged []T, at []map[itemKey]int, k int, key listKey[T], v itemKey) (int, bool) {
	if at != nil {
		j, ok := at[k][v]
		return j, ok
	}
	for j := range merged {
		if key.of(&merged[j]) == v {
			return j, true
		}
	}
	return 0, false
}

func addIfAbsent(m map[itemKey]int, k itemKey, pos int) {
	if _, ok := m[k]; !ok {
		m[k] = pos
	}
}

func countItems[T any](presets []*preset, l list[T]) int {
	n := 0
	for _, p := range presets {
		n += len(l.items(&p.spec))
	}
	return n
}

// origins names where an appended item came from in a conflict message:
// the first earlier preset carrying an item with its key. Only conflicts
// ask, so the index is built on the first question, and extended preset by
// preset as the merge moves on.
type origins[T any] struct {
	// byKey[k] holds, for each value of key k, the index of the first
	// preset in presets[:indexed] that carries it.
	byKey   []map[itemKey]int
	indexed int
}

// first returns the first of presets[:before] carrying an item whose key k
// is v.
func (s *origins[T]) first(presets []*preset, before int, l list[T], k int, v itemKey) (*preset, bool) {
	if s.byKey == nil {
		s.byKey = make([]map[itemKey]int, len(l.keys))
		for k := range s.byKey {
			s.byKey[k] = map[itemKey]int{}
		}
	}
	for ; s.indexed < before; s.indexed++ {
		items := l.items(&presets[s.indexed].spec)
		for i := range items {
			for k, key := range l.keys {
				addIfAbsent(s.byKey[k], key.of(&items[i]), s.indexed)
			}
		}
	}
	pi, ok := s.byKey[k][v]
	if !ok {
		return nil, false
	}
	return presets[pi], true
}

// owner is the pod or container a merged list belongs to, named only when a
// conflict is reported.
type owner struct {
	kind, name string
}

func (o owner) String() string {
	if o.name == "" {
		return o.kind
	}
	return fmt.Sprintf("%s %q", o.kind, o.name)
}

var envKey = listKey[corev1.EnvVar]{
	of:       func(e *corev1.EnvVar) itemKey { return itemKey{a: e.Name} },
	describe: func(e *corev1.EnvVar) string { return fmt.Sprintf("env %q", e.Name) },
}

// envFromKey identifies an envFrom source by everything but optional, so
// that the same source is not added twice and two presets that disagree
// on whether it is optional conflict.
var envFromKey = listKey[corev1.EnvFromSource]{
	of: func(e *corev1.EnvFromSource) itemKey {
		return itemKey{a: e.Prefix, b: configMapName(e), c: secretName(e)}
	},
	describe: func(e *corev1.EnvFromSource) string {
		source := "envFrom"
		if e.ConfigMapRef != nil {
			source += fmt.Sprintf(" configMapRef %q", e.ConfigMapRef.Name)
		}
		if e.SecretRef != nil {
			source += fmt.Sprintf(" secretRef %q", e.SecretRef.Name)
		}
		if e.Prefix != "" {
			source += fmt.Sprintf(" with prefix %q", e.Prefix)
		}
		return source
	},
}

func configMapName(e *corev1.EnvFromSource) string {
	if e.ConfigMapRef == nil {
		return ""
	}
	return e.ConfigMapRef.Name
}

func secretName(e *corev1.EnvFromSource) string {
	if e.SecretRef == nil {
		return ""
	}
	return e.SecretRef.Name
}

var volumeKey = listKey[corev1.Volume]{
	of:       func(v *corev1.Volume) itemKey { return itemKey{a: v.Name} },
	describe: func(v *corev1.Volume) string { return fmt.Sprintf("volume %q", v.Name) },
}

// A mount is identified both by the volume it mounts and by where.
var (
	mountNameKey = listKey[corev1.VolumeMount]{
		of:       func(m *corev1.VolumeMount) itemKey { return itemKey{a: m.Name} },
		describe: func(m *corev1.VolumeMount) string { return fmt.Sprintf("volumeMount %q", m.Name) },
	}
	mountPathKey = listKey[corev1.VolumeMount]{
		of:       func(m *corev1.VolumeMount) itemKey { return itemKey{a: m.MountPath} },
		describe: func(m *corev1.VolumeMount) string { return fmt.Sprintf("volumeMount at %q", m.MountPath) },
	}
)

var (
	envList = list[corev1.EnvVar]{
		items:    func(s *settingsv1alpha1.PodPresetSpec) []corev1.EnvVar { return s.Env },
		keys:     []listKey[corev1.EnvVar]{envKey},
		deepCopy: func(e *corev1.EnvVar) (out corev1.EnvVar) { e.DeepCopyInto(&out); return out },
	}
	envFromList = list[corev1.EnvFromSource]{
		items:    func(s *settingsv1alpha1.PodPresetSpec) []corev1.EnvFromSource { return s.EnvFrom },
		keys:     []listKey[corev1.EnvFromSource]{envFromKey},
		deepCopy: func(e *corev1.EnvFromSource) (out corev1.EnvFromSource) { e.DeepCopyInto(&out); return out },
	}
	volumeList = list[corev1.Volume]{
		items:    func(s *settingsv1alpha1.PodPresetSpec) []corev1.Volume { return s.Volumes },
		keys:     []listKey[corev1.Volume]{volumeKey},
		deepCopy: func(v *corev1.Volume) (out corev1.Volume) { v.DeepCopyInto(&out); return out },
	}
	mountList = list[corev1.VolumeMount]{
		items:    func(s *settingsv1alpha1.PodPresetSpec) []corev1.VolumeMount { return s.VolumeMounts },
		keys:     []listKey[corev1.VolumeMount]{mountNameKey, mountPathKey},
		deepCopy: func(m *corev1.VolumeMount) (out corev1.VolumeMount) { m.DeepCopyInto(&out); return out },
	}
)

// containerLists is what the presets give one container.
type containerLists struct {
	env     []corev1.EnvVar
	envFrom []corev1.EnvFromSource
	mounts  []corev1.VolumeMount
}

func mergeContainer(o owner, c *corev1.Container, presets []*preset) (containerLists, []error) {
	env, errs := mergeList(o, c.Env, presets, envList)
	envFrom, envFromErrs := mergeList(o, c.EnvFrom, presets, envFromList)
	mounts, mountErrs := mergeList(o, c.VolumeMounts, presets, mountList)
	return containerLists{env: env, envFrom: envFrom, mounts: mounts}, append(append(errs, envFromErrs...), mountErrs...)
}

// applyPresets merges every preset into the pod, all or nothing: the pod is
// changed only if no preset conflicts with the pod or with another preset.
// Every container and init container, restartable sidecars included, gets
// the same env, envFrom and mounts; ephemeral containers never do, since
// they are added later through their own subresource.
func applyPresets(pod *corev1.Pod, presets []*preset) error {
	volumes, errs := mergeList(owner{kind: "the pod"}, pod.Spec.Volumes, presets, volumeList)
	initLists := make([]containerLists, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		lists, containerErrs := mergeContainer(owner{kind: "init container", name: c.Name}, c, presets)
		initLists[i] = lists
		errs = append(errs, containerErrs...)
	}
	lists := make([]containerLists, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		containerLists, containerErrs := mergeContainer(owner{kind: "container", name: c.Name}, c, presets)
		lists[i] = containerLists
		errs = append(errs, containerErrs...)
	}
	if len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}

	pod.Spec.Volumes = volumes
	for i := range initLists {
		initLists[i].assign(&pod.Spec.InitContainers[i])
	}
	for i := range lists {
		lists[i].assign(&pod.Spec.Containers[i])
	}
	if pod.Annotations == nil {
		pod.Annotations = make(map[string]string, len(presets))
	}
	for _, p := range presets {
		pod.Annotations[p.annotationKey()] = p.resourceVersion
	}
	return nil
}

func (l containerLists) assign(c *corev1.Container) {
	c.Env, c.EnvFrom, c.VolumeMounts = l.env, l.envFrom, l.mounts
}
