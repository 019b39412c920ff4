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

package fuzzobjectstest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// PodPresets makes pods and the PodPresets and ClusterPodPresets that may
// select them. Items are named from three choices each, so that names,
// paths and sources collide often: collisions are where the merge rules
// live.
type PodPresets struct {
	*Source
	// Namespace holds the pods and the PodPresets.
	Namespace string
	// NamespaceSelector is every ClusterPodPreset's namespaceSelector.
	NamespaceSelector metav1.LabelSelector
}

// Name is prefix followed by 0, 1 or 2.
func (g *PodPresets) Name(prefix string) string { return fmt.Sprintf("%s%d", prefix, g.Next(3)) }

// Env is up to three env vars E0 to E2, one in four from a fieldRef.
func (g *PodPresets) Env() []corev1.EnvVar {
	var out []corev1.EnvVar
	for n := g.Next(4); n > 0; n-- {
		e := corev1.EnvVar{Name: g.Name("E"), Value: g.Name("v")}
		if g.Next(4) == 0 {
			e.Value = ""
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}
		}
		out = append(out, e)
	}
	return out
}

// EnvFrom is up to two ConfigMap sources, with or without a prefix.
func (g *PodPresets) EnvFrom() []corev1.EnvFromSource {
	var out []corev1.EnvFromSource
	for n := g.Next(3); n > 0; n-- {
		name := g.Name("cm")
		prefix := g.Name("P")[:g.Next(2)*2]
		e := corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
		if g.Next(3) == 0 {
			e.ConfigMapRef.Optional = ptr.To(true)
		}
		out = append(out, e)
	}
	return out
}

// Volumes is up to two emptyDir or Secret volumes vol0 to vol2.
func (g *PodPresets) Volumes() []corev1.Volume {
	var out []corev1.Volume
	for n := g.Next(3); n > 0; n-- {
		v := corev1.Volume{Name: g.Name("vol"), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		if g.Next(3) == 0 {
			v.VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}
		}
		out = append(out, v)
	}
	return out
}

// Mounts is up to two mounts of vol0 to vol2 at /p0 to /p2.
func (g *PodPresets) Mounts() []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for n := g.Next(3); n > 0; n-- {
		out = append(out, corev1.VolumeMount{Name: g.Name("vol"), MountPath: "/" + g.Name("p"), ReadOnly: g.Next(4) == 0})
	}
	return out
}

// Policy is a conflict policy, unset as often as any other.
func (g *PodPresets) Policy() settingsv1alpha1.ConflictPolicy {
	return []settingsv1alpha1.ConflictPolicy{"",
		settingsv1alpha1.ConflictPolicySkipAll, settingsv1alpha1.ConflictPolicyPodWins,
		settingsv1alpha1.ConflictPolicyPresetWins, settingsv1alpha1.ConflictPolicyReject}[g.Next(5)]
}

// mode is a preset's mode, unset as often as all the others.
func (g *PodPresets) mode() settingsv1alpha1.Mode {
	return []settingsv1alpha1.Mode{"", "", "",
		settingsv1alpha1.ModeEnforce, settingsv1alpha1.ModeWarn, settingsv1alpha1.ModeAudit}[g.Next(6)]
}

// containerSelector is unset half the time, or names some of the names
// prefix gives containers, picking or leaving them out.
func (g *PodPresets) containerSelector(prefix string) *settingsv1alpha1.ContainerSelector {
	if g.Next(2) == 0 {
		return nil
	}
	s := &settingsv1alpha1.ContainerSelector{Exclude: g.Next(2) == 0}
	for n := g.Next(3); n > 0; n-- {
		s.Names = append(s.Names, g.Name(prefix))
	}
	return s
}

// Pod is a pod named fuzz, labelled app=a0, a1 or a2, with init containers
// init0 to init2 and containers c0 to c2 (names may repeat) that carry
// env, envFrom and volumeMounts, and volumes.
func (g *PodPresets) Pod() *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Namespace: g.Namespace, Labels: map[string]string{"app": g.Name("a")}}}
	pod.Spec.Volumes = g.Volumes()
	for n := g.Next(3); n > 0; n-- {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: g.Name("init"), Env: g.Env(), EnvFrom: g.EnvFrom(), VolumeMounts: g.Mounts()})
	}
	for n := 1 + g.Next(3); n > 0; n-- {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: g.Name("c"), Env: g.Env(), EnvFrom: g.EnvFrom(), VolumeMounts: g.Mounts()})
	}
	// Secret volumes as kube-apiserver stores them.
	for i := range pod.Spec.Volumes {
		if s := pod.Spec.Volumes[i].Secret; s != nil {
			s.DefaultMode = ptr.To[int32](0o644)
		}
	}
	return pod
}

// Presets are up to three PodPresets (preset0 to preset2) and
// ClusterPodPresets (cluster0 to cluster2), one in three a cluster one, in
// every mode and conflict policy, selecting pods by app or all of them.
// Two may have the same kind and name: a test that stores them keeps the
// later one, as after an update.
func (g *PodPresets) Presets() []runtime.Object {
	var out []runtime.Object
	for n := g.Next(4); n > 0; n-- {
		spec := settingsv1alpha1.PodPresetSpec{Env: g.Env(), EnvFrom: g.EnvFrom(), Volumes: g.Volumes(), VolumeMounts: g.Mounts(),
			ConflictPolicy: g.Policy(), Containers: g.containerSelector("c"), InitContainers: g.containerSelector("init"), Mode: g.mode()}
		if g.Next(2) == 0 {
			spec.Selector.MatchLabels = map[string]string{"app": g.Name("a")}
		}
		if g.Next(3) == 0 {
			out = append(out, &settingsv1alpha1.ClusterPodPreset{ObjectMeta: metav1.ObjectMeta{Name: g.Name("cluster")},
				Spec: settingsv1alpha1.ClusterPodPresetSpec{NamespaceSelector: *g.NamespaceSelector.DeepCopy(), PodPresetSpec: spec}})
		} else {
			out = append(out, &settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{Name: g.Name("preset"), Namespace: g.Namespace}, Spec: spec})
		}
	}
	return out
}
