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

package locationmutator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/component-base/metrics/testutil"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

var allStates = []string{stateEnforced, stateError, stateConflict}

// ingestionValues reads, for every state, the config source's mutators
// gauge, ingestion counter and ingestion histogram's count.
func ingestionValues(t *testing.T) map[string]float64 {
	t.Helper()
	values := map[string]float64{}
	for _, state := range allStates {
		g, err := testutil.GetGaugeMetricValue(mutatorsGauge.WithLabelValues(sourceConfig, state))
		if err != nil {
			t.Fatal(err)
		}
		values["mutators{"+state+"}"] = g
		c, err := testutil.GetCounterMetricValue(ingestions.WithLabelValues(sourceConfig, state))
		if err != nil {
			t.Fatal(err)
		}
		values["ingestions_total{"+state+"}"] = c
		n, err := testutil.GetHistogramMetricCount(ingestionDuration.WithLabelValues(sourceConfig, state))
		if err != nil {
			t.Fatal(err)
		}
		values["ingestion_duration_seconds_count{"+state+"}"] = float64(n)
	}
	return values
}

func TestMetricsIngestion(t *testing.T) {
	invalid := strings.Replace(pullAlways, `"spec.containers[name:*].imagePullPolicy"`, `"spec.containers["`, 1)
	asObject := strings.NewReplacer("always-pull", "as-object", `"spec.containers[name:*].imagePullPolicy"`, "spec.containers.imagePullPolicy").Replace(pullAlways)
	cases := []struct {
		name    string
		config  string
		wantErr bool
		// gauges are the mutators gauge's values after the configuration;
		// taken is how much the counter and the histogram's count moved.
		gauges, taken map[string]float64
	}{
		{
			name:   "all enforced",
			config: config(pullAlways, ownerLabel),
			gauges: map[string]float64{stateEnforced: 2, stateError: 0, stateConflict: 0},
			taken:  map[string]float64{stateEnforced: 2},
		},
		{
			name:    "an invalid mutator refuses the configuration",
			config:  config(invalid, ownerLabel),
			wantErr: true,
			gauges:  map[string]float64{stateEnforced: 0, stateError: 1, stateConflict: 0},
			taken:   map[string]float64{stateError: 1},
		},
		{
			name:    "a schema conflict",
			config:  config(pullAlways, asObject, ownerLabel),
			wantErr: true,
			gauges:  map[string]float64{stateEnforced: 0, stateError: 0, stateConflict: 2},
			taken:   map[string]float64{stateConflict: 2},
		},
		{
			name:    "a duplicate and an invalid mutator",
			config:  config(pullAlways, pullAlways, invalid),
			wantErr: true,
			gauges:  map[string]float64{stateEnforced: 0, stateError: 1, stateConflict: 2},
			taken:   map[string]float64{stateError: 1, stateConflict: 2},
		},
		{
			name:   "no mutators",
			config: config(),
			gauges: map[string]float64{stateEnforced: 0, stateError: 0, stateConflict: 0},
			taken:  map[string]float64{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := ingestionValues(t)
			if _, err := systemFromConfig(strings.NewReader(tc.config)); (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want an error: %v", err, tc.wantErr)
			}
			after := ingestionValues(t)
			want := map[string]float64{}
			for _, state := range allStates {
				want["mutators{"+state+"}"] = tc.gauges[state]
				want["ingestions_total{"+state+"}"] = before["ingestions_total{"+state+"}"] + tc.taken[state]
				want["ingestion_duration_seconds_count{"+state+"}"] = before["ingestion_duration_seconds_count{"+state+"}"] + tc.taken[state]
			}
			if diff := cmp.Diff(want, after); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMetricsLive records passes of the live source: the gauge is the
// resolver's count of each state, and only the objects decoded in this pass
// count as taken in, each in its state (an overridden one is a conflict).
func TestMetricsLive(t *testing.T) {
	registerMetrics()
	valid := &liveMutator{uid: "a", took: time.Millisecond, outcome: outcome{enforced: true}}
	invalid := &liveMutator{uid: "b", took: time.Millisecond, outcome: outcome{errorType: errorTypeInvalid}}
	overridden := &liveMutator{uid: "d", took: time.Millisecond, outcome: outcome{errorType: errorTypeOverridden}}
	states := map[string]int{stateEnforced: 1, stateError: 1, stateConflict: 2}
	counts := func() map[string]float64 {
		out := map[string]float64{}
		for _, state := range allStates {
			g, err := testutil.GetGaugeMetricValue(mutatorsGauge.WithLabelValues(sourceAPI, state))
			if err != nil {
				t.Fatal(err)
			}
			c, err := testutil.GetCounterMetricValue(ingestions.WithLabelValues(sourceAPI, state))
			if err != nil {
				t.Fatal(err)
			}
			out["mutators{"+state+"}"], out["ingestions_total{"+state+"}"] = g, c
		}
		return out
	}
	before := counts()
	reportLive([]*liveMutator{valid, invalid, overridden}, states)
	want := map[string]float64{
		"mutators{enforced}": 1, "mutators{error}": 1, "mutators{conflict}": 2,
		"ingestions_total{enforced}": before["ingestions_total{enforced}"] + 1,
		"ingestions_total{error}":    before["ingestions_total{error}"] + 1,
		"ingestions_total{conflict}": before["ingestions_total{conflict}"] + 1,
	}
	if diff := cmp.Diff(want, counts()); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// requestValues reads the per-request metrics.
func requestValues(t *testing.T) map[string]float64 {
	t.Helper()
	mutated, err := testutil.GetCounterMetricValue(objectsMutated)
	if err != nil {
		t.Fatal(err)
	}
	refused, err := testutil.GetCounterMetricValue(notConvergedRefusals)
	if err != nil {
		t.Fatal(err)
	}
	passes, err := testutil.GetHistogramMetricCount(convergencePasses.ObserverMetric)
	if err != nil {
		t.Fatal(err)
	}
	passesSum, err := testutil.GetHistogramMetricValue(convergencePasses.ObserverMetric)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]float64{
		"objects_mutated_total":        mutated,
		"not_converged_refusals_total": refused,
		"convergence_passes_count":     float64(passes),
		"convergence_passes_sum":       passesSum,
	}
}

func delta(before, after map[string]float64) map[string]float64 {
	moved := map[string]float64{}
	for name, v := range after {
		if d := v - before[name]; d != 0 {
			moved[name] = d
		}
	}
	return moved
}

func TestMetricsRequests(t *testing.T) {
	excluded := threeContainerPod()
	excluded.Namespace = "kube-system"
	cases := []struct {
		name string
		obj  runtime.Object
		want map[string]float64
	}{
		// One pass sets the pull policies, and proves that another would
		// change nothing.
		{name: "mutated, typed", obj: threeContainerPod(),
			want: map[string]float64{"objects_mutated_total": 1, "convergence_passes_count": 1, "convergence_passes_sum": 1}},
		{name: "mutated, unstructured", obj: asUnstructured(t, threeContainerPod()),
			want: map[string]float64{"objects_mutated_total": 1, "convergence_passes_count": 1, "convergence_passes_sum": 1}},
		{name: "no mutator matches", obj: excluded, want: map[string]float64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, config(pullAlways))
			o := admission.NewObjectInterfacesFromScheme(testScheme(t))
			before := requestValues(t)
			accessor, err := meta.Accessor(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Admit(context.Background(), attrs(tc.obj, podGVK, podGVR, accessor.GetNamespace(), accessor.GetName(), admission.Create, ""), o); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, delta(before, requestValues(t))); diff != "" {
				t.Errorf("metric changes (-want +got):\n%s", diff)
			}
		})
	}
}

// No manifest can make an object that never converges (the mutation
// package's tests build one by hand), so the refusal is tested where the
// plugin turns the mutators' error into the request's.
func TestMetricsNotConvergedRefusals(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want map[string]float64
	}{
		{name: "not converging", err: fmt.Errorf("%w: Pod prod/web still changed after 3 passes, by Assign/a", mutation.ErrNotConverging),
			want: map[string]float64{"not_converged_refusals_total": 1}},
		{name: "another error", err: errors.New("Assign/a: spec.containers: not a list"), want: map[string]float64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := threeContainerPod()
			before := requestValues(t)
			err := refuse(attrs(pod, podGVK, podGVR, pod.Namespace, pod.Name, admission.Create, ""), tc.err)
			if !strings.Contains(err.Error(), tc.err.Error()) {
				t.Errorf("refusal %q does not carry %q", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, delta(before, requestValues(t))); diff != "" {
				t.Errorf("metric changes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReinvocation runs the plugin twice on one request, as kube-apiserver
// does when a MutatingAdmissionPolicy changed the object after it: the
// request counts once, and what the second run changed is recorded under
// its own audit annotation, since the first cannot be overwritten.
func TestReinvocation(t *testing.T) {
	resetPullPolicy := func(pod *corev1.Pod) { pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever }
	addLabel := func(pod *corev1.Pod) { pod.Labels["policy"] = "added" }
	cases := []struct {
		name          string
		policy        func(*corev1.Pod) // what a policy does between the runs
		want          map[string]float64
		wantReinvoked string
	}{
		{name: "the policy changes nothing the mutators set", policy: addLabel,
			want: map[string]float64{"objects_mutated_total": 1, "convergence_passes_count": 1, "convergence_passes_sum": 1}},
		{name: "the policy undoes a mutation", policy: resetPullPolicy,
			want:          map[string]float64{"objects_mutated_total": 1, "convergence_passes_count": 1, "convergence_passes_sum": 1},
			wantReinvoked: "Assign/always-pull"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, config(pullAlways))
			o := admission.NewObjectInterfacesFromScheme(testScheme(t))
			pod := threeContainerPod()
			a := record(attrs(pod, podGVK, podGVR, pod.Namespace, pod.Name, admission.Create, ""))
			before := requestValues(t)
			if err := p.Admit(context.Background(), a, o); err != nil {
				t.Fatal(err)
			}
			tc.policy(pod)
			a.GetReinvocationContext().SetIsReinvoke()
			if err := p.Admit(context.Background(), a, o); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, delta(before, requestValues(t))); diff != "" {
				t.Errorf("metric changes (-want +got):\n%s", diff)
			}
			if got := a.annotations[AnnotationKey]; got != "Assign/always-pull" {
				t.Errorf("%s = %q", AnnotationKey, got)
			}
			if got := a.annotations[ReinvocationAnnotationKey]; got != tc.wantReinvoked {
				t.Errorf("%s = %q, want %q", ReinvocationAnnotationKey, got, tc.wantReinvoked)
			}
			if pod.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
				t.Errorf("imagePullPolicy %q after the second run", pod.Spec.Containers[0].ImagePullPolicy)
			}
		})
	}
}
