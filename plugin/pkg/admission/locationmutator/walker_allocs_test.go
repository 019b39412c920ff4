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
	goruntime "runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// TestWalkerAllocations pins what mutation.Mutate allocates, on both
// forms, on the benchmarks' shapes (BenchmarkAdmit*), so that a change
// that gives back what the slabs and the field hints bought fails here,
// not only in a benchmark nobody reads. The counts are exact: the walks
// are deterministic, and a count that drops is news to record here too.
func TestWalkerAllocations(t *testing.T) {
	for _, sh := range []allocShape{
		{"ten-matching", tenPodMutators(t), 28, 1, 45, 1},
		{"ten-matching-with-quantity", append(tenPodMutators(t)[:9:9], quantityLimit), 46, 55, 48, 1},
		{"one-assign", []string{pullAlways}, 1, 0, 1, 0},
	} {
		t.Run(sh.name, func(t *testing.T) { checkShapeAllocations(t, sh) })
	}
}

// allocRuns is how many requests testing.AllocsPerRun averages over.
const allocRuns = 50

// allocShape is a benchmark shape with its pinned allocations.
type allocShape struct {
	name     string
	mutators []string
	// typed and unstructured are the allocations per request on a
	// fresh pod and on one that already has every change.
	typedFresh, typedMutated, unstructuredFresh, unstructuredMutated float64
}

// checkShapeAllocations measures each of the four requests of sh.
func checkShapeAllocations(t *testing.T, sh allocShape) {
	candidates := allocCandidates(t, sh.mutators)
	target := func(pod *corev1.Pod) *match.Target {
		return &match.Target{GVK: podGVK, Namespace: pod.Namespace, Name: pod.Name, Labels: labels.Set(pod.Labels)}
	}
	mutated := threeContainerPod()
	if res, err := mutation.Mutate(candidates, mutated, target(mutated), mutation.Options{}); err != nil || !res.Mutated() {
		t.Fatalf("the fresh pod: mutated %v, %v", res.Mutated(), err)
	}
	for _, c := range []struct {
		name string
		want float64
		run  func(i int) error
	}{
		{"typed/fresh", sh.typedFresh, typedRun(candidates, podCopies(threeContainerPod()), target)},
		{"typed/mutated", sh.typedMutated, typedRun(candidates, podCopies(mutated), target)},
		{"unstructured/fresh", sh.unstructuredFresh, unstructuredRun(candidates, unstructuredCopies(t, threeContainerPod()), target(mutated))},
		{"unstructured/mutated", sh.unstructuredMutated, unstructuredRun(candidates, unstructuredCopies(t, mutated), target(mutated))},
	} {
		checkAllocations(t, c.name, c.want, c.run)
	}
}

// allocCandidates decodes the mutators into a system and returns its
// candidates for a pod create.
func allocCandidates(t *testing.T, docs []string) []*mutation.Mutator {
	var ms []*mutation.Mutator
	for _, doc := range docs {
		m, err := mutation.Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	sys, err := mutation.NewSystem(ms)
	if err != nil {
		t.Fatal(err)
	}
	return sys.Candidates(podGVK, mutation.OperationCreate)
}

// podCopies are a copy of from for each request, and one for
// coldAllocations.
func podCopies(from *corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, allocRuns+2)
	for i := range out {
		out[i] = from.DeepCopy()
	}
	return out
}

// unstructuredCopies are podCopies in unstructured form.
func unstructuredCopies(t *testing.T, from *corev1.Pod) []map[string]any {
	out := make([]map[string]any, allocRuns+2)
	for i := range out {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(from)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = u
	}
	return out
}

// checkAllocations measures run, request i on the i-th copy, against want.
func checkAllocations(t *testing.T, name string, want float64, run func(i int) error) {
	i := 0
	var err error
	got := testing.AllocsPerRun(allocRuns, func() {
		if e := run(i); e != nil && err == nil {
			err = e
		}
		i++
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	switch {
	case raceDetector:
		// The race detector's sync.Pool drops a scratch now
		// and then, and the next request makes its chunks
		// again: it may cost up to a request with none.
		if cold := coldAllocations(run, i); got > cold {
			t.Errorf("%s: %v allocations a request, more than the %v of a request without a pooled scratch", name, got, cold)
		}
	case got != want:
		t.Errorf("%s: %v allocations a request, want %v", name, got, want)
	}
}

// coldAllocations is what run(i) allocates with the scratch pools
// emptied (two collections empty a sync.Pool).
func coldAllocations(run func(int) error, i int) float64 {
	goruntime.GC()
	goruntime.GC()
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	_ = run(i)
	goruntime.ReadMemStats(&after)
	return float64(after.Mallocs - before.Mallocs)
}

func typedRun(candidates []*mutation.Mutator, pods []*corev1.Pod, target func(*corev1.Pod) *match.Target) func(int) error {
	targets := make([]*match.Target, len(pods))
	for i, p := range pods {
		targets[i] = target(p)
	}
	return func(i int) error {
		_, err := mutation.Mutate(candidates, pods[i], targets[i], mutation.Options{})
		return err
	}
}

func unstructuredRun(candidates []*mutation.Mutator, objs []map[string]any, target *match.Target) func(int) error {
	targets := make([]match.Target, len(objs))
	us := make([]*unstructured.Unstructured, len(objs))
	for i := range objs {
		targets[i] = *target
		us[i] = &unstructured.Unstructured{Object: objs[i]}
	}
	return func(i int) error {
		_, err := mutation.Mutate(candidates, us[i], &targets[i], mutation.Options{})
		return err
	}
}
