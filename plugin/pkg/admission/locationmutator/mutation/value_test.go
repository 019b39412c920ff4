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
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
)

// keyValue draws a JSON value from s, with the shapes jsonEqual tells
// apart or not: one number in several Go types (80, 80.0, float32, uint64),
// -0, NaN, infinities, integers past 2^53 and 2^63, null against an empty
// or nil object or list, and types that are not JSON at all.
func keyValue(s *fuzzobjectstest.Source, depth int) any {
	numbers := []any{
		int64(0), 0.0, math.Copysign(0, -1), int64(1), 1, int32(1), uint8(1), 1.0, float32(1), uint64(1),
		1.5, float32(1.5), math.NaN(), math.Inf(1), math.Inf(-1),
		int64(1 << 53), int64(1<<53 + 1), float64(1 << 53), float64(1<<53 + 2),
		int64(math.MaxInt64), int64(math.MinInt64), float64(math.MaxInt64), float64(math.MinInt64),
		uint64(math.MaxUint64), uint64(1 << 63), float64(1 << 64), uint(1 << 63),
	}
	switch s.Next(9) {
	case 0:
		return []string{"", "x", "y", "1"}[s.Next(4)]
	case 1, 2:
		return numbers[s.Next(len(numbers))]
	case 3:
		return []any{nil, true, false, []any(nil), map[string]any(nil), []string{"x"}, struct{}{}}[s.Next(7)]
	case 4, 5:
		if depth > 2 {
			return "x"
		}
		l := []any{}
		for i := s.Next(3); i > 0; i-- {
			l = append(l, keyValue(s, depth+1))
		}
		return l
	default:
		if depth > 2 {
			return int64(2)
		}
		m := map[string]any{}
		for i := s.Next(3); i > 0; i-- {
			m[fuzzNames[s.Next(len(fuzzNames))]] = keyValue(s, depth+1)
		}
		return m
	}
}

// sameKeyAsEqual fails unless a and b share a key exactly when jsonEqual
// says they are equal.
func sameKeyAsEqual(t *testing.T, a, b any) {
	t.Helper()
	ka, okA := appendJSONKey(nil, a)
	kb, okB := appendJSONKey(nil, b)
	if sameKey := okA && okB && string(ka) == string(kb); sameKey != jsonEqual(a, b) {
		t.Fatalf("%#v and %#v: same key %v, jsonEqual %v", a, b, sameKey, jsonEqual(a, b))
	}
}

// referenceModifySet is the ModifySet case of set written the plain way,
// every membership test a search with jsonEqual.
func referenceModifySet(m *Mutator, cur any, exists bool) (any, bool) {
	op := m.op.(modifySetOp)
	values := op.values.values
	contains := func(list []any, v any) bool {
		for _, e := range list {
			if jsonEqual(e, v) {
				return true
			}
		}
		return false
	}
	if !exists {
		if op.prune || len(values) == 0 {
			return cur, false
		}
		var out []any
		for _, v := range values {
			if !contains(out, v) {
				out = append(out, deepCopyJSON(v))
			}
		}
		return out, true
	}
	list := cur.([]any)
	if op.prune {
		var out []any
		for j, e := range list {
			if contains(values, e) {
				if out == nil {
					out = append([]any{}, list[:j]...)
				}
				continue
			}
			if out != nil {
				out = append(out, e)
			}
		}
		if out == nil {
			return cur, false
		}
		return out, true
	}
	changed := false
	for _, v := range values {
		if !contains(list, v) {
			list = append(list, deepCopyJSON(v))
			changed = true
		}
	}
	return list, changed
}

func checkKeysAndModifySet(t *testing.T, data []byte) {
	s := fuzzobjectstest.NewSource(data)
	a, b := keyValue(s, 0), keyValue(s, 0)
	sameKeyAsEqual(t, a, b)
	sameKeyAsEqual(t, a, deepCopyJSON(a))

	var values []mutationsv1.Value
	for i := s.Next(5); i > 0; i-- {
		values = append(values, mutationsv1.Value{Value: keyValue(s, 1)})
	}
	var list []any
	for i := s.Next(6); i > 0; i-- {
		list = append(list, keyValue(s, 1))
	}
	exists := s.Next(4) != 0
	// The values once are searched one by one; repeated past
	// linearMembersMax, through their keys. Repeating them changes no
	// result.
	for _, copies := range []int{1, linearMembersMax + 1} {
		checkModifySet(t, slices.Repeat(values, copies), list, exists)
	}
}

func checkModifySet(t *testing.T, values []mutationsv1.Value, list []any, exists bool) {
	for _, op := range []string{mutationsv1.OperationMerge, mutationsv1.OperationPrune} {
		m, errs := newModifySet(&mutationsv1.ModifySet{ObjectMeta: metav1.ObjectMeta{Name: "set"}, Spec: mutationsv1.ModifySetSpec{ApplyTo: fuzzApplyTo, Location: "spec.list",
			Parameters: mutationsv1.ModifySetParameters{Operation: op, Values: mutationsv1.Values{FromList: values}}}})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		var cur any
		spec := map[string]any{}
		if exists {
			cur = list
			spec["list"] = deepCopyJSON(cur)
		}
		// The walker reads a null list as missing.
		want, wantChanged := referenceModifySet(m, deepCopyJSON(cur), exists && !isNull(cur))
		gotChanged, err := m.mutate(map[string]any{"spec": spec}, requestMeta{})
		got := spec["list"]
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		// %#v tells every Go type, nil from empty and NaN apart.
		if w, g := fmt.Sprintf("%#v", want), fmt.Sprintf("%#v", got); w != g || wantChanged != gotChanged {
			t.Fatalf("%s of %#v into %#v:\nreference %s (changed %v)\ngot       %s (changed %v)", op, values, cur, w, wantChanged, g, gotChanged)
		}
	}
}

// The ModifySet, searching its values one by one or through their keys,
// and the keys it is built on agree with jsonEqual and the reference
// ModifySet on random values.
func TestModifySetMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 2))
	for i := 0; i < 10000; i++ {
		data := make([]byte, r.IntN(80))
		for j := range data {
			data[j] = byte(r.UintN(256))
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkKeysAndModifySet(t, data) })
	}
}

func FuzzModifySet(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 5, 1, 9, 3, 2, 1, 1, 4, 1, 2, 3, 1, 7, 1, 1, 1, 9, 2, 6, 0, 1})
	f.Add([]byte("numbers of every type, nulls and NaNs"))
	f.Fuzz(checkKeysAndModifySet)
}

func TestJSONKeyCases(t *testing.T) {
	cases := map[string]struct {
		a, b any
	}{
		"int64 and float64":           {int64(80), 80.0},
		"int and float32":             {80, float32(80)},
		"-0 and 0":                    {math.Copysign(0, -1), int64(0)},
		"past 2^53":                   {int64(1<<53 + 1), float64(1 << 53)},
		"MaxInt64 and 2^63":           {int64(math.MaxInt64), float64(1 << 63)},
		"MinInt64 and -2^63":          {int64(math.MinInt64), float64(math.MinInt64)},
		"uint64 past MaxInt64":        {uint64(1<<63 + 1), float64(1 << 63)},
		"NaN and itself":              {math.NaN(), math.NaN()},
		"null and empty object":       {nil, map[string]any{}},
		"nil and empty object":        {map[string]any(nil), map[string]any{}},
		"nil and empty list":          {[]any(nil), []any{}},
		"string and number":           {"1", int64(1)},
		"nested numbers":              {map[string]any{"a": []any{int64(1)}}, map[string]any{"a": []any{1.0}}},
		"keys that concatenate alike": {map[string]any{"ab": "c"}, map[string]any{"a": "bc"}},
		"not JSON":                    {[]string{"x"}, []string{"x"}},
		"field path":                  {field.NewPath("a"), field.NewPath("a")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sameKeyAsEqual(t, tc.a, tc.b)
			sameKeyAsEqual(t, tc.a, tc.a)
			sameKeyAsEqual(t, tc.b, tc.b)
		})
	}
}
