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
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
)

// FuzzAdmit checks the plugin's promises on random pods and presets,
// against a model of the rules worked out from the generated objects
// alone: it fails a pod only when a Reject preset that selects it takes
// part, and then leaves it as it was; unless a PresetWins preset replaces
// some, it keeps every original item in its place; every item it adds is
// one a selecting preset brings; it applies all of the selecting presets
// or none; presets in Warn or Audit mode change nothing; and a second
// admission changes nothing.
func FuzzAdmit(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("the same names again and again and again"))
	f.Add([]byte{3, 2, 2, 1, 0, 0, 2, 1, 1, 2, 0, 1, 2, 2, 0, 1, 1, 1, 0, 0, 2, 2, 1, 0, 2, 1, 1, 0, 2, 2, 2, 1, 0, 1, 0, 0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &fuzzobjectstest.PodPresets{Source: fuzzobjectstest.NewSource(data), Namespace: testNamespace}
		presets := g.Presets()
		original := g.Pod()
		p, _ := newTestPlugin(t, presets...)
		selecting := selectingEnforced(presets, original)

		pod := original.DeepCopy()
		err := p.Admit(context.Background(), createAttributes(pod), nil)
		// Presets in Warn and Audit mode never change the outcome: the
		// enforced ones alone give the same pod, or the same refusal.
		onlyEnforced, _ := newTestPlugin(t, enforcedObjects(presets)...)
		alone := original.DeepCopy()
		errAlone := onlyEnforced.Admit(context.Background(), createAttributes(alone), nil)
		if (err == nil) != (errAlone == nil) {
			t.Fatalf("Admit: %v; with the enforced presets alone: %v", err, errAlone)
		}
		if diff := cmp.Diff(alone, pod); diff != "" {
			t.Fatalf("presets in Warn or Audit mode changed the outcome (-enforced alone +all):\n%s", diff)
		}
		if err != nil {
			if !apierrors.IsForbidden(err) || !slices.ContainsFunc(selecting, hasPolicy(settingsv1alpha1.ConflictPolicyReject)) {
				t.Fatalf("Admit: %v, and no selecting preset has conflictPolicy Reject", err)
			}
			if diff := cmp.Diff(original, pod); diff != "" {
				t.Fatalf("a refused pod was changed (-original +refused):\n%s", diff)
			}
			return
		}
		if len(pod.Annotations) == 0 {
			// None applied: no preset selects the pod, or they conflict,
			// and the pod is left exactly as it came.
			if diff := cmp.Diff(original, pod); diff != "" {
				t.Fatalf("a pod no preset was applied to was changed (-original +admitted):\n%s", diff)
			}
		} else if want := annotationsOf(selecting); !cmp.Equal(pod.Annotations, want) {
			t.Fatalf("the pod records presets %v, want every selecting one: %v", pod.Annotations, want)
		}
		if !slices.ContainsFunc(selecting, hasPolicy(settingsv1alpha1.ConflictPolicyPresetWins)) {
			keepsOriginal(t, original, pod)
		}
		addsOnlyPresetItems(t, original, pod, selecting)

		again := pod.DeepCopy()
		if err := p.Admit(context.Background(), createAttributes(again), nil); err != nil {
			t.Fatalf("second Admit: %v", err)
		}
		if diff := cmp.Diff(pod, again); diff != "" {
			t.Fatalf("admitting twice differs from admitting once (-once +twice):\n%s", diff)
		}
	})
}

// selectingEnforced returns, by the rules as the spec states them and
// from the objects alone, the presets that apply to pod: the ones the
// plugin holds in Enforce mode (see enforcedObjects) whose selector picks
// the pod's labels (an empty selector picks every pod; the generator's
// ClusterPodPresets pick every namespace).
func selectingEnforced(objs []runtime.Object, pod *corev1.Pod) []runtime.Object {
	var out []runtime.Object
	for _, obj := range enforcedObjects(objs) {
		selector := presetSpec(obj).Selector.MatchLabels
		if len(selector) == 0 || selector["app"] == pod.Labels["app"] {
			out = append(out, obj)
		}
	}
	return out
}

func hasPolicy(policy settingsv1alpha1.ConflictPolicy) func(runtime.Object) bool {
	return func(obj runtime.Object) bool { return presetSpec(obj).ConflictPolicy == policy }
}

// annotationsOf is what a pod records when presets apply: one annotation
// per preset, named after its kind and name, holding its resourceVersion.
func annotationsOf(presets []runtime.Object) map[string]string {
	want := map[string]string{}
	for _, obj := range presets {
		m, err := meta.Accessor(obj)
		if err != nil {
			panic(err)
		}
		key := "podpreset.admission.kubernetes.io/podpreset-" + m.GetName()
		if _, cluster := obj.(*settingsv1alpha1.ClusterPodPreset); cluster {
			key = "podpreset.admission.kubernetes.io/clusterpodpreset-" + m.GetName()
		}
		want[key] = m.GetResourceVersion()
	}
	return want
}

// addsOnlyPresetItems fails when the admitted pod holds an item that
// neither the pod nor any of the presets brought, by the item's name (or
// path, or source).
func addsOnlyPresetItems(t *testing.T, original, pod *corev1.Pod, presets []runtime.Object) {
	t.Helper()
	var env, envFrom, volumes, mounts []string
	for _, obj := range presets {
		spec := presetSpec(obj)
		env = appendKeys(env, spec.Env, envName)
		envFrom = appendKeys(envFrom, spec.EnvFrom, envFromSource)
		volumes = appendKeys(volumes, spec.Volumes, volumeName)
		mounts = appendKeys(mounts, spec.VolumeMounts, mountAt)
	}
	broughtOnly(t, "volume", original.Spec.Volumes, pod.Spec.Volumes, volumes, volumeName)
	containers := func(p *corev1.Pod) []corev1.Container {
		return append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...)
	}
	before, after := containers(original), containers(pod)
	for i := range before {
		broughtOnly(t, before[i].Name+" env", before[i].Env, after[i].Env, env, envName)
		broughtOnly(t, before[i].Name+" envFrom", before[i].EnvFrom, after[i].EnvFrom, envFrom, envFromSource)
		broughtOnly(t, before[i].Name+" volumeMount", before[i].VolumeMounts, after[i].VolumeMounts, mounts, mountAt)
	}
}

func envName(e *corev1.EnvVar) string              { return e.Name }
func volumeName(v *corev1.Volume) string           { return v.Name }
func mountAt(m *corev1.VolumeMount) string         { return m.Name + " at " + m.MountPath }
func envFromSource(e *corev1.EnvFromSource) string { return e.Prefix + " from " + e.ConfigMapRef.Name }

func appendKeys[T any](keys []string, items []T, key func(*T) string) []string {
	for i := range items {
		keys = append(keys, key(&items[i]))
	}
	return keys
}

// broughtOnly fails on an item of after whose key is neither one of
// before's nor one of brought.
func broughtOnly[T any](t *testing.T, what string, before, after []T, brought []string, key func(*T) string) {
	t.Helper()
	for i := range after {
		k := key(&after[i])
		if slices.ContainsFunc(before, func(b T) bool { return key(&b) == k }) || slices.Contains(brought, k) {
			continue
		}
		t.Fatalf("%s %s is neither the pod's nor any selecting preset's", what, k)
	}
}

// enforcedObjects are the presets the plugin holds after taking in objs
// whose mode is Enforce. The generator may give two presets the same kind
// and name: the plugin then holds the later one, as after an update.
func enforcedObjects(objs []runtime.Object) []runtime.Object {
	var out []runtime.Object
	for i, obj := range objs {
		replaced := slices.ContainsFunc(objs[i+1:], func(later runtime.Object) bool { return presetKey(later) == presetKey(obj) })
		if mode := presetSpec(obj).Mode; !replaced && (mode == "" || mode == settingsv1alpha1.ModeEnforce) {
			out = append(out, obj)
		}
	}
	return out
}

// presetKey is the kind and name of a PodPreset or ClusterPodPreset.
func presetKey(obj runtime.Object) string {
	if c, ok := obj.(*settingsv1alpha1.ClusterPodPreset); ok {
		return clusterPodPresetKind + "/" + c.Name
	}
	return podPresetKind + "/" + obj.(*settingsv1alpha1.PodPreset).Name
}

func presetSpec(obj runtime.Object) *settingsv1alpha1.PodPresetSpec {
	if c, ok := obj.(*settingsv1alpha1.ClusterPodPreset); ok {
		return &c.Spec.PodPresetSpec
	}
	return &obj.(*settingsv1alpha1.PodPreset).Spec
}

func keepsOriginal(t *testing.T, original, pod *corev1.Pod) {
	t.Helper()
	isPrefix(t, "volumes", original.Spec.Volumes, pod.Spec.Volumes)
	containers := func(p *corev1.Pod) []corev1.Container {
		return append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...)
	}
	before, after := containers(original), containers(pod)
	for i := range before {
		isPrefix(t, before[i].Name+" env", before[i].Env, after[i].Env)
		isPrefix(t, before[i].Name+" envFrom", before[i].EnvFrom, after[i].EnvFrom)
		isPrefix(t, before[i].Name+" volumeMounts", before[i].VolumeMounts, after[i].VolumeMounts)
	}
}

func isPrefix[T any](t *testing.T, what string, before, after []T) {
	t.Helper()
	if len(after) < len(before) || !cmp.Equal(before, after[:len(before)], cmpopts.EquateEmpty()) {
		t.Fatalf("%s: the original items are not kept in order:\nbefore %v\nafter  %v", what, before, after)
	}
}
