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
	"math"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
)

func mustSystem(t testing.TB, ms ...*Mutator) *System {
	t.Helper()
	s, err := NewSystem(ms)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSystemOrderAndConvergence(t *testing.T) {
	// Run order is kind, then name: Assign "b" before Assign "c" before
	// AssignMetadata before ModifySet, whatever the input order.
	set := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: ModifySet
metadata: {name: a-args}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: spec.containers[name:*].args
  parameters: {values: {fromList: [--v=2]}}
`)
	label := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: a-label}
spec:
  location: metadata.labels.mutated
  parameters: {assign: {value: "yes"}}
`)
	c := assign(t, "c", "spec.containers[name: sidecar].image", "sidecar:1")
	b := assign(t, "b", "spec.containers[name: *].imagePullPolicy", "Always")
	s := mustSystem(t, set, label, c, b)
	var order []string
	for _, m := range s.Mutators() {
		order = append(order, m.ID().String())
	}
	if got := strings.Join(order, ","); got != "Assign/b,Assign/c,AssignMetadata/a-label,ModifySet/a-args" {
		t.Fatalf("order %s", got)
	}
	o := obj(t, `{metadata: {name: web}, spec: {containers: [{name: app}]}}`)
	tg := podTarget()
	res, err := Mutate(s.Candidates(tg.GVK, OperationCreate), &unstructured.Unstructured{Object: o}, tg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// b ran before c created the sidecar, so the sidecar only gets its pull
	// policy on the second pass, in which only b changed the object: that
	// proves the third would change nothing (see settles).
	equalYAML(t, o, `{metadata: {name: web, labels: {mutated: "yes"}}, spec: {containers: [
  {name: app, imagePullPolicy: Always, args: [--v=2]},
  {name: sidecar, image: "sidecar:1", imagePullPolicy: Always, args: [--v=2]}]}}`)
	if res.Passes != 2 || len(res.Applied) != 4 {
		t.Fatalf("passes %d applied %v", res.Passes, IDs(res.Applied))
	}
	res, err = Mutate(s.Candidates(tg.GVK, OperationCreate), &unstructured.Unstructured{Object: o}, podTarget(), Options{})
	if err != nil || res.Mutated() || res.Passes != 1 {
		t.Fatalf("second admission: %+v %v", res, err)
	}
}

// teamLabel labels every object team=a; priorityByTeam, whose selector
// reads that label, sets the priority class of pods in team a: the pair
// whose order only a second pass settles.
const (
	teamLabel = `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: team}
spec:
  location: metadata.labels.team
  parameters: {assign: {value: a}}
`
	priorityByTeam = `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: by-team}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {labelSelector: {matchLabels: {team: a}}}
  location: spec.priorityClassName
  parameters: {assign: {value: team-a}}
`
)

func TestSystemLabelsAreReadEachPass(t *testing.T) {
	label := mustDecode(t, teamLabel)
	m := mustDecode(t, priorityByTeam)
	s := mustSystem(t, label, m)
	o := obj(t, `{metadata: {name: web}, spec: {}}`)
	tg := podTarget()
	if _, err := Mutate(s.Candidates(tg.GVK, OperationCreate), &unstructured.Unstructured{Object: o}, tg, Options{}); err != nil {
		t.Fatal(err)
	}
	equalYAML(t, o, `{metadata: {name: web, labels: {team: a}}, spec: {priorityClassName: team-a}}`)
}

func TestSystemFightConvergesLikeGatekeeper(t *testing.T) {
	// Two mutators writing the same place are out of scope for conflict
	// detection; the later one (by name) wins and the object converges.
	s := mustSystem(t, assign(t, "one", "spec.x", "1"), assign(t, "two", "spec.x", "2"))
	o := obj(t, `spec: {}`)
	res, err := Mutate(s.Candidates(podTarget().GVK, OperationCreate), &unstructured.Unstructured{Object: o}, podTarget(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	equalYAML(t, o, `spec: {x: 2}`)
	if res.Passes > 3 {
		t.Fatalf("%d passes for two mutators", res.Passes)
	}
}

func TestSystemNonConvergence(t *testing.T) {
	// No manifest can express a mutator that never settles, so break one on
	// purpose: NaN never equals itself. Every kind is idempotent, which is
	// what lets a pass prove the next one needless (see settles); "fine"
	// reads spec, which "nan" writes in, so that proof does not hold and
	// the passes run until the limit.
	m := assign(t, "nan", "spec.x", "0")
	m.op = assignOp{assignment{value: math.NaN()}}
	s := mustSystem(t, m, assign(t, "fine", "spec.y", "1", "MustExist spec"))
	tg := podTarget()
	tg.GVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	tg.Name, tg.GenerateName = "", "web-"
	_, err := Mutate(s.Candidates(tg.GVK, OperationCreate), &unstructured.Unstructured{Object: obj(t, `spec: {}`)}, tg, Options{})
	if !errors.Is(err, ErrNotConverging) {
		t.Fatalf("error %v, want ErrNotConverging", err)
	}
	for _, w := range []string{"Pod default/web-*", "Assign/nan", "3 passes"} {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not name %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "Assign/fine") {
		t.Fatalf("error %q names a mutator that had settled", err)
	}
}

func TestSystemErrorsNameTheObject(t *testing.T) {
	s := mustSystem(t, assign(t, "a", "spec.containers[name: *].image", "x"))
	_, err := Mutate(s.Candidates(podTarget().GVK, OperationCreate), &unstructured.Unstructured{Object: obj(t, `spec: {containers: 3}`)}, podTarget(), Options{})
	if err == nil || !strings.Contains(err.Error(), "Pod default/web") || !strings.Contains(err.Error(), "Assign/a") {
		t.Fatalf("error %v", err)
	}
}

func TestSystemCandidates(t *testing.T) {
	createOnly := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: create-only}
spec:
  applyTo: [{groups: [apps], versions: [v1], kinds: [Deployment], operations: [CREATE]}]
  location: spec.x
  parameters: {assign: {value: 1}}
`)
	label := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: label}
spec:
  location: metadata.labels.x
  parameters: {assign: {value: "1"}}
`)
	s := mustSystem(t, createOnly, label, assign(t, "pod", "spec.x", "1"))
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	ids := func(ms []*Mutator) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID().String())
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		gvk  schema.GroupVersionKind
		op   string
		want string
	}{
		{deploy, OperationCreate, "Assign/create-only,AssignMetadata/label"},
		{deploy, OperationUpdate, "AssignMetadata/label"},
		{schema.GroupVersionKind{Group: "apps", Version: "v1beta1", Kind: "Deployment"}, OperationCreate, "AssignMetadata/label"},
		{podTarget().GVK, OperationUpdate, "Assign/pod,AssignMetadata/label"},
		{podTarget().GVK, "DELETE", ""},
	}
	for _, tc := range tests {
		t.Run(tc.gvk.String()+" "+tc.op, func(t *testing.T) {
			if got := ids(s.Candidates(tc.gvk, tc.op)); got != tc.want {
				t.Fatalf("candidates %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSchemaConflicts(t *testing.T) {
	set := func(name, loc string) *Mutator {
		return mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: ModifySet
metadata: {name: `+name+`}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: '`+loc+`'
  parameters: {values: {fromList: [a]}}
`)
	}
	image := func(name, loc string) *Mutator {
		return mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1alpha1
kind: AssignImage
metadata: {name: `+name+`}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: '`+loc+`'
  parameters: {assignTag: ":v1"}
`)
	}
	deployOnly := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: deploy}
spec:
  applyTo: [{groups: [apps], versions: [v1], kinds: [Deployment]}]
  location: spec.containers.image
  parameters: {assign: {value: x}}
`)
	updateOnly := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: update}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod], operations: [UPDATE]}]
  location: spec.containers.image
  parameters: {assign: {value: x}}
`)
	createOnly := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: create}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod], operations: [CREATE]}]
  location: 'spec.containers[name: a].image'
  parameters: {assign: {value: x}}
`)
	tests := []struct {
		name string
		ms   []*Mutator
		want []string // empty: no conflict
	}{
		{"object vs list", []*Mutator{assign(t, "a", "spec.containers.image", "x"), assign(t, "b", "spec.containers[name: foo].image", "x")},
			[]string{`Assign "a" and Assign "b" conflict`, "v1/Pod", "spec.containers", "an object", "a list keyed by name"}},
		{"field vs list at the top", []*Mutator{assign(t, "a", "spec.name", "x"), assign(t, "b", "spec[name: foo].x", "x")}, []string{`Assign "a" and Assign "b"`}},
		{"list keyed by two fields", []*Mutator{assign(t, "a", "spec[image: bar].x", "x"), assign(t, "b", "spec[name: foo].x", "x")},
			[]string{"a list keyed by image", "a list keyed by name"}},
		{"list vs set", []*Mutator{assign(t, "a", "spec.args[name: x].y", "x"), set("s", "spec.args")}, []string{`Assign "a" and ModifySet "s"`}},
		{"set vs string", []*Mutator{image("i", "spec.containers[name: *].image"), set("s", "spec.containers[name: *].image")},
			[]string{`AssignImage "i" and ModifySet "s"`, "a string", "a set"}},
		{"past an AssignImage", []*Mutator{image("i", "spec.foo"), assign(t, "a", "spec.foo.bar", "x")}, []string{`Assign "a" and AssignImage "i"`}},
		{"three-way names every pair", []*Mutator{assign(t, "a", "spec.c.image", "x"), assign(t, "b", "spec.c[name: foo].image", "x"), assign(t, "c", "spec.c[image: foo].x", "x")},
			[]string{`Assign "a" and Assign "b"`, `Assign "a" and Assign "c"`, `Assign "b" and Assign "c"`}},
		{"unknown conflicts with nothing", []*Mutator{assign(t, "a", "spec.containers", "[]"), assign(t, "b", "spec.containers[name: foo].image", "x")}, nil},
		{"glob and key on the same field", []*Mutator{assign(t, "a", "spec.containers[name: *].image", "x"), assign(t, "b", "spec.containers[name: foo].image", "x")}, nil},
		{"different kinds", []*Mutator{assign(t, "a", "spec.containers[name: foo].image", "x"), deployOnly}, nil},
		{"different operations", []*Mutator{updateOnly, createOnly}, nil},
		{"same path, different values", []*Mutator{assign(t, "a", "spec.x", "1"), assign(t, "b", "spec.x", "2")}, nil},
		{"AssignMetadata has no schema", []*Mutator{mustDecode(t, "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  location: metadata.labels.x\n  parameters: {assign: {value: x}}\n"), assign(t, "b", "spec.metadata[name: x].y", "1")}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSystem(tc.ms)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected conflict: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no conflict reported")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSystemDuplicates(t *testing.T) {
	_, err := NewSystem([]*Mutator{assign(t, "a", "spec.x", "1"), assign(t, "a", "spec.y", "1")})
	if err == nil || !strings.Contains(err.Error(), `Assign "a": metadata.name: Duplicate value`) {
		t.Fatalf("error %v", err)
	}
	// The same name under another kind is another object, as in Kubernetes.
	label := mustDecode(t, "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: a}\nspec:\n  location: metadata.labels.x\n  parameters: {assign: {value: x}}\n")
	if _, err := NewSystem([]*Mutator{assign(t, "a", "spec.x", "1"), label}); err != nil {
		t.Fatal(err)
	}
}

func TestLabelMap(t *testing.T) {
	l := labelMap{"a": "b", "n": int64(1)}
	var _ labels.Labels = l
	if !l.Has("a") || l.Has("n") || l.Get("a") != "b" {
		t.Fatal("LabelMap misreads labels")
	}
	if v, ok := l.Lookup("a"); !ok || v != "b" {
		t.Fatal("Lookup")
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		target match.Target
		want   string
	}{
		{match.Target{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "shop", Name: "web"}, "Deployment.apps shop/web"},
		{match.Target{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "shop", GenerateName: "web-"}, "Pod shop/web-*"},
		{match.Target{GVK: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, Name: "admin"}, "ClusterRole.rbac.authorization.k8s.io admin"},
	}
	for _, tc := range tests {
		if got := describe(&tc.target); got != tc.want {
			t.Errorf("describe = %q, want %q", got, tc.want)
		}
	}
}

// FindConflicts reports the same pairs NewSystem refuses, as values, each
// pair once with the mutator that runs first first.
func TestFindConflicts(t *testing.T) {
	a, b, c := ID{Kind: "Assign", Name: "a"}, ID{Kind: "Assign", Name: "b"}, ID{Kind: "Assign", Name: "c"}
	cases := []struct {
		name string
		ms   []*Mutator
		want [][2]ID
	}{
		{"none", []*Mutator{assign(t, "a", "spec.x", "1"), assign(t, "b", "spec.y", "1")}, nil},
		{"duplicate", []*Mutator{assign(t, "a", "spec.x", "1"), assign(t, "a", "spec.y", "1")}, [][2]ID{{a, a}}},
		{"schema, added in reverse", []*Mutator{assign(t, "b", "spec.c[name: x].v", "1"), assign(t, "a", "spec.c.v", "1")}, [][2]ID{{a, b}}},
		{"three-way", []*Mutator{assign(t, "a", "spec.c.image", "x"), assign(t, "b", "spec.c[name: foo].image", "x"), assign(t, "c", "spec.c[image: foo].x", "x")},
			[][2]ID{{a, b}, {a, c}, {b, c}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [][2]ID
			for _, c := range FindConflicts(tc.ms) {
				got = append(got, c.Mutators)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("conflicts %v, want %v", got, tc.want)
			}
			_, err := NewSystem(tc.ms)
			if (err != nil) != (len(tc.want) > 0) {
				t.Fatalf("NewSystem error %v, want one exactly when there are conflicts", err)
			}
		})
	}
}
