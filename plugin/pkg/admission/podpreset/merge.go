package podpreset

import (
	"fmt"
	"slices"

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
	of       func(*T) string
	describe func(*T) string
}

// mergeList merges every preset's items (preset order, then item order)
// after the original ones. An item equal to one already there is skipped,
// so merging twice gives the same list; one that shares a key with a
// different item is a conflict. Items appended from earlier presets count as
// already there, so two presets cannot both add, or disagree on, one item.
// original is never modified: the result is a new slice once anything is
// appended, and original itself when nothing is.
func mergeList[T any](o owner, original []T, presets []*preset, items func(*settingsv1alpha1.PodPresetSpec) []T, keys ...listKey[T]) ([]T, []error) {
	merged := original
	var origins []*preset // origins[i] is the preset merged[i] came from; nil for original items
	var errs []error
	for _, p := range presets {
		for i := range items(&p.spec) {
			item := &items(&p.spec)[i]
			duplicate, conflict := false, false
			for _, key := range keys {
				k := key.of(item)
				j := slices.IndexFunc(merged, func(existing T) bool { return key.of(&existing) == k })
				if j < 0 {
					continue
				}
				if apiequality.Semantic.DeepEqual(merged[j], *item) {
					duplicate = true
					continue
				}
				conflict = true
				errs = append(errs, fmt.Errorf("%s: %s conflicts with the one %s", p, key.describe(item), originOf(o, origins, j)))
			}
			if duplicate || conflict {
				continue
			}
			if len(origins) < len(merged) {
				origins = make([]*preset, len(merged))
			}
			merged = append(slices.Clip(merged), *item)
			origins = append(origins, p)
		}
	}
	return merged, errs
}

func originOf(o owner, origins []*preset, i int) string {
	if i < len(origins) && origins[i] != nil {
		return "from " + origins[i].String()
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
	of:       func(e *corev1.EnvVar) string { return e.Name },
	describe: func(e *corev1.EnvVar) string { return fmt.Sprintf("env %q", e.Name) },
}

// envFromKey identifies an envFrom source by everything but optional, so
// that the same source is not added twice and two presets that disagree
// on whether it is optional conflict.
var envFromKey = listKey[corev1.EnvFromSource]{
	of: func(e *corev1.EnvFromSource) string {
		var configMap, secret string
		if e.ConfigMapRef != nil {
			configMap = e.ConfigMapRef.Name
		}
		if e.SecretRef != nil {
			secret = e.SecretRef.Name
		}
		return e.Prefix + "\x00" + configMap + "\x00" + secret
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

var volumeKey = listKey[corev1.Volume]{
	of:       func(v *corev1.Volume) string { return v.Name },
	describe: func(v *corev1.Volume) string { return fmt.Sprintf("volume %q", v.Name) },
}

// A mount is identified both by the volume it mounts and by where.
var (
	mountNameKey = listKey[corev1.VolumeMount]{
		of:       func(m *corev1.VolumeMount) string { return m.Name },
		describe: func(m *corev1.VolumeMount) string { return fmt.Sprintf("volumeMount %q", m.Name) },
	}
	mountPathKey = listKey[corev1.VolumeMount]{
		of:       func(m *corev1.VolumeMount) string { return m.MountPath },
		describe: func(m *corev1.VolumeMount) string { return fmt.Sprintf("volumeMount at %q", m.MountPath) },
	}
)

func presetEnv(s *settingsv1alpha1.PodPresetSpec) []corev1.EnvVar            { return s.Env }
func presetEnvFrom(s *settingsv1alpha1.PodPresetSpec) []corev1.EnvFromSource { return s.EnvFrom }
func presetVolumes(s *settingsv1alpha1.PodPresetSpec) []corev1.Volume        { return s.Volumes }
func presetMounts(s *settingsv1alpha1.PodPresetSpec) []corev1.VolumeMount    { return s.VolumeMounts }

// containerLists is what the presets give one container.
type containerLists struct {
	env     []corev1.EnvVar
	envFrom []corev1.EnvFromSource
	mounts  []corev1.VolumeMount
}

func mergeContainer(o owner, c *corev1.Container, presets []*preset) (containerLists, []error) {
	env, errs := mergeList(o, c.Env, presets, presetEnv, envKey)
	envFrom, envFromErrs := mergeList(o, c.EnvFrom, presets, presetEnvFrom, envFromKey)
	mounts, mountErrs := mergeList(o, c.VolumeMounts, presets, presetMounts, mountNameKey, mountPathKey)
	return containerLists{env: env, envFrom: envFrom, mounts: mounts}, append(append(errs, envFromErrs...), mountErrs...)
}

// applyPresets merges every preset into the pod, all or nothing: the pod is
// changed only if no preset conflicts with the pod or with another preset.
// Every container and init container, restartable sidecars included, gets
// the same env, envFrom and mounts; ephemeral containers never do, since
// they are added later through their own subresource.
func applyPresets(pod *corev1.Pod, presets []*preset) error {
	volumes, errs := mergeList(owner{kind: "the pod"}, pod.Spec.Volumes, presets, presetVolumes, volumeKey)
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
