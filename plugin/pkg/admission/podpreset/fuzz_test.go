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
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// generator turns fuzz input into pods and presets over small alphabets,
// so that names, paths and sources collide often: collisions are where the
// merge rules live.
type generator struct {
	data []byte
	pos  int
}

func (g *generator) next(n int) int {
	if g.pos >= len(g.data) || n <= 1 {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return int(b) % n
}

func (g *generator) name(prefix string) string { return fmt.Sprintf("%s%d", prefix, g.next(3)) }

func (g *generator) env() []corev1.EnvVar {
	var out []corev1.EnvVar
	for n := g.next(4); n > 0; n-- {
		e := corev1.EnvVar{Name: g.name("E"), Value: g.name("v")}
		if g.next(4) == 0 {
			e.Value = ""
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}
		}
		out = append(out, e)
	}
	return out
}

func (g *generator) envFrom() []corev1.EnvFromSource {
	var out []corev1.EnvFromSource
	for n := g.next(3); n > 0; n-- {
		e := configMapEnv(g.name("cm"), g.name("P")[:g.next(2)*2])
		if g.next(3) == 0 {
			e.ConfigMapRef.Optional = ptr.To(true)
		}
		out = append(out, e)
	}
	return out
}

func (g *generator) volumes() []corev1.Volume {
	var out []corev1.Volume
	for n := g.next(3); n > 0; n-- {
		v := emptyDir(g.name("vol"))
		if g.next(3) == 0 {
			v.VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}
		}
		out = append(out, v)
	}
	return out
}

func (g *generator) mounts() []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for n := g.next(3); n > 0; n-- {
		out = append(out, corev1.VolumeMount{Name: g.name("vol"), MountPath: "/" + g.name("p"), ReadOnly: g.next(4) == 0})
	}
	return out
}

// policy is a conflict policy, unset as often as any other.
func (g *generator) policy() settingsv1alpha1.ConflictPolicy {
	return []settingsv1alpha1.ConflictPolicy{"",
		settingsv1alpha1.ConflictPolicySkipAll, settingsv1alpha1.ConflictPolicyPodWins,
		settingsv1alpha1.ConflictPolicyPresetWins, settingsv1alpha1.ConflictPolicyReject}[g.next(5)]
}

// mode is a preset's mode, unset as often as all the others.
func (g *generator) mode() settingsv1alpha1.Mode {
	return []settingsv1alpha1.Mode{"", "", "",
		settingsv1alpha1.ModeEnforce, settingsv1alpha1.ModeWarn, settingsv1alpha1.ModeAudit}[g.next(6)]
}

// containerSelector is unset half the time, or names some of the names
// prefix gives containers, picking or leaving them out.
func (g *generator) containerSelector(prefix string) *settingsv1alpha1.ContainerSelector {
	if g.next(2) == 0 {
		return nil
	}
	s := &settingsv1alpha1.ContainerSelector{Exclude: g.next(2) == 0}
	for n := g.next(3); n > 0; n-- {
		s.Names = append(s.Names, g.name(prefix))
	}
	return s
}

func (g *generator) pod() *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Namespace: testNamespace, Labels: map[string]string{"app": g.name("a")}}}
	pod.Spec.Volumes = g.volumes()
	for n := g.next(3); n > 0; n-- {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: g.name("init"), Env: g.env(), EnvFrom: g.envFrom(), VolumeMounts: g.mounts()})
	}
	for n := 1 + g.next(3); n > 0; n-- {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: g.name("c"), Env: g.env(), EnvFrom: g.envFrom(), VolumeMounts: g.mounts()})
	}
	// Secret volumes as kube-apiserver stores them.
	for i := range pod.Spec.Volumes {
		if s := pod.Spec.Volumes[i].Secret; s != nil {
			s.DefaultMode = ptr.To[int32](0o644)
		}
	}
	return pod
}

func (g *generator) presets() []runtime.Object {
	var out []runtime.Object
	for n := g.next(4); n > 0; n-- {
		spec := settingsv1alpha1.PodPresetSpec{Env: g.env(), EnvFrom: g.envFrom(), Volumes: g.volumes(), VolumeMounts: g.mounts(),
			ConflictPolicy: g.policy(), Containers: g.containerSelector("c"), InitContainers: g.containerSelector("init"), Mode: g.mode()}
		selector := metav1.LabelSelector{}
		if g.next(2) == 0 {
			selector.MatchLabels = map[string]string{"app": g.name("a")}
		}
		if g.next(3) == 0 {
			out = append(out, clusterPodPreset(g.name("cluster"), everything, selector, spec))
		} else {
			out = append(out, podPreset(g.name("preset"), selector, spec))
		}
	}
	return out
}

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
		g := &generator{data: data}
		presets := g.presets()
		original := g.pod()
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
