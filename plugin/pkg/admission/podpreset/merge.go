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
	same     func(a, b *T) bool
	describe func(*T) string
}

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
func mergeList[T any](o owner, original []T, presets []*preset, l list[T]) ([]T, []error) {
	merged := original
	var errs []error
	for pi, p := range presets {
		items := l.items(&p.spec)
		for i := range items {
			item := &items[i]
			duplicate, conflict := false, false
			for _, key := range l.keys {
				j := indexOf(merged, item, key)
				if j < 0 {
					continue
				}
				if apiequality.Semantic.DeepEqual(merged[j], *item) {
					duplicate = true
					continue
				}
				conflict = true
				errs = append(errs, fmt.Errorf("%s: %s conflicts with the one %s", p, key.describe(item), originOf(o, &merged[j], len(original) > j, presets[:pi], l, key)))
			}
			if duplicate || conflict {
				continue
			}
			if len(merged) == len(original) {
				// The first item appended: make room for every item the
				// presets could add, so the list is allocated once.
				merged = make([]T, len(original), len(original)+countItems(presets, l))
				copy(merged, original)
			}
			merged = append(merged, l.deepCopy(item))
		}
	}
	return merged, errs
}

func indexOf[T any](items []T, item *T, key listKey[T]) int {
	for i := range items {
		if key.same(&items[i], item) {
			return i
		}
	}
	return -1
}

func countItems[T any](presets []*preset, l list[T]) int {
	n := 0
	for _, p := range presets {
		n += len(l.items(&p.spec))
	}
	return n
}

// originOf names where an item of a merged list came from: the pod, or the
// first of the earlier presets that carries it. Only conflicts ask, so the
// merge itself keeps no record.
func originOf[T any](o owner, existing *T, fromOriginal bool, earlier []*preset, l list[T], key listKey[T]) string {
	if !fromOriginal {
		for _, p := range earlier {
			if indexOf(l.items(&p.spec), existing, key) >= 0 {
				return "from " + p.String()
			}
		}
	}
	return "in " + o.String()
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
	same:     func(a, b *corev1.EnvVar) bool { return a.Name == b.Name },
	describe: func(e *corev1.EnvVar) string { return fmt.Sprintf("env %q", e.Name) },
}

// envFromKey identifies an envFrom source by everything but optional, so
// that the same source is not added twice and two presets that disagree
// on whether it is optional conflict.
var envFromKey = listKey[corev1.EnvFromSource]{
	same: func(a, b *corev1.EnvFromSource) bool {
		return a.Prefix == b.Prefix && configMapName(a) == configMapName(b) && secretName(a) == secretName(b)
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
	same:     func(a, b *corev1.Volume) bool { return a.Name == b.Name },
	describe: func(v *corev1.Volume) string { return fmt.Sprintf("volume %q", v.Name) },
}

// A mount is identified both by the volume it mounts and by where.
var (
	mountNameKey = listKey[corev1.VolumeMount]{
		same:     func(a, b *corev1.VolumeMount) bool { return a.Name == b.Name },
		describe: func(m *corev1.VolumeMount) string { return fmt.Sprintf("volumeMount %q", m.Name) },
	}
	mountPathKey = listKey[corev1.VolumeMount]{
		same:     func(a, b *corev1.VolumeMount) bool { return a.MountPath == b.MountPath },
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
