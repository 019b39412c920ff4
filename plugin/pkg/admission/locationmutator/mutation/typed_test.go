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
	"math/rand"
	"reflect"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	mutationsv1alpha1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
)

// On a typed object the walker must do what it does on the object's
// unstructured form decoded back after every mutator (decodedEachTime),
// for the pods, deployments and mutators of package fuzzobjectstest.

func typedTarget(obj runtime.Object, gvk schema.GroupVersionKind) *match.Target {
	a := obj.(metav1.Object)
	return &match.Target{GVK: gvk, Namespace: a.GetNamespace(), Name: a.GetName(), GenerateName: a.GetGenerateName(), Labels: labels.Set(a.GetLabels())}
}

type diffStats struct{ same, mutated, errored, misfits, fights int }

// decodedEachTime is what Mutate must do on a typed object, the slow way:
// the object is converted to its unstructured form, the walker runs there,
// and the result is decoded back into the type after every mutator, as
// kube-apiserver decodes the object a webhook returns. A mutator changed it
// when its form is then different.
type decodedEachTime struct {
	obj runtime.Object
}

// errDecoding marks the model's refusal of an object the decoder refuses.
var errDecoding = errors.New("the object does not decode")

// apply runs m once. A change that m's next run changes again (or
// refuses) is unsure, as the typed walk must find such changes unsure
// too, without running m again: then the next pass runs (see settles).
func (o *decodedEachTime) apply(m *Mutator, md requestMeta) (effect, error) {
	e, err := o.applyOnce(m, md)
	if err == nil && e.changed {
		again := &decodedEachTime{o.obj.DeepCopyObject()}
		e2, err2 := again.applyOnce(m, md)
		e.unsure = err2 != nil || e2.changed
	}
	return e, err
}

func (o *decodedEachTime) applyOnce(m *Mutator, md requestMeta) (effect, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
	if err != nil {
		return effect{}, err
	}
	before := deepCopyJSON(map[string]any(u))
	e, err := m.mutateUnstructured(u, md)
	if err != nil {
		return effect{}, err
	}
	out := reflect.New(reflect.TypeOf(o.obj).Elem())
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, out.Interface()); err != nil {
		return effect{}, fmt.Errorf("%w after %s: %v", errDecoding, m.id, err)
	}
	reflect.ValueOf(o.obj).Elem().Set(out.Elem())
	after, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
	return effect{wrote: e.wrote, changed: !jsonEqual(before, after), reached: e.reached}, err
}

func (o *decodedEachTime) labels() labels.Labels {
	return labels.Set(o.obj.(metav1.Object).GetLabels())
}

func (o *decodedEachTime) snapshot() (any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
}

func (o *decodedEachTime) same(snapshot any) (bool, error) {
	now, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
	return jsonEqual(snapshot, now), err
}

// checkTypedEquivalence runs cands on obj typed, with Mutate, and with the
// model, and fails t on any difference but the documented one: a value the
// field cannot hold is refused by name on the typed object, where the
// decoder may cut it silently.
func checkTypedEquivalence(t testing.TB, cands []*Mutator, orig runtime.Object, gvk schema.GroupVersionKind, st *diffStats) {
	t.Helper()
	typed := orig.DeepCopyObject()
	tres, terr := Mutate(cands, typed, typedTarget(orig, gvk), Options{})
	model := orig.DeepCopyObject()
	mres, merr := run(cands, &decodedEachTime{model}, typedTarget(orig, gvk), nil, nil)

	var misfit *misfitError
	switch {
	case terr != nil && errors.As(terr, &misfit) && merr == nil:
		st.misfits++
		return
	case (terr == nil) != (merr == nil):
		t.Fatalf("errors differ:\ntyped %v\nmodel %v", terr, merr)
	case terr != nil:
		st.errored++
		// Where the walker itself refuses on both, it says the same.
		walkerErr := !errors.As(terr, &misfit) && !errors.Is(merr, errDecoding) && !errors.Is(merr, ErrNotConverging)
		if walkerErr && terr.Error() != merr.Error() {
			t.Fatalf("errors differ:\ntyped %v\nmodel %v", terr, merr)
		}
		return
	}
	if tres.Passes == mres.Passes+1 {
		// The typed walk may find a change unsure that the model's
		// second run shows settled (a key lost below a MustNotExist that
		// then holds): the pass it runs for that changes nothing, or the
		// object and the mutators applied would differ below. Never
		// fewer passes, which would be a skip the model disproves.
		tres.Passes = mres.Passes
	}
	if !reflect.DeepEqual(tres, mres) {
		t.Fatalf("results differ:\ntyped %+v\nmodel %+v", tres, mres)
	}
	st.same++
	if tres.Mutated() {
		st.mutated++
	}
	if tres.Passes >= 3 {
		st.fights++
	}
	got, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		t.Fatal(err)
	}
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(model)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(got, want) {
		t.Fatalf("objects differ:\ntyped %s\nmodel %s", toYAML(got), toYAML(want))
	}
}

func typedCase(data []byte) ([]*Mutator, runtime.Object, schema.GroupVersionKind, bool) {
	s := fuzzobjectstest.NewSource(data)
	obj := fuzzobjectstest.TypedObject(s)
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	_, deploy := obj.(*appsv1.Deployment)
	if deploy {
		gvk = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	}
	g := &fuzzobjectstest.Mutators{Source: s, Deployment: deploy}
	var ms []*Mutator
	for i := s.Next(6); i >= 0; i-- {
		if m := compile(g.Mutator(i)); m != nil {
			ms = append(ms, m)
		}
	}
	sys, err := NewSystem(ms)
	if err != nil {
		return nil, nil, gvk, false
	}
	return sys.Candidates(gvk, OperationCreate), obj, gvk, true
}

// compile is the mutator of a manifest fuzzobjectstest made, or nil where
// the manifest is one the server refuses.
func compile(manifest any) *Mutator {
	var m *Mutator
	switch o := manifest.(type) {
	case *mutationsv1.Assign:
		m, _ = newAssign(o)
	case *mutationsv1.ModifySet:
		m, _ = newModifySet(o)
	case *mutationsv1alpha1.AssignImage:
		m, _ = newAssignImage(o)
	case *mutationsv1.AssignMetadata:
		m, _ = newAssignMetadata(o)
	}
	return m
}

func describeCase(cands []*Mutator) string {
	var b strings.Builder
	for _, m := range cands {
		fmt.Fprintf(&b, "\n  %s %s conds=%v %+v", m.id, m.location.String(), m.conds, m.op)
	}
	return b.String()
}

func FuzzTypedDifferential(f *testing.F) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		b := make([]byte, 40+r.Intn(80))
		r.Read(b)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cands, obj, gvk, ok := typedCase(data)
		if !ok {
			return
		}
		defer func() {
			if t.Failed() {
				t.Log(describeCase(cands))
			}
		}()
		checkTypedEquivalence(t, cands, obj, gvk, &diffStats{})
	})
}

// TestTypedDifferential runs the differential check on random cases at
// every test run; the fuzz target goes further.
func TestTypedDifferential(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	r := rand.New(rand.NewSource(42))
	var st diffStats
	for i := 0; i < n; i++ {
		data := make([]byte, 30+r.Intn(120))
		r.Read(data)
		cands, obj, gvk, ok := typedCase(data)
		if !ok {
			continue
		}
		ok = t.Run("", func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("case %d (%x):%s", i, data, describeCase(cands))
				}
			}()
			checkTypedEquivalence(t, cands, obj, gvk, &st)
		})
		if !ok {
			break
		}
	}
	t.Logf("the same %d times (of which mutated %d, three passes or more %d), both refused %d, a misfit refused %d", st.same, st.mutated, st.fights, st.errored, st.misfits)
	if st.same < n/4 || st.mutated < n/10 || st.fights == 0 || st.errored == 0 || st.misfits == 0 {
		t.Errorf("too few cases ran typed to prove anything: %+v", st)
	}
}

func podMutator(kind, name, location, params string) string {
	api := "v1"
	if kind == mutationsv1.KindAssignImage {
		api = "v1alpha1"
	}
	return fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/%s
kind: %s
metadata: {name: %s}
spec:
  applyTo: [{groups: [""], versions: ["v1"], kinds: [Pod]}]
  location: '%s'
  parameters: %s
`, api, kind, name, location, params)
}

func testPod() *corev1.Pod {
	f := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "nginx:1.27", Args: []string{"--v=2"}, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}},
			{Name: "proxy", Image: "envoy", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}, SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &f}},
		}},
	}
}

// The shapes that must run typed, each checked against the unstructured
// path.
func TestTypedSupported(t *testing.T) {
	tests := []struct{ name, doc string }{
		{"scalar in a glob", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name:*].imagePullPolicy", "{assign: {value: Always}}")},
		{"keyed element created", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: app].env[name: B].value", "{assign: {value: x}}")},
		{"keyed element exists", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: app].env[name: A].value", "{assign: {value: x}}")},
		{"integer key", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: proxy].ports[containerPort: 8080].protocol", "{assign: {value: UDP}}")},
		{"integer key created", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: proxy].ports[containerPort: 9090].name", "{assign: {value: metrics}}")},
		{"pointer parent created", podMutator(mutationsv1.KindAssign, "a", "spec.securityContext.runAsNonRoot", "{assign: {value: true}}")},
		{"pointer scalar", podMutator(mutationsv1.KindAssign, "a", "spec.terminationGracePeriodSeconds", "{assign: {value: 30}}")},
		{"pointer scalar unchanged", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: proxy].securityContext.allowPrivilegeEscalation", "{assign: {value: false}}")},
		{"struct value", podMutator(mutationsv1.KindAssign, "a", "spec.securityContext", "{assign: {value: {runAsUser: 1000, runAsNonRoot: true}}}")},
		{"default if unset", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name:*].imagePullPolicy", "{pathTests: [{subPath: 'spec.containers[name:*].imagePullPolicy', condition: MustNotExist}], assign: {value: Always}}")},
		{"new container", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: side].image", "{assign: {value: x}}")},
		{"must exist stops creation", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: side].image", "{pathTests: [{subPath: 'spec.containers[name: side]', condition: MustExist}], assign: {value: x}}")},
		{"fromMetadata", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: app].env[name: NS].value", "{assign: {fromMetadata: {field: namespace}}}")},
		{"map entry", podMutator(mutationsv1.KindAssign, "a", "spec.nodeSelector.zone", "{assign: {value: a}}")},
		{"quantity", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name:*].resources.limits.memory", "{assign: {value: 1Gi}}")},
		{"quantity on one container", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: app].resources.limits.cpu", "{assign: {value: 500m}}")},
		{"quantity if unset", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name:*].resources.requests.cpu", "{pathTests: [{subPath: 'spec.containers[name:*].resources.requests.cpu', condition: MustNotExist}], assign: {value: 100m}}")},
		{"prune", podMutator(mutationsv1.KindModifySet, "a", "spec.containers[name:*].args", "{operation: prune, values: {fromList: [--v=2]}}")},
		{"merge", podMutator(mutationsv1.KindModifySet, "a", "spec.containers[name:*].args", "{values: {fromList: [-x, -x, --v=2]}}")},
		{"image", podMutator(mutationsv1.KindAssignImage, "a", "spec.containers[name:*].image", "{assignDomain: mirror.example.com}")},
		{"label", `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: a}
spec:
  location: metadata.labels.owner
  parameters: {assign: {value: platform}}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st diffStats
			checkTypedEquivalence(t, []*Mutator{mustDecode(t, tt.doc)}, testPod(), podTarget().GVK, &st)
			if st.same != 1 {
				t.Fatalf("not run the same way: %+v", st)
			}
		})
	}
}

// New list elements are built in structs the scratch reuses from walk to
// walk and request to request: what one element was given (a pointer to a
// new struct, a value) never shows up in the next one built in the same
// struct, nor in an element that was made and then left out.
func TestTypedNewElementsReused(t *testing.T) {
	ms := []*Mutator{
		mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.containers[name:*].env[name: B].valueFrom.fieldRef.fieldPath", "{assign: {value: metadata.name}}")),
		mustDecode(t, podMutator(mutationsv1.KindAssign, "b", "spec.containers[name:*].env[name: C].value", "{pathTests: [{subPath: 'spec.containers[name:*].env[name: C]', condition: MustExist}], assign: {value: x}}")),
		mustDecode(t, podMutator(mutationsv1.KindAssign, "c", "spec.containers[name:*].env[name: D].value", "{assign: {value: v}}")),
		mustDecode(t, podMutator(mutationsv1.KindAssign, "d", "spec.containers[name:*].ports[name: p].hostPort", "{assign: {value: 81}}")),
	}
	for range 3 {
		var st diffStats
		checkTypedEquivalence(t, ms, testPod(), podTarget().GVK, &st)
		if st.same != 1 || st.mutated != 1 {
			t.Fatalf("not run the same way: %+v", st)
		}
	}
}

// Where the unstructured form cannot be decoded as it is, or reads
// differently once decoded.
func TestTypedEdges(t *testing.T) {
	prune := mustDecode(t, podMutator(mutationsv1.KindModifySet, "a-prune", "spec.containers[name:*].args", "{operation: prune, values: {fromList: [--v=2]}}"))
	// After the prune, the empty omitempty list reads as missing: this
	// MustExist does not hold.
	merge := mustDecode(t, podMutator(mutationsv1.KindModifySet, "b-merge", "spec.containers[name:*].args", "{pathTests: [{subPath: 'spec.containers[name:*].args', condition: MustExist}], values: {fromList: [-x]}}"))
	tests := []struct {
		name    string
		ms      []*Mutator
		wantErr string
		applied int
	}{
		{"string key on an integer field", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", `spec.containers[name: proxy].ports[containerPort: "8080"].protocol`, "{assign: {value: UDP}}"))},
			`spec.containers[name: proxy].ports[containerPort: "8080"] cannot be created: key containerPort: "8080" does not fit in a field of type int32`, 0},
		{"value of the wrong type", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.terminationGracePeriodSeconds", "{assign: {value: soon}}"))}, `"soon" does not fit in a field of type int64`, 0},
		{"value out of range", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.containers[name:*].ports[containerPort: 80].hostPort", "{assign: {value: 1099511627776}}"))}, "1099511627776 does not fit in a field of type int32", 0},
		{"not a quantity", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.containers[name:*].resources.limits.memory", "{assign: {value: lots}}"))}, `"lots" does not fit in a field of type resource.Quantity`, 0},
		{"ModifySet of a number", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindModifySet, "a", "spec.containers[name:*].args", "{values: {fromList: [1]}}"))}, "1 does not fit in a field of type string", 0},
		{"quantity on the way", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.overhead.cpu.x", "{assign: {value: x}}"))}, "spec.overhead.cpu: an object does not fit in a field of type resource.Quantity", 0},
		{"unknown field dropped", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.containers[name:*].colour", "{assign: {value: red}}"))}, "", 0},
		{"empty value left out by omitempty", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.hostname", `{assign: {value: ""}}`))}, "", 0},
		{"whole list element", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: side]", "{assign: {value: {name: side, image: x}}}"))}, "", 1},
		{"new port reads with containerPort: 0", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: app].ports[name: http].protocol", "{assign: {value: TCP}}"))}, "", 1},
		{"new container's resources: {} looked at", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: side].image", "{assign: {value: x}}")),
			mustDecode(t, podMutator(mutationsv1.KindAssign, "b", "spec.containers[name:*].resources.claims[name: c].request", "{pathTests: [{subPath: 'spec.containers[name:*].resources', condition: MustExist}], assign: {value: x}}"))}, "", 2},
		{"inline TypeMeta", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "kind", "{assign: {value: Pod}}"))}, "", 1},
		{"ModifySet on structured elements", []*Mutator{mustDecode(t, podMutator(mutationsv1.KindModifySet, "a", "spec.containers[name:*].env", "{values: {fromList: [{name: B}]}}"))}, "", 1},
		{"prune next to a reader of the same field", []*Mutator{prune, merge}, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod()
			res, err := Mutate(tt.ms, pod, typedTarget(pod, podTarget().GVK), Options{})
			if (err != nil) != (tt.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if err == nil && len(res.Applied) != tt.applied {
				t.Fatalf("applied %v, want %d mutators", IDs(res.Applied), tt.applied)
			}
			var st diffStats
			checkTypedEquivalence(t, tt.ms, testPod(), podTarget().GVK, &st)
		})
	}

	// An empty name written by fromMetadata into an omitempty field reads
	// as before.
	m := mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.hostname", "{assign: {fromMetadata: {field: name}}}"))
	pod := testPod()
	pod.Name, pod.GenerateName = "", "web-"
	if res, err := Mutate([]*Mutator{m}, pod, typedTarget(pod, podTarget().GVK), Options{}); err != nil || res.Mutated() {
		t.Fatalf("error %v, result %+v", err, res)
	}
	pod.Name = "web"
	if _, err := Mutate([]*Mutator{m}, pod, typedTarget(pod, podTarget().GVK), Options{}); err != nil || pod.Spec.Hostname != "web" {
		t.Fatalf("error %v, hostname %q", err, pod.Spec.Hostname)
	}
}

// Requests run at once, each on its own object: the pooled scratch space
// of one walk is never another's (the race detector watches), and every
// object comes out as one run alone makes it.
func TestMutateTypedConcurrently(t *testing.T) {
	ms := []*Mutator{
		mustDecode(t, podMutator(mutationsv1.KindAssign, "a", "spec.containers[name:*].imagePullPolicy", "{assign: {value: Always}}")),
		mustDecode(t, podMutator(mutationsv1.KindAssign, "b", "spec.containers[name: side].image", "{assign: {value: x}}")),
		mustDecode(t, podMutator(mutationsv1.KindModifySet, "c", "spec.containers[name:*].args", "{values: {fromList: [-x]}}")),
	}
	want := testPod()
	if _, err := Mutate(ms, want, typedTarget(want, podTarget().GVK), Options{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				pod := testPod()
				if _, err := Mutate(ms, pod, typedTarget(pod, podTarget().GVK), Options{}); err != nil {
					errs <- err
					return
				}
				if !reflect.DeepEqual(pod, want) {
					errs <- fmt.Errorf("got %+v, want %+v", pod.Spec, want.Spec)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
