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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
)

// FuzzAdmit checks the plugin's promises on random pods and presets,
// against a model of the rules worked out from the generated objects
// alone: it fails a pod only when a selecting preset's item conflicts and
// one side of the conflict is a Reject preset, and then leaves it as it
// was; it applies all of the selecting presets or, only when their items
// conflict, none; an applied preset's every item is where the preset puts
// it, or a conflicting one holds its place; unless a PresetWins preset
// replaces some, it keeps every original item in its place; every item it
// adds is one a selecting preset brings; presets in Warn or Audit mode
// change nothing; and a second admission changes nothing.
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
		selecting := defaulted(selectingEnforced(presets, original))

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
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "conflictPolicy is Reject") ||
				!slices.ContainsFunc(rivalries(original, selecting), rivalry.rejects) {
				t.Fatalf("Admit: %v, and no conflict has a selecting preset whose conflictPolicy is Reject on either side", err)
			}
			if diff := cmp.Diff(original, pod); diff != "" {
				t.Fatalf("a refused pod was changed (-original +refused):\n%s", diff)
			}
			return
		}
		if len(pod.Annotations) == 0 {
			// None applied: no preset selects the pod, or they conflict,
			// and the pod is left exactly as it came.
			if len(selecting) > 0 && len(rivalries(original, selecting)) == 0 {
				t.Fatalf("no preset was applied, but %d select the pod and none of their items conflicts", len(selecting))
			}
			if diff := cmp.Diff(original, pod); diff != "" {
				t.Fatalf("a pod no preset was applied to was changed (-original +admitted):\n%s", diff)
			}
		} else if want := annotationsOf(selecting); !cmp.Equal(pod.Annotations, want) {
			t.Fatalf("the pod records presets %v, want every selecting one: %v", pod.Annotations, want)
		} else {
			presetsTakeEffect(t, original, pod, selecting)
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

// The oracle below states the presets' effect on the admitted pod from the
// generated objects and the API's documented rules alone (which
// containers a preset picks, which keys identify an item, what a conflict
// is); it never works out a merged list. A conflict is two items with a
// key in common (env name, envFrom source, volume name, mount name or
// mount path) that differ, one of a selecting preset and the other of the
// pod or of another selecting preset, where both are put.

// settingsDefaults holds the API's defaulters, which the API server runs
// on every preset it stores, as on the pod.
var settingsDefaults = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(settingsv1alpha1.AddToScheme(s))
	return s
}()

// defaulted returns defaulted copies of presets.
func defaulted(presets []runtime.Object) []runtime.Object {
	out := make([]runtime.Object, len(presets))
	for i, p := range presets {
		out[i] = p.DeepCopyObject()
		settingsDefaults.Default(out[i])
	}
	return out
}

// place is one of the places presets put items: the pod itself (volumes)
// or one of its containers (env, envFrom, mounts), before and after
// admission, with the presets that put items there.
type place struct {
	where         string
	before, after *corev1.Container
	presets       []runtime.Object
}

// containerPlaces are the pod's init containers and containers, each with
// the presets that pick it. A preset's ContainerSelector, as the API
// documents it: unset picks every container; else it picks the
// containers it names or, with exclude, those it does not.
func containerPlaces(original, pod *corev1.Pod, presets []runtime.Object) []place {
	var out []place
	add := func(kind string, before, after []corev1.Container, selector func(*settingsv1alpha1.PodPresetSpec) *settingsv1alpha1.ContainerSelector) {
		for i := range before {
			picking := slices.DeleteFunc(slices.Clone(presets), func(p runtime.Object) bool {
				s := selector(presetSpec(p))
				return s != nil && slices.Contains(s.Names, before[i].Name) == s.Exclude
			})
			out = append(out, place{where: kind + " " + before[i].Name, before: &before[i], after: &after[i], presets: picking})
		}
	}
	add("init container", original.Spec.InitContainers, pod.Spec.InitContainers,
		func(s *settingsv1alpha1.PodPresetSpec) *settingsv1alpha1.ContainerSelector { return s.InitContainers })
	add("container", original.Spec.Containers, pod.Spec.Containers,
		func(s *settingsv1alpha1.PodPresetSpec) *settingsv1alpha1.ContainerSelector { return s.Containers })
	return out
}

// presetsTakeEffect fails unless every item of every applied preset is
// where the preset puts it (its volumes in the pod; its env, envFrom and
// mounts in each container it picks) or, when the item conflicts, an item
// with one of its keys holds its place (the one a policy kept). Containers
// that no preset picks keep their lists.
func presetsTakeEffect(t *testing.T, original, pod *corev1.Pod, presets []runtime.Object) {
	t.Helper()
	for _, p := range presets {
		for _, v := range presetSpec(p).Volumes {
			inPlace(t, p, "volume", "the pod", v, pod.Spec.Volumes, rivalItems(original.Spec.Volumes, presets, volumesOf), volumeKeys)
		}
	}
	for _, c := range containerPlaces(original, pod, presets) {
		if len(c.presets) == 0 {
			if diff := cmp.Diff(*c.before, *c.after); diff != "" {
				t.Fatalf("%s, which no selecting preset picks, was changed (-original +admitted):\n%s", c.where, diff)
			}
			continue
		}
		for _, p := range c.presets {
			spec := presetSpec(p)
			for _, e := range spec.Env {
				inPlace(t, p, "env", c.where, e, c.after.Env, rivalItems(c.before.Env, c.presets, envOf), envKeys)
			}
			for _, e := range spec.EnvFrom {
				inPlace(t, p, "envFrom", c.where, e, c.after.EnvFrom, rivalItems(c.before.EnvFrom, c.presets, envFromOf), envFromKeys)
			}
			for _, m := range spec.VolumeMounts {
				inPlace(t, p, "volumeMount", c.where, m, c.after.VolumeMounts, rivalItems(c.before.VolumeMounts, c.presets, mountsOf), mountKeys)
			}
		}
	}
}

// inPlace fails unless item is in after, or it conflicts with one of
// rivals and after holds an item with one of its keys.
func inPlace[T any](t *testing.T, preset runtime.Object, what, where string, item T, after, rivals []T, keys func(*T) []string) {
	t.Helper()
	if slices.ContainsFunc(after, func(a T) bool { return equality.Semantic.DeepEqual(a, item) }) {
		return
	}
	if clashes(&item, rivals, keys) && slices.ContainsFunc(after, func(a T) bool { return sharesKey(&a, &item, keys) }) {
		return
	}
	t.Fatalf("%s's %s %v is missing from %s, which has %v", presetKey(preset), what, keys(&item), where, after)
}

// rivalItems are the items a preset's may conflict with where they are
// put: the pod's own there and every preset's, its own included (the
// generator may give a preset two items with one key).
func rivalItems[T any](own []T, presets []runtime.Object, items func(*settingsv1alpha1.PodPresetSpec) []T) []T {
	out := slices.Clone(own)
	for _, p := range presets {
		out = append(out, items(presetSpec(p))...)
	}
	return out
}

// rivalry is a conflict of a selecting preset's item with the pod's own
// (other nil) or with a selecting preset's, its own included.
type rivalry struct{ preset, other runtime.Object }

// rejects is true when either side is a preset whose conflictPolicy is
// Reject.
func (r rivalry) rejects() bool {
	reject := hasPolicy(settingsv1alpha1.ConflictPolicyReject)
	return reject(r.preset) || r.other != nil && reject(r.other)
}

// rivalries lists every conflict of the presets' items, wherever they are
// put.
func rivalries(original *corev1.Pod, presets []runtime.Object) []rivalry {
	out := rivalriesIn(original.Spec.Volumes, presets, volumesOf, volumeKeys)
	for _, c := range containerPlaces(original, original, presets) {
		out = append(out, rivalriesIn(c.before.Env, c.presets, envOf, envKeys)...)
		out = append(out, rivalriesIn(c.before.EnvFrom, c.presets, envFromOf, envFromKeys)...)
		out = append(out, rivalriesIn(c.before.VolumeMounts, c.presets, mountsOf, mountKeys)...)
	}
	return out
}

func rivalriesIn[T any](own []T, presets []runtime.Object, items func(*settingsv1alpha1.PodPresetSpec) []T, keys func(*T) []string) []rivalry {
	var out []rivalry
	for i, p := range presets {
		for _, item := range items(presetSpec(p)) {
			if clashes(&item, own, keys) {
				out = append(out, rivalry{preset: p})
			}
			for _, q := range presets[i:] {
				if clashes(&item, items(presetSpec(q)), keys) {
					out = append(out, rivalry{preset: p, other: q})
				}
			}
		}
	}
	return out
}

// clashes is true when one of rivals has a key of item's and differs.
func clashes[T any](item *T, rivals []T, keys func(*T) []string) bool {
	return slices.ContainsFunc(rivals, func(r T) bool { return sharesKey(&r, item, keys) && !equality.Semantic.DeepEqual(r, *item) })
}

func sharesKey[T any](a, b *T, keys func(*T) []string) bool {
	ka, kb := keys(a), keys(b)
	for i := range ka {
		if ka[i] == kb[i] {
			return true
		}
	}
	return false
}

func volumesOf(s *settingsv1alpha1.PodPresetSpec) []corev1.Volume        { return s.Volumes }
func envOf(s *settingsv1alpha1.PodPresetSpec) []corev1.EnvVar            { return s.Env }
func envFromOf(s *settingsv1alpha1.PodPresetSpec) []corev1.EnvFromSource { return s.EnvFrom }
func mountsOf(s *settingsv1alpha1.PodPresetSpec) []corev1.VolumeMount    { return s.VolumeMounts }
func volumeKeys(v *corev1.Volume) []string                               { return []string{v.Name} }
func envKeys(e *corev1.EnvVar) []string                                  { return []string{e.Name} }
func mountKeys(m *corev1.VolumeMount) []string                           { return []string{m.Name, m.MountPath} }

// envFromKeys is an envFrom source's one key: its prefix and what it
// reads.
func envFromKeys(e *corev1.EnvFromSource) []string {
	var configMap, secret string
	if e.ConfigMapRef != nil {
		configMap = e.ConfigMapRef.Name
	}
	if e.SecretRef != nil {
		secret = e.SecretRef.Name
	}
	return []string{e.Prefix + "\x00" + configMap + "\x00" + secret}
}
