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

package compiler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/compilertest"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// podAssign is an Assign of value at location in every pod, with the
// pathTests given (a YAML flow list, or "[]").
func podAssign(t testing.TB, name, location, value, pathTests string) *mutation.Mutator {
	t.Helper()
	m, err := mutation.Decode(fmt.Appendf(nil, `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: %s}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: %q
  parameters: {assign: {value: %s}, pathTests: %s}
`, name, location, value, pathTests))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// podAssignMetadata is an AssignMetadata of value at location in every
// pod.
func podAssignMetadata(t testing.TB, name, location, value string) *mutation.Mutator {
	t.Helper()
	m, err := mutation.Decode(fmt.Appendf(nil, `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: %s}
spec:
  match: {kinds: [{apiGroups: [""], kinds: [Pod]}]}
  location: %q
  parameters: {assign: {value: %s}}
`, name, location, value))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mutationsOf are the names of the mutators each mutation of the compiled
// mutators' policy carries, told by the value each assigns (a name of its
// own in these tests).
func mutationsOf(t *testing.T, r compiler.Result, values ...string) [][]string {
	t.Helper()
	if len(r.MutatingPolicies) != 1 || len(r.Refused) > 0 {
		t.Fatalf("compiled %v, refused %v", r.Compiled, r.Refused)
	}
	var out [][]string
	for _, m := range r.MutatingPolicies[0].Spec.Mutations {
		var in []string
		for _, v := range values {
			if strings.Contains(m.JSONPatch.Expression, fmt.Sprintf("%q", v)) {
				in = append(in, v)
			}
		}
		out = append(out, in)
	}
	return out
}

// TestMutatorBatches checks which consecutive mutators share a mutation:
// those whose locations part, even below a field both may create, and not
// those that may both append one element, nor one that may create a field
// the other tests. Each set must still give the plugin's pod, on pods
// where the parents are there and where they are missing.
func TestMutatorBatches(t *testing.T) {
	for _, tc := range []struct {
		name string
		ms   []*mutation.Mutator
		want string
	}{{
		// Both append to env, and both create it where it is missing:
		// each adds it empty before either appends.
		name: "both may create env",
		ms: []*mutation.Mutator{
			podAssign(t, "a", "spec.containers[name:*].env[name:A].value", "va", "[]"),
			podAssign(t, "b", "spec.containers[name:*].env[name:B].value", "vb", "[]"),
		},
		want: "[[va vb]]",
	}, {
		// Only the first may create env; after it, the second would
		// write into the env it created, where the batch's object has
		// none to pass the second's test.
		name: "one may create env the other must find",
		ms: []*mutation.Mutator{
			podAssign(t, "a", "spec.containers[name:*].env[name:A].value", "va", "[]"),
			podAssign(t, "b", "spec.containers[name:*].env[name:B].value", "vb", "[{subPath: 'spec.containers[name:*].env', condition: MustExist}]"),
		},
		want: "[[va] [vb]]",
	}, {
		// They part at the containers' fields, below a glob, which
		// creates nothing above it.
		name: "different fields of each container",
		ms: []*mutation.Mutator{
			podAssign(t, "a", "spec.containers[name:*].workingDir", "wa", "[]"),
			podAssign(t, "b", "spec.containers[name:*].terminationMessagePath", "tb", "[]"),
			podAssign(t, "c", "spec.containers[name:*].securityContext.seLinuxOptions.user", "uc", "[]"),
		},
		want: "[[wa tb uc]]",
	}, {
		// Both may create the labels.
		name: "both may create labels",
		ms: []*mutation.Mutator{
			podAssignMetadata(t, "a", "metadata.labels.a", "la"),
			podAssignMetadata(t, "b", "metadata.labels.b", "lb"),
		},
		want: "[[la lb]]",
	}, {
		name: "a label and an annotation",
		ms: []*mutation.Mutator{
			podAssignMetadata(t, "a", "metadata.annotations.a", "aa"),
			podAssignMetadata(t, "b", "metadata.labels.b", "lb"),
		},
		want: "[[aa lb]]",
	}, {
		// The first may create spec (the compiler does not assume that a
		// pod always has one), the others write beside it.
		name: "one may create spec",
		ms: []*mutation.Mutator{
			podAssign(t, "a", "spec.containers[name:*].workingDir", "wa", "[]"),
			podAssign(t, "b", "spec.hostname", "hb", "[]"),
			podAssign(t, "c", "spec.subdomain", "sc", "[]"),
		},
		want: "[[wa hb sc]]",
	}, {
		// The first creates the security context and a field in it, the
		// second the security context again: applied in run order, the
		// second's empty context would replace the first's field before
		// the first wrote into it; creations go shallowest first.
		name: "creations at two depths",
		ms: []*mutation.Mutator{
			podAssign(t, "a", "spec.securityContext.seLinuxOptions.user", "ua", "[]"),
			podAssign(t, "b", "spec.securityContext.supplementalGroupsPolicy", "gb", "[]"),
		},
		want: "[[ua gb]]",
	}, {
		// Both may append the container side; after the first, the
		// second would write into it.
		name: "both may append one element",
		ms: []*mutation.Mutator{
			podAssign(t, "a", "spec.containers[name:side].image", "ia", "[]"),
			podAssign(t, "b", "spec.containers[name:side].workingDir", "wb", "[]"),
		},
		want: "[[ia] [wb]]",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := compileCase(t, tc.ms)
			var values []string
			for _, m := range tc.ms {
				a, _ := m.Assignment()
				values = append(values, fmt.Sprint(a.Value))
			}
			if got := fmt.Sprint(mutationsOf(t, c.result, values...)); got != tc.want {
				t.Errorf("mutations carry %s, want %s", got, tc.want)
			}
			for _, pod := range append(fuzzPods(12), batchPods()...) {
				for _, ns := range namespaces[:2] {
					if diff, ok := agree(t, c, podRequest(pod, ns)); !ok {
						t.Fatalf("pod %s in %s: %s", pod.Name, ns.Name, diff)
					}
				}
			}
		})
	}
}

// batchPods have containers with env and without, and a security context
// or none.
func batchPods() []*corev1.Pod {
	with := corev1.Container{Name: "with", Image: "x", Env: []corev1.EnvVar{{Name: "B", Value: "old"}}, SecurityContext: &corev1.SecurityContext{}}
	without := corev1.Container{Name: "without", Image: "x"}
	return []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "mixed"}, Spec: corev1.PodSpec{Containers: []corev1.Container{with, without}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bare"}, Spec: corev1.PodSpec{Containers: []corev1.Container{without}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "empty-env"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "e", Image: "x", Env: []corev1.EnvVar{}}}}},
	}
}

// BenchmarkTenMutators is one create of the benchmark's pod (three
// containers, in namespace prod) through the policy the ten pod mutators
// of test/bench/gatekeeper compile into, in-process; it reports the
// policy's mutations, each of which costs kube-apiserver a round of the
// pod through JSON.
func BenchmarkTenMutators(b *testing.B) {
	ms := testdataMutators(&testing.T{}, "ten-pod-mutators.yaml")
	r := compiler.Compile(compiler.Sources{Mutators: ms})
	if len(r.Compiled) != len(ms) || len(r.MutatingPolicies) != 1 {
		b.Fatalf("compiled %v, refused %v", r.Compiled, r.Refused)
	}
	runner, err := compilertest.New(r, namespaces...)
	if err != nil {
		b.Fatal(err)
	}
	defer runner.Close()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "a"}}}
	for i := range 3 {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: fmt.Sprintf("c%d", i), Image: "registry.example/app:v1", Args: []string{"--alsologtostderr", "--v=2"},
		})
	}
	for b.Loop() {
		if _, _, _, err := runner.Admit(context.Background(), pod.DeepCopy(), admission.Create, "prod"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(r.MutatingPolicies[0].Spec.Mutations)), "mutations")
}
