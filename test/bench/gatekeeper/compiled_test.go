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

package gatekeeper

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// compileSources reads mutators as the LocationMutator does (its own
// decoder) and presets as the PodPreset plugin does (typed, with their
// defaults), the input plugin/compiler takes.
func compileSources(t *testing.T, mutators, presets []*unstructured.Unstructured) compiler.Sources {
	t.Helper()
	var src compiler.Sources
	for _, m := range mutators {
		data, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		decoded, errs := mutation.DecodeJSON(data)
		if len(errs) > 0 {
			t.Fatalf("%s %s: %v", m.GetKind(), m.GetName(), errs.ToAggregate())
		}
		src.Mutators = append(src.Mutators, decoded)
	}
	scheme := runtime.NewScheme()
	if err := settingsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, p := range presets {
		var preset settingsv1alpha1.PodPreset
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(p.Object, &preset); err != nil {
			t.Fatalf("PodPreset %s/%s: %v", p.GetNamespace(), p.GetName(), err)
		}
		scheme.Default(&preset)
		src.PodPresets = append(src.PodPresets, preset)
	}
	return src
}

// compiledBench is what plugin/compiler made of the benchmark's ten
// mutators and five presets.
type compiledBench struct {
	result compiler.Result
	// presets and mutators are how many of each the policies carry.
	presets, mutators int
	// checks say what a pod lacks of each object the policies carry:
	// only those, so that a run before every object compiles measures
	// what did, and says so in its scenario's name.
	checks []func(pod *corev1.Pod) []string
}

// compileBench compiles the benchmark's mutators and presets and logs
// every object the compiler refused, with its reasons.
func compileBench(t *testing.T, mutators, presets []*unstructured.Unstructured) compiledBench {
	t.Helper()
	c := compiledBench{result: compiler.Compile(compileSources(t, mutators, presets))}
	for _, r := range c.result.Refused {
		t.Logf("not compiled: %s %s/%s: %v", r.Source.Kind, r.Source.Namespace, r.Source.Name, r.Errs.ToAggregate())
	}
	for _, s := range c.result.Compiled {
		switch s.Kind {
		case "PodPreset":
			var index int
			if _, err := fmt.Sscanf(s.Name, "preset-%d", &index); err != nil {
				t.Fatalf("compiled %s %s/%s is not one of benchPresets", s.Kind, s.Namespace, s.Name)
			}
			c.checks = append(c.checks, func(pod *corev1.Pod) []string { return presetAppliedProblems(pod, index) })
			c.presets++
		default:
			check, ok := mutatorChecks[s.Name]
			if !ok {
				t.Fatalf("compiled %s %s is not one of %s", s.Kind, s.Name, tenMutatorsFile)
			}
			c.checks = append(c.checks, check)
			c.mutators++
		}
	}
	if len(c.checks) == 0 {
		t.Fatalf("plugin/compiler compiled none of the %d mutators and %d presets (refusals logged above)", len(mutators), len(presets))
	}
	return c
}

// problems is what pod lacks of what the policies carry.
func (c compiledBench) problems(pod *corev1.Pod) []string {
	var problems []string
	for _, check := range c.checks {
		problems = append(problems, check(pod)...)
	}
	return problems
}

// lacking says, per object the policies carry, whether pod lacks its
// mutation.
func (c compiledBench) lacking(pod *corev1.Pod) []bool {
	out := make([]bool, len(c.checks))
	for i, check := range c.checks {
		out[i] = len(check(pod)) > 0
	}
	return out
}

// name is the scenario's, saying what the policies carry.
func (c compiledBench) name() string {
	return fmt.Sprintf("compiled: %d presets, %d mutators", c.presets, c.mutators)
}

// policyObjects are r's policies, then their bindings, in the order they
// are created (a binding names its policy).
func policyObjects(r compiler.Result) []client.Object {
	var out []client.Object
	for i := range r.MutatingPolicies {
		out = append(out, &r.MutatingPolicies[i])
	}
	for i := range r.ValidatingPolicies {
		out = append(out, &r.ValidatingPolicies[i])
	}
	for i := range r.MutatingBindings {
		out = append(out, &r.MutatingBindings[i])
	}
	for i := range r.ValidatingBindings {
		out = append(out, &r.ValidatingBindings[i])
	}
	return out
}

// installPolicies creates r's policies and bindings on s. kube-apiserver
// acts on them a moment later.
func installPolicies(t *testing.T, s *stockServer, r compiler.Result) {
	t.Helper()
	for _, o := range policyObjects(r) {
		if err := s.objects.Create(context.Background(), o.DeepCopyObject().(client.Object)); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// deletePolicies deletes r's policies and bindings from s.
func deletePolicies(t *testing.T, s *stockServer, r compiler.Result) {
	t.Helper()
	for _, o := range policyObjects(r) {
		if err := s.objects.Delete(context.Background(), o.DeepCopyObject().(client.Object)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting %T %s: %v", o, o.GetName(), err)
		}
	}
}

// remove deletes the policies and bindings from s and waits until a
// dry-run pod lacks again what it lacked before they were installed
// (bareLacking, from lacking), so that what was measured is proven to be
// the policies' doing.
func (c compiledBench) remove(t *testing.T, s *stockServer, bareLacking []bool) {
	t.Helper()
	ctx := context.Background()
	deletePolicies(t, s, c.result)
	var last []bool
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err := dryRunPod(ctx, s)
		if err != nil {
			return false, nil
		}
		last = c.lacking(pod)
		return slices.Equal(last, bareLacking), nil
	})
	if err != nil {
		t.Fatalf("the compiled policies still act after their removal: %v (per object, lacking its mutation: %v, before install: %v)", err, last, bareLacking)
	}
}

// dryRunPod is the benchmark's pod as s would store it now.
func dryRunPod(ctx context.Context, s *stockServer) (*corev1.Pod, error) {
	return s.client.CoreV1().Pods(latencyNamespace).Create(ctx, benchPod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}
