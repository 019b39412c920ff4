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
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// builderMutators are the mutators the Builder tests draw from: Assigns on
// pods, each writing spec.f<i>; Assigns on Deployments; and
// AssignMetadata, each adding label l<i>, which are candidates of every
// kind. A second version of each pod Assign writes another value, for
// replacements.
type builderMutators struct {
	pod, podV2, deploy, label []*Mutator
	// values are what each pod Assign writes.
	values map[*Mutator]string
}

func newBuilderMutators(t *testing.T, n int) builderMutators {
	out := builderMutators{values: map[*Mutator]string{}}
	for i := range n {
		out.pod = append(out.pod, assign(t, fmt.Sprintf("pod-%03d", i), fmt.Sprintf("spec.f%d", i), "1"))
		out.podV2 = append(out.podV2, assign(t, fmt.Sprintf("pod-%03d", i), fmt.Sprintf("spec.f%d", i), "2"))
		out.values[out.pod[i]], out.values[out.podV2[i]] = "1", "2"
		out.deploy = append(out.deploy, mustDecode(t, fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: deploy-%03d}
spec:
  applyTo: [{groups: [apps], versions: [v1], kinds: [Deployment]}]
  location: spec.f%d
  parameters: {assign: {value: 1}}
`, i, i)))
		out.label = append(out.label, mustDecode(t, fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: label-%03d}
spec:
  location: metadata.labels.l%d
  parameters: {assign: {value: "x"}}
`, i, i)))
	}
	return out
}

// snapshot is a System and the mutators it must run.
type snapshot struct {
	system *System
	want   map[ID]*Mutator
	// checked says whether its candidate lists were asked for when it was
	// taken; the others are merged only at the end, after every later
	// change.
	checked bool
}

var deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// checkSnapshot fails unless s lists exactly its mutators, gives each kind
// the candidates it must, and runs them.
func checkSnapshot(t *testing.T, s snapshot, values map[*Mutator]string) {
	t.Helper()
	want := slices.SortedFunc(maps.Values(s.want), runOrder)
	if s.system.Len() != len(want) {
		t.Fatalf("Len %d, want %d", s.system.Len(), len(want))
	}
	if got := s.system.Mutators(); !slices.Equal(got, want) {
		t.Fatalf("Mutators %v, want %v", idList(got), idList(want))
	}
	for _, gvk := range []schema.GroupVersionKind{podTarget().GVK, deploymentGVK, {Version: "v1", Kind: "ConfigMap"}} {
		for _, op := range []string{OperationCreate, OperationUpdate} {
			var cands []*Mutator
			for _, m := range want {
				if m.bindings == nil || slices.Contains(m.bindings, binding{GVK: gvk, Operation: op}) {
					cands = append(cands, m)
				}
			}
			if got := s.system.Candidates(gvk, op); !slices.Equal(got, cands) {
				t.Fatalf("%s %s: candidates %v, want %v", gvk.Kind, op, idList(got), idList(cands))
			}
		}
	}
	// Running them on a pod writes what the pod Assigns and the
	// AssignMetadata in it write, and nothing else.
	o := map[string]any{"metadata": map[string]any{"name": "web", "namespace": "default"}, "spec": map[string]any{}}
	if _, err := Mutate(s.system.Candidates(podTarget().GVK, OperationCreate), &unstructured.Unstructured{Object: o}, podTarget(), Options{}); err != nil {
		t.Fatal(err)
	}
	wantSpec, wantLabels := map[string]any{}, map[string]any{}
	for _, m := range want {
		switch {
		case m.ID().Kind == "AssignMetadata":
			wantLabels[strings.TrimPrefix(m.Location().String(), "metadata.labels.")] = "x"
		case slices.Contains(m.bindings, binding{GVK: podTarget().GVK, Operation: OperationCreate}):
			wantSpec[strings.TrimPrefix(m.Location().String(), "spec.")] = values[m]
		}
	}
	if got := o["spec"].(map[string]any); !maps.EqualFunc(got, wantSpec, func(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("spec %v, want %v", got, wantSpec)
	}
	got, _ := o["metadata"].(map[string]any)["labels"].(map[string]any)
	if len(got) != len(wantLabels) || !maps.EqualFunc(got, wantLabels, func(a, b any) bool { return a == b }) {
		t.Fatalf("labels %v, want %v", got, wantLabels)
	}
}

func idList(ms []*Mutator) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID().String()
	}
	return out
}

// TestBuilderSnapshots adds, replaces and removes mutators at random, takes
// a System after each change and checks, at the end, that every System
// still lists, offers and runs exactly the mutators it was made with:
// those whose lists were merged when it was taken, and those merged only
// after every later change.
func TestBuilderSnapshots(t *testing.T) {
	const n = 40
	ms := newBuilderMutators(t, n)
	all := slices.Concat(ms.pod, ms.deploy, ms.label)
	rng := rand.New(rand.NewPCG(7, 11))
	b := NewBuilder()
	now := map[ID]*Mutator{}
	var snapshots []snapshot
	for step := range 600 {
		switch r := rng.IntN(10); {
		case r < 5 || len(now) == 0:
			m := all[rng.IntN(len(all))]
			b.Add(m)
			now[m.ID()] = m
		case r < 6:
			m := ms.podV2[rng.IntN(n)]
			b.Add(m)
			now[m.ID()] = m
		default:
			ids := slices.SortedFunc(maps.Keys(now), func(a, b ID) int { return strings.Compare(a.String(), b.String()) })
			id := ids[rng.IntN(len(ids))]
			b.Remove(id)
			delete(now, id)
		}
		s := snapshot{system: b.System(), want: maps.Clone(now), checked: step%2 == 0}
		if s.checked {
			checkSnapshot(t, s, ms.values)
		}
		snapshots = append(snapshots, s)
	}
	for i, s := range snapshots {
		t.Run(fmt.Sprintf("step-%d", i), func(t *testing.T) { checkSnapshot(t, s, ms.values) })
	}
}

// A System shares the candidate lists a change left alone with the one
// before it, and a repeated request allocates nothing.
func TestBuilderSharesUntouchedLists(t *testing.T) {
	ms := newBuilderMutators(t, 3)
	b := NewBuilder()
	for _, m := range slices.Concat(ms.pod, ms.deploy) {
		b.Add(m)
	}
	first := b.System()
	pods := first.Candidates(podTarget().GVK, OperationCreate)
	b.Add(ms.podV2[0])
	second := b.System()
	if again := b.System(); again != second {
		t.Fatal("a Builder with no change makes a new System")
	}
	if first.list(deploymentGVK, OperationCreate) != second.list(deploymentGVK, OperationCreate) {
		t.Fatal("the Deployment list, which the change left alone, is not shared")
	}
	if got := first.Candidates(podTarget().GVK, OperationCreate); !slices.Equal(got, pods) || got[0] != ms.pod[0] {
		t.Fatalf("the first System's pod list changed: %v", idList(got))
	}
	if got := second.Candidates(podTarget().GVK, OperationCreate); got[0] != ms.podV2[0] {
		t.Fatal("the second System runs the replaced mutator")
	}
	b.Add(ms.label[0])
	third := b.System()
	if first.list(deploymentGVK, OperationCreate) == third.list(deploymentGVK, OperationCreate) {
		t.Fatal("an AssignMetadata added left a list without it")
	}
	for _, gvk := range []schema.GroupVersionKind{podTarget().GVK, {Version: "v1", Kind: "ConfigMap"}} {
		third.Candidates(gvk, OperationCreate)
		if allocs := testing.AllocsPerRun(100, func() { third.Candidates(gvk, OperationCreate) }); allocs != 0 {
			t.Fatalf("%s: a repeated Candidates allocates %v times", gvk.Kind, allocs)
		}
	}
}

// Requests that ask a new System for the same list at once, while the
// Builder goes on changing, all get the one list it was made with (run
// with -race).
func TestSystemConcurrentFirstUse(t *testing.T) {
	ms := newBuilderMutators(t, 20)
	b := NewBuilder()
	for _, m := range slices.Concat(ms.pod, ms.label) {
		b.Add(m)
	}
	for round := range 20 {
		s := b.System()
		want := slices.SortedFunc(slices.Values(slices.Concat(ms.pod, ms.label)), runOrder)
		var wg sync.WaitGroup
		got := make([][]*Mutator, 4)
		for i := range got {
			wg.Go(func() { got[i] = s.Candidates(podTarget().GVK, OperationCreate) })
		}
		b.Remove(ms.pod[round].ID())
		b.Add(ms.pod[round])
		wg.Wait()
		for _, g := range got {
			if !slices.Equal(g, want) {
				t.Fatalf("round %d: candidates %v, want %v", round, idList(g), idList(want))
			}
		}
	}
}

// ConflictsWith of every System taken along random changes finds what
// comparing the probe with each of its mutators finds, also after later
// changes. The Builder runs what it is given, so its Systems hold
// conflicting mutators too: ModifySets on spec.f<i> against Assigns below
// it, on pods and on Deployments (which share no binding with the pod
// ones).
func TestBuilderConflictsWith(t *testing.T) {
	const n = 6
	var all []*Mutator
	for i := range n {
		for _, kind := range []string{"Pod", "Deployment"} {
			applyTo := `[{groups: [""], versions: [v1], kinds: [Pod]}]`
			if kind == "Deployment" {
				applyTo = `[{groups: [apps], versions: [v1], kinds: [Deployment]}]`
			}
			all = append(all,
				mustDecode(t, fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1
kind: ModifySet
metadata: {name: set-%[2]s-%[1]d}
spec:
  applyTo: %[3]s
  location: spec.f%[1]d
  parameters: {operation: merge, values: {fromList: [a]}}
`, i, strings.ToLower(kind), applyTo)),
				mustDecode(t, fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: below-%[2]s-%[1]d}
spec:
  applyTo: %[3]s
  location: spec.f%[1]d.x
  parameters: {assign: {value: 1}}
`, i, strings.ToLower(kind), applyTo)))
		}
	}
	rng := rand.New(rand.NewPCG(3, 5))
	b := NewBuilder()
	now := map[ID]*Mutator{}
	var snapshots []snapshot
	check := func(t *testing.T, s snapshot) {
		t.Helper()
		for _, probe := range all {
			var want []Conflict
			for _, o := range s.want {
				if o.ID() == probe.ID() {
					continue
				}
				if c, ok := conflictBetween(probe, o); ok {
					want = append(want, c)
				}
			}
			sortConflicts(want)
			// It compares only when some mutator disagrees with the
			// probe on a value.
			disagree := false
			for _, o := range s.want {
				for _, a := range probe.slots {
					disagree = disagree || slices.ContainsFunc(o.slots, func(b schemaSlot) bool { return b.key == a.key && b.t != a.t })
				}
			}
			if got := s.system.mayConflict(probe); got != disagree {
				t.Fatalf("%s: mayConflict %v, want %v", probe.ID(), got, disagree)
			}
			if got := s.system.ConflictsWith(probe); !slices.Equal(got, want) {
				t.Fatalf("%s: conflicts %v, want %v", probe.ID(), got, want)
			}
		}
	}
	for range 300 {
		m := all[rng.IntN(len(all))]
		if now[m.ID()] != nil && rng.IntN(2) == 0 {
			b.Remove(m.ID())
			delete(now, m.ID())
		} else {
			b.Add(m)
			now[m.ID()] = m
		}
		s := snapshot{system: b.System(), want: maps.Clone(now)}
		check(t, s)
		snapshots = append(snapshots, s)
	}
	for _, s := range snapshots {
		check(t, s)
	}
}
