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
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
)

// passesUntilUnchanged runs passes until one changes nothing, as Mutate
// did before it learnt to prove the last one needless: the reference the
// proof is checked against. It returns what Mutate returns for an object
// that converges.
func passesUntilUnchanged(t *testing.T, cands []*Mutator, obj mutable, tg *match.Target) Result {
	t.Helper()
	n := len(cands)
	var applied, reached []int
	for pass := 1; pass <= n+1; pass++ {
		if pass > 1 {
			tg.Labels = obj.labels()
		}
		p, err := runPass(make([]int, 0, n), make([]int, 0, n), make([]int, 0, n), cands, obj, tg, requestMeta{Namespace: tg.Namespace, Name: tg.Name, values: &metaValues{}})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.changed) == 0 {
			a, r := mutatorsOf(cands, applied, reached)
			return Result{Applied: a, Reached: r, Passes: pass}
		}
		applied = mergeIndexes(applied, p.changed)
		reached = mergeIndexes(reached, p.reached)
	}
	t.Fatal("the reference did not converge")
	return Result{}
}

func TestSettlesWithoutAnotherPass(t *testing.T) {
	labeler := mustDecode(t, teamLabel)
	byTeam := mustDecode(t, priorityByTeam)
	tests := []struct {
		name string
		// ms run in this order, not through a System: some pairs are
		// ones a System refuses, and the rule must hold for them too.
		ms     []*Mutator
		before string
		after  string
		passes int
	}{
		{"different fields", []*Mutator{assign(t, "a", "spec.x", "1"), assign(t, "b", "spec.w.z", "1")},
			`spec: {}`, `spec: {x: 1, w: {z: 1}}`, 1},
		{"elements with different keys", []*Mutator{
			assign(t, "a", "spec.containers[name: *].env[name: A].value", "1"),
			assign(t, "b", "spec.containers[name: *].env[name: B].value", "2")},
			`spec: {containers: [{name: app}]}`,
			`spec: {containers: [{name: app, env: [{name: A, value: 1}, {name: B, value: 2}]}]}`, 1},
		// A later mutator creates an element an earlier glob walks into.
		{"a glob and a later creator", []*Mutator{
			assign(t, "a", "spec.containers[name: *].imagePullPolicy", "Always"),
			assign(t, "b", "spec.containers[name: sidecar].image", "s")},
			`spec: {containers: [{name: app}]}`,
			`spec: {containers: [{name: app, imagePullPolicy: Always}, {name: sidecar, image: s, imagePullPolicy: Always}]}`, 2},
		// A later mutator creates the parent an earlier MustExist needs.
		{"a MustExist and a later creator of its parent", []*Mutator{
			assign(t, "a", "spec.containers[name: *].env[name: A].value", "1", "MustExist spec.containers[name: *].env"),
			assign(t, "b", "spec.containers[name: *].env[name: B].value", "2")},
			`spec: {containers: [{name: app}]}`,
			`spec: {containers: [{name: app, env: [{name: B, value: 2}, {name: A, value: 1}]}]}`, 2},
		// A later element selected by one key field carries the other.
		{"elements selected by another field", []*Mutator{
			assign(t, "a", "spec.l[id: 5].foo", "x"),
			assign(t, "b", "spec.l[name: nn].id", "5")},
			`spec: {l: []}`, `spec: {l: [{id: 5, foo: x}, {name: nn, id: 5, foo: x}]}`, 2},
		// A later glob writes the key field an earlier selector reads.
		{"a glob writing a key field", []*Mutator{
			assign(t, "a", "spec.l[id: 5].foo", "x"),
			assign(t, "b", "spec.l[name: *].id", "5")},
			`spec: {l: [{name: nn}]}`, `spec: {l: [{name: nn, id: 5, foo: x}, {id: 5, foo: x}]}`, 2},
		// A later Assign replaces what an earlier one writes below: they
		// fight, and only the third pass's snapshot compare settles it.
		{"a write above", []*Mutator{assign(t, "a", "spec.s.x", "1"), assign(t, "b", "spec.s", "{w: 2}")},
			`spec: {}`, `spec: {s: {w: 2}}`, 3},
		// A later AssignMetadata adds a label an earlier selector reads.
		{"a label", []*Mutator{byTeam, labeler}, `{metadata: {name: web}, spec: {}}`,
			`{metadata: {name: web, labels: {team: a}}, spec: {priorityClassName: team-a}}`, 2},
		// Two writers of one place: the passes run, and the snapshot
		// compare of the third settles it, as before.
		{"two writers of one place", []*Mutator{assign(t, "a", "spec.x", "1"), assign(t, "b", "spec.x", "2")},
			`spec: {}`, `spec: {x: 2}`, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, ref := obj(t, tc.before), obj(t, tc.before)
			res, err := Mutate(tc.ms, &unstructured.Unstructured{Object: o}, podTarget(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			equalYAML(t, o, tc.after)
			if res.Passes != tc.passes {
				t.Errorf("passes %d, want %d", res.Passes, tc.passes)
			}
			if res.Passes >= 3 {
				return // a fight, which only the snapshot compare settles
			}
			sc := jsonScratches.Get().(*jsonScratch)
			defer sc.release()
			want := passesUntilUnchanged(t, tc.ms, &unstructuredRoot{obj: ref, sc: sc}, podTarget())
			if !jsonEqual(o, ref) || !slices.Equal(res.Applied, want.Applied) || !slices.Equal(res.Reached, want.Reached) {
				t.Errorf("got %v %v %v, the passes until one changes nothing give %v %v %v", o, IDs(res.Applied), IDs(res.Reached), ref, IDs(want.Applied), IDs(want.Reached))
			}
			if res.Passes > want.Passes || res.Passes < want.Passes-1 {
				t.Errorf("passes %d, the reference ran %d", res.Passes, want.Passes)
			}
		})
	}
}

// The proof compares pairs of mutators, and gives up (running the pass)
// past a few pairs per mutator that matched, so that many mutators that
// all change an object cost no more than the pass would.
func TestSettlesWithinABudget(t *testing.T) {
	for _, tc := range []struct{ n, passes int }{{10, 1}, {40, 2}} {
		var ms []*Mutator
		for i := range tc.n {
			ms = append(ms, assign(t, fmt.Sprintf("m%02d", i), fmt.Sprintf("spec.f%02d", i), "1"))
		}
		res, err := Mutate(ms, &unstructured.Unstructured{Object: obj(t, `spec: {}`)}, podTarget(), Options{})
		if err != nil || len(res.Applied) != tc.n || res.Passes != tc.passes {
			t.Errorf("%d mutators: %d applied, %d passes, %v; want %d passes", tc.n, len(res.Applied), res.Passes, err, tc.passes)
		}
	}
}

// The typed object drops what its type has no field for: an element
// created with such a key is not found again, and the next pass makes
// another, so the pass is not skipped and the object is refused as
// before.
func TestSettlesNotWhenATypedKeyIsLost(t *testing.T) {
	m := assign(t, "a", "spec.containers[nokey: x].image", "nginx")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	_, err := Mutate([]*Mutator{m}, pod, podTarget(), Options{})
	if !errors.Is(err, ErrNotConverging) {
		t.Fatalf("error %v, want ErrNotConverging", err)
	}
}

// An external data provider's answer is not known to be its own answer's
// answer: the pass after a change runs.
func TestSettlesNotWithExternalData(t *testing.T) {
	m := externalAssign(t, "Fail", "")
	pod := podWith("nginx:1.27")
	res, _, err := resolveRounds(t, func(x *External) (Result, error) {
		res, err := Mutate([]*Mutator{m}, pod, podTarget(), Options{External: x})
		if err == nil && res.Mutated() && res.Passes != 2 {
			t.Errorf("the round that wrote the answer ran %d passes, want 2", res.Passes)
		}
		return res, err
	}, "alice")
	if err != nil || !res.Mutated() {
		t.Fatalf("%+v %v", res, err)
	}
}

// tenPodMutators are the benchmarks' ten mutators, which all match
// tenMutatorsPod.
func tenPodMutators(t *testing.T) []*Mutator {
	t.Helper()
	data, err := os.ReadFile("../testdata/ten-pod-mutators.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ms []*Mutator
	for _, doc := range strings.Split(string(data), "\n---\n") {
		ms = append(ms, mustDecode(t, doc))
	}
	return ms
}

func tenMutatorsPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "nginx:1.27", Args: []string{"--alsologtostderr", "--v=2"}},
			{Name: "proxy", Image: "envoyproxy/envoy:v1.31", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}},
			{Name: "log", Image: "registry.example.com/fluent-bit:3"},
		}},
	}
}

// The ten mutators change a fresh pod in one pass, typed and
// unstructured, into what passes until one changes nothing make, with the
// same mutators applied and reached (so the same annotations).
func TestSettlesTenPodMutators(t *testing.T) {
	s := mustSystem(t, tenPodMutators(t)...)
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	cands := s.Candidates(gvk, OperationCreate)
	if len(cands) != 10 {
		t.Fatalf("%d candidates", len(cands))
	}
	t.Run("typed", func(t *testing.T) {
		pod, ref := tenMutatorsPod(), tenMutatorsPod()
		res, err := Mutate(cands, pod, typedTarget(pod, gvk), Options{})
		if err != nil {
			t.Fatal(err)
		}
		sc := typedScratches.Get().(*typedScratch)
		defer sc.release()
		root := &sc.root
		root.root.v, root.root.info, root.root.sc, root.root.made = reflect.ValueOf(ref).Elem(), typeInfoOf(reflect.TypeOf(ref).Elem()), sc, nil
		root.obj, root.accessor = ref, ref
		want := passesUntilUnchanged(t, cands, root, typedTarget(ref, gvk))
		checkTenPodResult(t, res, want, pod, ref)
	})
	t.Run("unstructured", func(t *testing.T) {
		o := toUnstructured(t, tenMutatorsPod())
		ref := toUnstructured(t, tenMutatorsPod())
		tg := typedTarget(tenMutatorsPod(), gvk)
		res, err := Mutate(cands, &unstructured.Unstructured{Object: o}, tg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sc := jsonScratches.Get().(*jsonScratch)
		defer sc.release()
		want := passesUntilUnchanged(t, cands, &unstructuredRoot{obj: ref, sc: sc}, typedTarget(tenMutatorsPod(), gvk))
		checkTenPodResult(t, res, want, fromUnstructured(t, o), fromUnstructured(t, ref))
	})
}

func checkTenPodResult(t *testing.T, res, want Result, got, ref runtime.Object) {
	t.Helper()
	if res.Passes != 1 || want.Passes != 2 {
		t.Errorf("passes %d, the reference %d; want 1 and 2", res.Passes, want.Passes)
	}
	if len(res.Applied) != 10 || !slices.Equal(res.Applied, want.Applied) || !slices.Equal(res.Reached, want.Reached) {
		t.Errorf("applied %v reached %v, the reference %v %v", IDs(res.Applied), IDs(res.Reached), IDs(want.Applied), IDs(want.Reached))
	}
	if !reflect.DeepEqual(got, ref) {
		t.Errorf("got %+v\nthe reference made %+v", got, ref)
	}
}
