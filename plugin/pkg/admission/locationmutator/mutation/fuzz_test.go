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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	mutationsv1alpha1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// bytesSource hands out small choices from fuzz input, then zeros.
type bytesSource struct{ b []byte }

func (s *bytesSource) next(n int) int {
	if len(s.b) == 0 || n <= 0 {
		return 0
	}
	v := int(s.b[0]) % n
	s.b = s.b[1:]
	return v
}

var fuzzNames = []string{"a", "b", "k", "name"}

func fuzzLocation(s *bytesSource) string {
	var nodes []path.Node
	depth := 1 + s.next(4)
	for i := 0; i < depth; i++ {
		nodes = append(nodes, path.Object{Reference: fuzzNames[s.next(len(fuzzNames))]})
		switch s.next(4) {
		case 0:
			nodes = append(nodes, path.List{KeyField: fuzzNames[s.next(2)+2], Glob: true})
		case 1:
			var v any = "x"
			if s.next(2) == 0 {
				v = int64(1)
			}
			nodes = append(nodes, path.List{KeyField: fuzzNames[s.next(2)+2], KeyValue: v})
		}
	}
	return path.Path{Nodes: nodes}.String()
}

func fuzzValue(s *bytesSource, depth int) any {
	switch s.next(6) {
	case 0:
		return "x"
	case 1:
		return int64(s.next(3))
	case 2:
		return nil
	case 3:
		if depth > 2 {
			return true
		}
		var l []any
		for i := s.next(3); i > 0; i-- {
			l = append(l, fuzzValue(s, depth+1))
		}
		return l
	default:
		if depth > 3 {
			return 1.5
		}
		m := map[string]any{}
		for i := s.next(4); i > 0; i-- {
			m[fuzzNames[s.next(len(fuzzNames))]] = fuzzValue(s, depth+1)
		}
		return m
	}
}

var fuzzApplyTo = []mutationsv1.ApplyTo{{Groups: []string{""}, Versions: []string{"v1"}, Kinds: []string{"Pod"}}}

// fuzzPathTests gives loc, one time in three, a pathTest on one of its
// prefixes, either condition.
func fuzzPathTests(s *bytesSource, loc string) []mutationsv1.PathTest {
	p, err := path.Parse(loc)
	if err != nil || s.next(3) != 0 {
		return nil
	}
	d := s.next(len(p.Nodes))
	cond := mutationsv1.MustExist
	if s.next(2) == 0 {
		cond = mutationsv1.MustNotExist
	}
	return []mutationsv1.PathTest{{SubPath: path.Path{Nodes: p.Nodes[:d+1]}.String(), Condition: cond}}
}

func fuzzMutator(s *bytesSource, i int) *Mutator {
	meta := metav1.ObjectMeta{Name: "m" + string(rune('a'+i))}
	loc := fuzzLocation(s)
	tests := fuzzPathTests(s, loc)
	var m *Mutator
	switch s.next(4) {
	case 0:
		m, _ = newAssign(&mutationsv1.Assign{ObjectMeta: meta, Spec: mutationsv1.AssignSpec{ApplyTo: fuzzApplyTo, Location: loc,
			Parameters: mutationsv1.AssignParameters{PathTests: tests, Assign: mutationsv1.AssignField{Value: &mutationsv1.Value{Value: fuzzValue(s, 0)}}}}})
	case 1:
		m = fuzzModifySet(s, meta, fuzzApplyTo, loc, tests, func() any { return fuzzValue(s, 1) })
	case 2:
		m, _ = newAssignImage(&mutationsv1alpha1.AssignImage{ObjectMeta: meta, Spec: mutationsv1.AssignImageSpec{ApplyTo: fuzzApplyTo, Location: loc,
			Parameters: mutationsv1.AssignImageParameters{PathTests: tests, AssignDomain: []string{"", "r.io"}[s.next(2)], AssignTag: ":v1"}}})
	default:
		m, _ = newAssignMetadata(&mutationsv1.AssignMetadata{ObjectMeta: meta, Spec: mutationsv1.AssignMetadataSpec{Location: "metadata.labels." + fuzzNames[s.next(len(fuzzNames))],
			Parameters: mutationsv1.MetadataParameters{Assign: mutationsv1.AssignField{Value: &mutationsv1.Value{Value: "v"}}}}})
	}
	return m
}

// fuzzModifySet builds a ModifySet of one to three values from value,
// merging or pruning as s says.
func fuzzModifySet(s *bytesSource, meta metav1.ObjectMeta, applyTo []mutationsv1.ApplyTo, loc string, tests []mutationsv1.PathTest, value func() any) *Mutator {
	var vals []mutationsv1.Value
	for j := s.next(3); j >= 0; j-- {
		vals = append(vals, mutationsv1.Value{Value: value()})
	}
	op := mutationsv1.OperationMerge
	if s.next(2) == 0 {
		op = mutationsv1.OperationPrune
	}
	m, _ := newModifySet(&mutationsv1.ModifySet{ObjectMeta: meta, Spec: mutationsv1.ModifySetSpec{ApplyTo: applyTo, Location: loc,
		Parameters: mutationsv1.ModifySetParameters{PathTests: tests, Operation: op, Values: mutationsv1.Values{FromList: vals}}}})
	return m
}

func FuzzSystem(f *testing.F) {
	for _, seed := range []string{"", "\x00\x01\x02\x03", "\x05\x04\x03\x02\x01\x00\x07\x08", strings.Repeat("\x01\x02", 40), strings.Repeat("\x03\x00\x05", 40)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &bytesSource{b: data}
		var ms []*Mutator
		for i := s.next(6); i >= 0; i-- {
			if m := fuzzMutator(s, i); m != nil {
				ms = append(ms, m)
			}
		}
		sys, err := NewSystem(ms)
		if err != nil {
			return // a conflict, refused at load
		}
		o, _ := fuzzValue(s, 0).(map[string]any)
		if o == nil {
			o = map[string]any{}
		}
		target := podTarget()
		target.Labels = labels.Set{}
		cands := sys.Candidates(target.GVK, OperationCreate)
		_, err = Mutate(cands, o, target)
		if err != nil {
			if errors.Is(err, ErrNotConverging) {
				t.Logf("reported: %v", err)
			}
			return
		}
		// Converged objects stay put.
		before := deepCopyJSON(o)
		if _, err := Mutate(cands, o, podTarget()); err != nil {
			t.Fatalf("second run failed: %v", err)
		}
		if !jsonEqual(before, o) {
			t.Fatalf("a converged object changed on the next admission:\nbefore %v\nafter  %v", before, o)
		}
	})
}
