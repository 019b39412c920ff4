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

package mutation

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitkit/admitkit/plugin/internal/scalebenchtest"
	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
)

func modifySet(b *testing.B, location, op string, values []any) *Mutator {
	var vs []mutationsv1.Value
	for _, v := range values {
		vs = append(vs, mutationsv1.Value{Value: v})
	}
	m, errs := newModifySet(&mutationsv1.ModifySet{ObjectMeta: metav1.ObjectMeta{Name: "set"}, Spec: mutationsv1.ModifySetSpec{ApplyTo: fuzzApplyTo, Location: location,
		Parameters: mutationsv1.ModifySetParameters{Operation: op, Values: mutationsv1.Values{FromList: vs}}}})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	return m
}

// A ModifySet of n values on a list of n, half of them already there:
// merged and pruned on an unstructured object, and merged into a typed
// container's args.
func BenchmarkModifySetScale(b *testing.B) {
	for _, n := range scalebenchtest.Sizes {
		list := make([]any, n)
		values := make([]any, n)
		args := make([]string, n)
		for i := range list {
			list[i] = fmt.Sprintf("--flag-%d", i)
			values[i] = fmt.Sprintf("--flag-%d", i+n/2)
			args[i] = list[i].(string)
		}
		merge := modifySet(b, "spec.args", mutationsv1.OperationMerge, values)
		prune := modifySet(b, "spec.args", mutationsv1.OperationPrune, values)
		// list is full (len == cap): a merge appends to a new array and
		// leaves it as it is for the next round.
		b.Run(fmt.Sprintf("merge/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() {
				if changed, err := merge.mutate(map[string]any{"spec": map[string]any{"args": list}}, requestMeta{}); err != nil || !changed {
					b.Fatal(changed, err)
				}
			})
		})
		b.Run(fmt.Sprintf("prune/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() {
				if changed, err := prune.mutate(map[string]any{"spec": map[string]any{"args": list}}, requestMeta{}); err != nil || !changed {
					b.Fatal(changed, err)
				}
			})
		})
		typed := modifySet(b, "spec.containers[name: c].args", mutationsv1.OperationMerge, values)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
		target := typedTarget(pod, podTarget().GVK)
		b.Run(fmt.Sprintf("typed-merge/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() {
				pod.Spec.Containers[0].Args = args
				if res, err := Mutate([]*Mutator{typed}, pod, target, Options{}); err != nil || !res.Mutated() {
					b.Fatal(res, err)
				}
			})
		})
	}
}

// containersObject is an unstructured pod spec with n containers, c0 to
// c<n-1>, each already pulling Always.
func containersObject(n int) map[string]any {
	containers := make([]any, n)
	for i := range containers {
		containers[i] = map[string]any{"name": fmt.Sprintf("c%d", i), "image": "nginx", "imagePullPolicy": "Always"}
	}
	return map[string]any{"spec": map[string]any{"containers": containers}}
}

// Keyed-list selection and pathTests over a list of n elements: the last
// element selected by key (with and without a MustExist on it, and one
// that must not exist, which stops the walk), and every element through
// a glob.
func BenchmarkKeyedListScale(b *testing.B) {
	for _, n := range scalebenchtest.Sizes {
		o := containersObject(n)
		last := fmt.Sprintf("spec.containers[name: c%d]", n-1)
		cases := map[string]*Mutator{
			"keyed":                 assign(b, "a", last+".imagePullPolicy", "Always"),
			"keyed-mustexist":       assign(b, "a", last+".imagePullPolicy", "Always", "MustExist "+last),
			"keyed-mustnotexist":    assign(b, "a", last+".imagePullPolicy", "Always", "MustNotExist "+last),
			"glob":                  assign(b, "a", "spec.containers[name: *].imagePullPolicy", "Always"),
			"glob-mustexist-policy": assign(b, "a", "spec.containers[name: *].imagePullPolicy", "Always", "MustExist spec.containers[name: *].imagePullPolicy"),
		}
		for _, name := range []string{"keyed", "keyed-mustexist", "keyed-mustnotexist", "glob", "glob-mustexist-policy"} {
			m := cases[name]
			b.Run(fmt.Sprintf("%s/items-%d", name, n), func(b *testing.B) {
				scalebenchtest.PerItem(b, n, func() {
					if changed, err := m.mutate(o, requestMeta{}); err != nil || changed {
						b.Fatal(changed, err)
					}
				})
			})
		}
	}
}

// AssignMetadata on an object with n labels and n annotations, adding one
// label (taken away again after each round) and finding another already
// set; and the whole system, whose passes read the labels again.
func BenchmarkAssignMetadataScale(b *testing.B) {
	for _, n := range scalebenchtest.Sizes {
		labels := map[string]any{}
		annotations := map[string]any{}
		for i := 0; i < n; i++ {
			labels[fmt.Sprintf("label-%d", i)] = "v"
			annotations[fmt.Sprintf("annotation-%d", i)] = "v"
		}
		o := map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}}
		add := assignMetadata(b, "metadata.labels.owner", "team")
		present := assignMetadata(b, "metadata.annotations.annotation-0", "other")
		sys, err := NewSystem([]*Mutator{add, present})
		if err != nil {
			b.Fatal(err)
		}
		target := podTarget()
		b.Run(fmt.Sprintf("add/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() {
				if changed, err := add.mutate(o, requestMeta{}); err != nil || !changed {
					b.Fatal(changed, err)
				}
				delete(labels, "owner")
			})
		})
		b.Run(fmt.Sprintf("present/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() {
				if changed, err := present.mutate(o, requestMeta{}); err != nil || changed {
					b.Fatal(changed, err)
				}
			})
		})
		b.Run(fmt.Sprintf("system/items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() {
				target.Labels = nil
				if res, err := Mutate(sys.Candidates(target.GVK, OperationCreate), &unstructured.Unstructured{Object: o}, target, Options{}); err != nil || !res.Mutated() {
					b.Fatal(res, err)
				}
				delete(labels, "owner")
			})
		})
	}
}

func assignMetadata(b *testing.B, location, value string) *Mutator {
	m, errs := newAssignMetadata(&mutationsv1.AssignMetadata{ObjectMeta: metav1.ObjectMeta{Name: location}, Spec: mutationsv1.AssignMetadataSpec{Location: location,
		Parameters: mutationsv1.MetadataParameters{Assign: mutationsv1.AssignField{Value: &mutationsv1.Value{Value: value}}}}})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	return m
}

// Loading n mutators that agree on the schema of spec.containers, and one
// that uses it as an object instead: n conflicts, each reported once.
func BenchmarkSchemaConflictsScale(b *testing.B) {
	for _, n := range scalebenchtest.Sizes {
		ms := make([]*Mutator, 0, n+1)
		for i := 0; i < n; i++ {
			ms = append(ms, assign(b, fmt.Sprintf("env-%05d", i), fmt.Sprintf("spec.containers[name: *].env[name: V%d].value", i), "x"))
		}
		ms = append(ms, assign(b, "object", "spec.containers.count", "1"))
		b.Run(fmt.Sprintf("items-%d", n), func(b *testing.B) {
			scalebenchtest.PerItem(b, n, func() {
				if _, err := NewSystem(ms); err == nil {
					b.Fatal("no conflict reported")
				}
			})
		})
	}
}

// deploymentAssign is an Assign on Deployments setting one environment
// variable of every container, as the live benchmarks' mutators do.
func deploymentAssign(b *testing.B, i int) *Mutator {
	return mustDecode(b, fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: deploy-%05[1]d}
spec:
  applyTo: [{groups: [apps], versions: [v1], kinds: [Deployment]}]
  location: spec.template.spec.containers[name:*].env[name:N%[1]d].value
  parameters: {assign: {value: "x"}}
`, i))
}

// ConflictsWith, as apply-time validation asks it of every mutator write,
// against a system of n mutators that share the written one's bindings and
// schema: agreeing (no conflict), and with a location that uses the
// containers list as an object (a conflict with every one of them, each
// reported).
func BenchmarkConflictsWith(b *testing.B) {
	for _, n := range []int{1000, 4000, 10000} {
		ms := make([]*Mutator, n)
		for i := range ms {
			ms[i] = deploymentAssign(b, i)
		}
		sys, err := NewSystem(ms)
		if err != nil {
			b.Fatal(err)
		}
		agreeing := deploymentAssign(b, n)
		b.Run(fmt.Sprintf("agreeing/mutators-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if cs := sys.ConflictsWith(agreeing); len(cs) != 0 {
					b.Fatal(cs)
				}
			}
		})
	}
}

// The first request after a change, against n AssignMetadata (every
// kind's list changes with each of them) and one pod Assign: the change
// (replacing one AssignMetadata), the new System, and the merge of the pod
// list the request pays for once. Publishing copies nothing whole, so
// this is linear (the merge), and ns/item is what each mutator adds to
// that first request.
func BenchmarkFirstRequestAfterChange(b *testing.B) {
	for _, n := range scalebenchtest.Sizes {
		builder := NewBuilder()
		builder.Add(assign(b, "pod", "spec.x", "1"))
		labels := make([]*Mutator, n)
		for i := range labels {
			labels[i] = assignMetadata(b, fmt.Sprintf("metadata.labels.l%d", i), "x")
			builder.Add(labels[i])
		}
		edited := assignMetadata(b, fmt.Sprintf("metadata.labels.l%d", n/2), "y")
		target := podTarget()
		b.Run(fmt.Sprintf("items-%d", n), func(b *testing.B) {
			i := 0
			scalebenchtest.PerItem(b, n, func() {
				if i++; i%2 == 0 {
					builder.Add(edited)
				} else {
					builder.Add(labels[n/2])
				}
				if got := builder.System().Candidates(target.GVK, OperationCreate); len(got) != n+1 {
					b.Fatalf("%d candidates", len(got))
				}
			})
		})
	}
}
