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
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	mutationsv1alpha1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

var fuzzNames = []string{"a", "b", "k", "name"}

func fuzzLocation(s *fuzzobjectstest.Source) string {
	var nodes []path.Node
	depth := 1 + s.Next(4)
	for i := 0; i < depth; i++ {
		nodes = append(nodes, path.Object{Reference: fuzzNames[s.Next(len(fuzzNames))]})
		switch s.Next(4) {
		case 0:
			nodes = append(nodes, path.List{KeyField: fuzzNames[s.Next(2)+2], Glob: true})
		case 1:
			var v any = "x"
			if s.Next(2) == 0 {
				v = int64(1)
			}
			nodes = append(nodes, path.List{KeyField: fuzzNames[s.Next(2)+2], KeyValue: v})
		}
	}
	return path.Path{Nodes: nodes}.String()
}

func fuzzValue(s *fuzzobjectstest.Source, depth int) any {
	switch s.Next(6) {
	case 0:
		return "x"
	case 1:
		return int64(s.Next(3))
	case 2:
		return nil
	case 3:
		if depth > 2 {
			return true
		}
		l := []any{} // as JSON decodes []: a mutator's values only come from JSON
		for i := s.Next(3); i > 0; i-- {
			l = append(l, fuzzValue(s, depth+1))
		}
		return l
	default:
		if depth > 3 {
			return 1.5
		}
		m := map[string]any{}
		for i := s.Next(4); i > 0; i-- {
			m[fuzzNames[s.Next(len(fuzzNames))]] = fuzzValue(s, depth+1)
		}
		return m
	}
}

var fuzzApplyTo = []mutationsv1.ApplyTo{{Groups: []string{""}, Versions: []string{"v1"}, Kinds: []string{"Pod"}}}

func fuzzMutator(s *fuzzobjectstest.Source, i int) *Mutator {
	meta := metav1.ObjectMeta{Name: "m" + string(rune('a'+i))}
	loc := fuzzLocation(s)
	tests := fuzzobjectstest.PathTests(s, loc)
	var m *Mutator
	switch s.Next(4) {
	case 0:
		m, _ = newAssign(&mutationsv1.Assign{ObjectMeta: meta, Spec: mutationsv1.AssignSpec{ApplyTo: fuzzApplyTo, Location: loc,
			Parameters: mutationsv1.AssignParameters{PathTests: tests, Assign: mutationsv1.AssignField{Value: &mutationsv1.Value{Value: fuzzValue(s, 0)}}}}})
	case 1:
		m, _ = newModifySet(fuzzobjectstest.ModifySet(s, meta, fuzzApplyTo, loc, tests, func() any { return fuzzValue(s, 1) }))
	case 2:
		m, _ = newAssignImage(&mutationsv1alpha1.AssignImage{ObjectMeta: meta, Spec: mutationsv1.AssignImageSpec{ApplyTo: fuzzApplyTo, Location: loc,
			Parameters: mutationsv1.AssignImageParameters{PathTests: tests, AssignDomain: []string{"", "r.io"}[s.Next(2)], AssignTag: ":v1"}}})
	default:
		m, _ = newAssignMetadata(&mutationsv1.AssignMetadata{ObjectMeta: meta, Spec: mutationsv1.AssignMetadataSpec{Location: "metadata.labels." + fuzzNames[s.Next(len(fuzzNames))],
			Parameters: mutationsv1.MetadataParameters{Assign: mutationsv1.AssignField{Value: &mutationsv1.Value{Value: "v"}}}}})
	}
	if m != nil && s.Next(3) == 0 {
		// A selector on a label an AssignMetadata may add.
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{fuzzNames[s.Next(len(fuzzNames))]: "v"}}
		m.matcher, _ = match.Compile(match.Match{LabelSelector: sel}, nil)
	}
	return m
}

// FuzzSystem loads random mutators and runs them over a random object.
// NewSystem may refuse them only for a conflict, and Mutate fail only for
// a rule a test can see in the object: a value of another shape where the
// location goes on (checked against the object as the walk left it), an
// image or a set that is not one, or two mutators fighting. An object that
// converged stays put on the next run, and unless two mutators fought
// over it (three passes or more, settled by the snapshot compare) that
// run changes nothing at all: it is the pass Mutate proved needless when
// it stopped after a pass that changed the object (see settles). The
// seeds must reach mutations: a Mutate that refused or skipped everything
// would pass the rest.
func FuzzSystem(f *testing.F) {
	seeds := []string{"", "\x00\x01\x02\x03", "\x05\x04\x03\x02\x01\x00\x07\x08", strings.Repeat("\x01\x02", 40), strings.Repeat("\x03\x00\x05", 40)}
	rng := rand.New(rand.NewPCG(31, 33))
	for range 60 {
		seed := make([]byte, 96)
		for i := range seed {
			seed[i] = byte(rng.UintN(256))
		}
		seeds = append(seeds, string(seed))
	}
	for _, seed := range seeds {
		f.Add([]byte(seed))
	}
	// The count is of this run of the target: every input it ran, the
	// seeds and the files of testdata/fuzz/FuzzSystem alike, which go test
	// -fuzz writes on any finding. Counting the seeds alone only when the
	// run held nothing else would stop checking at the first such file.
	var inputs, mutated atomic.Int64
	f.Cleanup(func() {
		// A fuzzing worker sees a part of the inputs; a -run that picks
		// one input leaves too few to count.
		if fuzzing := flag.Lookup("test.fuzz"); fuzzing != nil && fuzzing.Value.String() != "" {
			return
		}
		f.Logf("%d of %d inputs mutated their object", mutated.Load(), inputs.Load())
		if inputs.Load() >= int64(len(seeds)) && mutated.Load() < inputs.Load()/4 {
			f.Errorf("only %d of %d inputs mutated their object: the oracle checks too little", mutated.Load(), inputs.Load())
		}
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		inputs.Add(1)
		s := fuzzobjectstest.NewSource(data)
		var ms []*Mutator
		for i := s.Next(6); i >= 0; i-- {
			if m := fuzzMutator(s, i); m != nil {
				ms = append(ms, m)
			}
		}
		sys, err := NewSystem(ms)
		if err != nil {
			if conflict := (*ConflictError)(nil); !errors.As(err, &conflict) {
				t.Fatalf("NewSystem refused the mutators for no conflict: %v", err)
			}
			return
		}
		o, _ := fuzzValue(s, 0).(map[string]any)
		if o == nil {
			o = map[string]any{}
		}
		target := podTarget()
		// The object's labels, as the plugin gives them.
		target.Labels = UnstructuredLabels(o)
		cands := sys.Candidates(target.GVK, OperationCreate)
		res, err := Mutate(cands, &unstructured.Unstructured{Object: o}, target, Options{})
		if err != nil {
			explainError(t, err, cands, o)
			return
		}
		if res.Mutated() {
			mutated.Add(1)
		}
		// Converged objects stay put.
		before := deepCopyJSON(o)
		again := podTarget()
		again.Labels = UnstructuredLabels(o)
		res2, err := Mutate(cands, &unstructured.Unstructured{Object: o}, again, Options{})
		if err != nil {
			t.Fatalf("second run failed: %v", err)
		}
		if !jsonEqual(before, o) {
			t.Fatalf("a converged object changed on the next admission (passes %d):\nbefore %v\nafter  %v%s", res.Passes, before, o, describeCase(cands))
		}
		if res.Passes < 3 && res2.Mutated() {
			t.Fatalf("after %d passes, the next one changed the object (%v):\n%v%s", res.Passes, IDs(res2.Applied), before, describeCase(cands))
		}
	})
}

// mismatchError is the walker's error for a value of another shape than
// the location's next node needs.
var mismatchError = regexp.MustCompile(`^(.+) expects (an object|a list|list elements that are objects), the object has (.+)$`)

// explainError fails t unless err is one a rule explains, for the object
// o as the failed Mutate left it.
func explainError(t *testing.T, err error, cands []*Mutator, o map[string]any) {
	t.Helper()
	if errors.Is(err, ErrNotConverging) {
		if len(cands) < 2 {
			t.Fatalf("one mutator cannot fight itself: %v", err)
		}
		return
	}
	msg := strings.TrimPrefix(err.Error(), "Pod default/web: ")
	for _, m := range cands {
		prefix := fmt.Sprintf("%s %q: ", m.id, m.location.String())
		rest, ok := strings.CutPrefix(msg, prefix)
		if !ok {
			continue
		}
		loc := m.location.String()
		switch sub := mismatchError.FindStringSubmatch(rest); {
		case sub != nil:
			at, err := path.Parse(sub[1])
			if err != nil || !path.HasPrefix(m.location, at) {
				t.Fatalf("%v: %q is not a prefix of the location", err, sub[1])
			}
			want := map[string]string{"a list": "a list"}[sub[2]]
			if want == "" {
				want = "an object"
			}
			for _, v := range append(valuesAt(o, at.Nodes), createdKey(at.Nodes)...) {
				if got := jsonTypeName(v); got == sub[3] && got != want {
					return
				}
			}
			t.Fatalf("%v: nothing at %s in %v is %s", err, sub[1], o, sub[3])
		case m.id.Kind == mutationsv1.KindAssignImage && strings.HasPrefix(rest, "the image at "+loc+" is ") && strings.HasSuffix(rest, ", not a string"),
			m.id.Kind == mutationsv1.KindModifySet && strings.HasPrefix(rest, loc+" is ") && strings.HasSuffix(rest, ", not a list of values, so it cannot be treated as a set"):
			return
		}
	}
	t.Fatalf("an error no rule explains: %v", err)
}

// createdKey is, for nodes ending in `[k: v].k`, the v of the element the
// walker creates (and drops when nothing below it can be written): a
// location that goes on below its own key field.
func createdKey(nodes []path.Node) []any {
	if len(nodes) < 2 {
		return nil
	}
	l, isList := nodes[len(nodes)-2].(path.List)
	o, isObject := nodes[len(nodes)-1].(path.Object)
	if !isList || !isObject || l.Glob || l.KeyField != o.Reference {
		return nil
	}
	return []any{l.KeyValue}
}

// valuesAt is every value the nodes lead to in o: a glob goes into every
// element, a keyed selector into those whose key holds its value.
func valuesAt(o any, nodes []path.Node) []any {
	if len(nodes) == 0 {
		return []any{o}
	}
	var out []any
	switch n := nodes[0].(type) {
	case path.Object:
		if m, ok := o.(map[string]any); ok {
			if v, ok := m[n.Reference]; ok {
				out = valuesAt(v, nodes[1:])
			}
		}
	case path.List:
		l, _ := o.([]any)
		for _, e := range l {
			if m, ok := e.(map[string]any); !n.Glob && (!ok || fmt.Sprint(m[n.KeyField]) != fmt.Sprint(n.KeyValue)) {
				continue
			}
			out = append(out, valuesAt(e, nodes[1:])...)
		}
	}
	return out
}
