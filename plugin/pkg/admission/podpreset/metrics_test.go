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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// counterValues reads every PodPreset counter.
func counterValues(t *testing.T) map[string]float64 {
	t.Helper()
	values := map[string]float64{}
	read := func(name string, value float64, err error) {
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		values[name] = value
	}
	v, err := testutil.GetCounterMetricValue(podsEvaluated)
	read("pods_evaluated_total", v, err)
	v, err = testutil.GetCounterMetricValue(podsInjected)
	read("pods_injected_total", v, err)
	for _, kind := range []string{podPresetKind, clusterPodPresetKind} {
		v, err = testutil.GetCounterMetricValue(presetsApplied.WithLabelValues(kind))
		read("presets_applied_total{kind="+kind+"}", v, err)
	}
	v, err = testutil.GetCounterMetricValue(conflicts)
	read("conflicts_total", v, err)
	for _, mode := range []settingsv1alpha1.Mode{settingsv1alpha1.ModeWarn, settingsv1alpha1.ModeAudit} {
		v, err = testutil.GetCounterMetricValue(unenforcedChanges.WithLabelValues(string(mode)))
		read("unenforced_changes_total{mode="+string(mode)+"}", v, err)
	}
	v, err = testutil.GetCounterMetricValue(notSyncedRefusals)
	read("not_synced_refusals_total", v, err)
	return values
}

// Each case admits one pod create and checks how much every counter moved:
// the counters it should move by exactly that much, all others not at all.
func TestMetricsCounters(t *testing.T) {
	matching := podPreset("env", securityS2, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "FROM_PRESET", Value: "1"}}})
	other := podPreset("other", securityS3, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "OTHER", Value: "1"}}})
	cluster := clusterPodPreset("everywhere", everything, everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "FROM_CLUSTER", Value: "1"}}})
	conflicting := podPreset("conflict", securityS2, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "abc", Value: "not value2"}}})

	cases := []counterCase{
		{
			name: "a PodPreset and a ClusterPodPreset applied",
			objs: []runtime.Object{matching, other, cluster},
			pod:  testPod,
			want: map[string]float64{"pods_evaluated_total": 1, "pods_injected_total": 1,
				"presets_applied_total{kind=PodPreset}": 1, "presets_applied_total{kind=ClusterPodPreset}": 1},
		},
		{
			name: "no preset selects the pod",
			objs: []runtime.Object{other},
			pod:  testPod,
			want: map[string]float64{"pods_evaluated_total": 1},
		},
		{
			name: "conflict",
			objs: []runtime.Object{matching, conflicting},
			pod:  testPod,
			want: map[string]float64{"pods_evaluated_total": 1, "conflicts_total": 1},
		},
		{
			name: "a preset in Warn mode and one in Audit mode would change the pod",
			objs: []runtime.Object{withMode(settingsv1alpha1.ModeWarn, matching), withMode(settingsv1alpha1.ModeAudit, cluster)},
			pod:  testPod,
			want: map[string]float64{"pods_evaluated_total": 1,
				"unenforced_changes_total{mode=Warn}": 1, "unenforced_changes_total{mode=Audit}": 1},
		},
		{
			name: "excluded pod is not evaluated",
			objs: []runtime.Object{matching},
			pod: func() *corev1.Pod {
				pod := testPod()
				pod.Annotations = map[string]string{ExcludeAnnotation: "true"}
				return pod
			},
			want: map[string]float64{},
		},
		{
			name:      "refused before the cache synced",
			objs:      []runtime.Object{matching},
			pod:       testPod,
			notSynced: true,
			wantErr:   true,
			want:      map[string]float64{"not_synced_refusals_total": 1},
		},
	}
	for _, tc := range cases {
		// kube-apiserver invokes the plugin a second time on the same
		// request when a webhook or policy changed the pod after it: the
		// request still counts once.
		for _, invocations := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%d invocations", tc.name, invocations), func(t *testing.T) { runCounterCase(t, tc, invocations) })
		}
	}
}

// counterCase is a case of TestMetricsCounters.
type counterCase struct {
	name      string
	objs      []runtime.Object
	pod       func() *corev1.Pod
	notSynced bool
	wantErr   bool
	want      map[string]float64
}

// runCounterCase admits tc's pod create, invoking the plugin invocations
// times, and checks how far the counters moved.
func runCounterCase(t *testing.T, tc counterCase, invocations int) {
	p, _ := newTestPlugin(t, tc.objs...)
	if tc.notSynced {
		p.synced = []cache.InformerSynced{func() bool { return false }}
	}
	before := counterValues(t)
	attrs := admission.NewAttributesRecord(tc.pod(), nil, corev1.SchemeGroupVersion.WithKind("Pod"), testNamespace, "",
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	for range invocations {
		err := p.Admit(context.Background(), attrs, nil)
		if (err != nil) != tc.wantErr {
			t.Fatalf("error = %v, want an error: %v", err, tc.wantErr)
		}
		if err != nil {
			break // a refusal ends the request: nothing is reinvoked
		}
	}
	if diff := cmp.Diff(tc.want, counterChanges(t, before)); diff != "" {
		t.Errorf("counter changes (-want +got):\n%s", diff)
	}
}

// counterChanges is how far each counter moved since before, leaving out
// those that did not move.
func counterChanges(t *testing.T, before map[string]float64) map[string]float64 {
	t.Helper()
	moved := map[string]float64{}
	for name, v := range counterValues(t) {
		if d := v - before[name]; d != 0 {
			moved[name] = d
		}
	}
	return moved
}

// TestReinvocation runs the plugin twice on one request, as kube-apiserver
// does after a MutatingAdmissionPolicy changed the pod between the runs:
// the second run applies the presets that match only now, and the request
// counts each pod, preset and conflict once, with one conflict Event.
func TestReinvocation(t *testing.T) {
	fromStart := podPreset("from-start", securityS2, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "FROM_START", Value: "1"}}})
	byPolicy := podPreset("by-policy", metav1.LabelSelector{MatchLabels: map[string]string{"policy": "added"}},
		settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "BY_POLICY", Value: "1"}}})
	conflictsByPolicy := podPreset("conflicts-by-policy", metav1.LabelSelector{MatchLabels: map[string]string{"policy": "added"}},
		settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "abc", Value: "not value2"}}})
	conflicting := podPreset("conflict", securityS2, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "abc", Value: "not value2"}}})
	addLabel := func(pod *corev1.Pod) { pod.Labels["policy"] = "added" }
	changeImage := func(pod *corev1.Pod) { pod.Spec.Containers[0].Image = "changed-by-policy" }

	cases := []struct {
		name       string
		objs       []runtime.Object
		policy     func(*corev1.Pod) // what a policy does between the runs
		wantEnv    []string          // env names of the first container, after both runs
		wantCount  map[string]float64
		wantEvents int
	}{
		{
			name: "a preset the policy made match", objs: []runtime.Object{fromStart, byPolicy}, policy: addLabel,
			wantEnv:   []string{"abc", "ABC", "FROM_START", "BY_POLICY"},
			wantCount: map[string]float64{"pods_evaluated_total": 1, "pods_injected_total": 1, "presets_applied_total{kind=PodPreset}": 2},
		},
		{
			name: "the same presets both times", objs: []runtime.Object{fromStart}, policy: changeImage,
			wantEnv:   []string{"abc", "ABC", "FROM_START"},
			wantCount: map[string]float64{"pods_evaluated_total": 1, "pods_injected_total": 1, "presets_applied_total{kind=PodPreset}": 1},
		},
		{
			name: "a conflict both times", objs: []runtime.Object{fromStart, conflicting}, policy: changeImage,
			wantEnv:    []string{"abc", "ABC"},
			wantCount:  map[string]float64{"pods_evaluated_total": 1, "conflicts_total": 1},
			wantEvents: 1,
		},
		{
			name: "a conflict only the policy brought", objs: []runtime.Object{fromStart, conflictsByPolicy}, policy: addLabel,
			wantEnv:    []string{"abc", "ABC", "FROM_START"},
			wantCount:  map[string]float64{"pods_evaluated_total": 1, "pods_injected_total": 1, "presets_applied_total{kind=PodPreset}": 1, "conflicts_total": 1},
			wantEvents: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, events := newTestPlugin(t, tc.objs...)
			pod := testPod()
			before := counterValues(t)
			attrs := admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), testNamespace, "",
				corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
			if err := p.Admit(context.Background(), attrs, nil); err != nil {
				t.Fatal(err)
			}
			tc.policy(pod)
			attrs.GetReinvocationContext().SetIsReinvoke()
			if err := p.Admit(context.Background(), attrs, nil); err != nil {
				t.Fatal(err)
			}
			var env []string
			for _, e := range pod.Spec.Containers[0].Env {
				env = append(env, e.Name)
			}
			if diff := cmp.Diff(tc.wantEnv, env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCount, counterChanges(t, before)); diff != "" {
				t.Errorf("counter changes (-want +got):\n%s", diff)
			}
			if got := len(events.Events); got != tc.wantEvents {
				t.Errorf("%d Events recorded, want %d", got, tc.wantEvents)
			}
		})
	}
}

// The gauge follows the index through adds, updates and deletes.
func TestMetricsPresetsGauge(t *testing.T) {
	gauge := func(t *testing.T, kind string) float64 {
		t.Helper()
		v, err := testutil.GetGaugeMetricValue(presetsIndexed.WithLabelValues(kind))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := podPreset("a", everything, settingsv1alpha1.PodPresetSpec{})
	b := podPreset("b", everything, settingsv1alpha1.PodPresetSpec{})
	elsewhere := podPreset("a", everything, settingsv1alpha1.PodPresetSpec{})
	elsewhere.Namespace = "elsewhere"
	c := clusterPodPreset("c", everything, everything, settingsv1alpha1.PodPresetSpec{})
	p, _ := newTestPlugin(t, a, b, elsewhere, c)

	steps := []struct {
		name                string
		change              func()
		podPresets, cluster float64
	}{
		{name: "initial", change: func() {}, podPresets: 3, cluster: 1},
		{name: "update counts once", change: func() { p.index.upsert(a.DeepCopy()) }, podPresets: 3, cluster: 1},
		{name: "delete a PodPreset", change: func() { p.index.remove(b) }, podPresets: 2, cluster: 1},
		{name: "delete an unknown preset", change: func() { p.index.remove(b) }, podPresets: 2, cluster: 1},
		{name: "delete the ClusterPodPreset", change: func() { p.index.remove(cache.DeletedFinalStateUnknown{Obj: c}) }, podPresets: 2, cluster: 0},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.change()
			if got := gauge(t, podPresetKind); got != step.podPresets {
				t.Errorf("PodPreset gauge = %v, want %v", got, step.podPresets)
			}
			if got := gauge(t, clusterPodPresetKind); got != step.cluster {
				t.Errorf("ClusterPodPreset gauge = %v, want %v", got, step.cluster)
			}
		})
	}
}
