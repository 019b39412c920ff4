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
	"encoding/binary"
	"maps"
	"math"
	"slices"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
)

// numberOf returns the value of a number; isInt says whether it is exact
// as an int64. JSON values here are what unstructured objects hold:
// map[string]any, []any, string, bool, nil and numbers. Numbers may be any
// Go integer or float type (hand-built unstructured objects use int), so
// equality goes by numeric value, never by Go type.
func numberOf(v any) (i int64, f float64, isInt, ok bool) {
	switch n := v.(type) {
	case int64:
		return n, 0, true, true
	case int:
		return int64(n), 0, true, true
	case int32:
		return int64(n), 0, true, true
	case int16:
		return int64(n), 0, true, true
	case int8:
		return int64(n), 0, true, true
	case uint8:
		return int64(n), 0, true, true
	case uint16:
		return int64(n), 0, true, true
	case uint32:
		return int64(n), 0, true, true
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n), 0, true, true
		}
		return 0, float64(n), false, true
	case uint:
		if uint64(n) <= math.MaxInt64 {
			return int64(n), 0, true, true
		}
		return 0, float64(n), false, true
	case float64:
		return 0, n, false, true
	case float32:
		return 0, float64(n), false, true
	}
	return 0, 0, false, false
}

func numbersEqual(a, b any) (equal, bothNumbers bool) {
	ai, af, aInt, aok := numberOf(a)
	if !aok {
		return false, false
	}
	bi, bf, bInt, bok := numberOf(b)
	if !bok {
		return false, false
	}
	switch {
	case aInt && bInt:
		return ai == bi, true
	case aInt:
		bi, ok := mutationsv1.FloatAsInt(bf)
		return ok && bi == ai, true
	case bInt:
		ai, ok := mutationsv1.FloatAsInt(af)
		return ok && ai == bi, true
	default:
		return af == bf, true
	}
}

// jsonEqual compares two JSON values by content. A nil and an empty list
// are equal (both print as []); a missing field is not a value at all and
// is told apart by the callers.
func jsonEqual(a, b any) bool {
	switch av := a.(type) {
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case nil:
		return b == nil
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, ae := range av {
			be, ok := bv[k]
			if !ok || !jsonEqual(ae, be) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !jsonEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	}
	eq, both := numbersEqual(a, b)
	return both && eq
}

// isNull reports a JSON null: nil, or a nil map or list, which hand-built
// unstructured objects hold and which print as null too.
func isNull(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return v == nil
	case []any:
		return v == nil
	}
	return false
}

// deepCopyJSON copies a JSON value. Unknown leaf types are shared rather
// than copied: they are immutable scalars in every object we are given,
// and copying must never panic.
func deepCopyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyJSON(e)
		}
		return out
	default:
		return v
	}
}

// appendJSONKey appends to buf an encoding of v that two values share
// exactly when jsonEqual holds between them, so that sets of values can be
// kept in maps. ok is false for a value jsonEqual finds equal to nothing,
// itself included: one holding a NaN, or a Go type that is not JSON.
//
// Numbers are encoded by value: as an integer when they are one exactly
// (int64(80) and 80.0 alike, -0.0 as 0), as the bits of the float64
// otherwise. A null object or list is encoded as an empty one; a nil
// interface is null.
func appendJSONKey(buf []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case nil:
		return append(buf, 'n'), true
	case string:
		buf = append(buf, 's')
		buf = binary.AppendUvarint(buf, uint64(len(v)))
		return append(buf, v...), true
	case bool:
		if v {
			return append(buf, 't'), true
		}
		return append(buf, 'f'), true
	case map[string]any:
		buf = append(buf, 'o')
		buf = binary.AppendUvarint(buf, uint64(len(v)))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			buf = binary.AppendUvarint(buf, uint64(len(k)))
			buf = append(buf, k...)
			if buf, ok = appendJSONKey(buf, v[k]); !ok {
				return buf, false
			}
		}
		return buf, true
	case []any:
		buf = append(buf, 'l')
		buf = binary.AppendUvarint(buf, uint64(len(v)))
		for _, e := range v {
			if buf, ok = appendJSONKey(buf, e); !ok {
				return buf, false
			}
		}
		return buf, true
	}
	i, f, isInt, isNumber := numberOf(v)
	switch {
	case !isNumber || math.IsNaN(f):
		return buf, false
	case !isInt:
		if i, isInt = mutationsv1.FloatAsInt(f); !isInt {
			return binary.BigEndian.AppendUint64(append(buf, 'd'), math.Float64bits(f)), true
		}
	}
	return binary.BigEndian.AppendUint64(append(buf, 'i'), uint64(i)), true
}

// valueSet is a ModifySet's values, indexed once so that merging them into
// a list, or pruning them from it, costs time linear in the list and the
// values rather than their product.
type valueSet struct {
	values []any
	// member[i] numbers the distinct values: values[i] is jsonEqual to
	// values[j] exactly when member[i] == member[j] >= 0; -1 for a value
	// equal to nothing.
	member  []int
	members int
	// index maps each matchable value's key to its member number.
	index map[string]int
}

func newValueSet(values []any) *valueSet {
	s := &valueSet{values: values, member: make([]int, len(values)), index: make(map[string]int, len(values))}
	var buf []byte
	for i, v := range values {
		var ok bool
		if buf, ok = appendJSONKey(buf[:0], v); !ok {
			s.member[i] = -1
			continue
		}
		k, seen := s.index[string(buf)]
		if !seen {
			k = s.members
			s.members++
			s.index[string(buf)] = k
		}
		s.member[i] = k
	}
	return s
}

// linearMembersMax is the most values searched one by one, with jsonEqual,
// rather than through their keys: encoding each element of a short list
// would cost more than it saves.
const linearMembersMax = 8

// memberOf returns the member number of the value element j of l is
// jsonEqual to, or -1. buf is scratch space, returned for reuse.
func (s *valueSet) memberOf(l list, j int, buf []byte) (int, []byte) {
	if len(s.values) <= linearMembersMax {
		for i, v := range s.values {
			if l.elemEqual(j, v) {
				return s.member[i], buf
			}
		}
		return -1, buf
	}
	buf, ok := appendJSONKey(buf[:0], l.elemValue(j))
	if !ok {
		return -1, buf
	}
	if k, found := s.index[string(buf)]; found {
		return k, buf
	}
	return -1, buf
}

// merge appends to l (copies of) the values not in it yet, in order, each
// once: what appending each value that no element is jsonEqual to, one
// after the other, gives.
func (s *valueSet) merge(l list) (effect, error) {
	var small [64]bool
	present := small[:0]
	if s.members > len(small) {
		present = make([]bool, 0, s.members)
	}
	present = present[:s.members]
	missing := s.members
	var buf []byte
	for j := 0; j < l.len() && missing > 0; j++ {
		var k int
		if k, buf = s.memberOf(l, j, buf); k >= 0 && !present[k] {
			present[k] = true
			missing--
		}
	}
	var add []any
	for i, v := range s.values {
		if k := s.member[i]; k >= 0 {
			if present[k] {
				continue
			}
			present[k] = true
		}
		add = append(add, v)
	}
	if len(add) == 0 {
		return effect{}, nil
	}
	e, err := l.appendValues(add)
	if err == nil && e.changed && !s.holdsAll(l) {
		e.unsure = true
	}
	return e, err
}

// holdsAll reports whether l holds every value as merge finds them, so
// that merging again adds nothing: a typed list may hold a value as
// something else (an object without the fields its type lacks), and a
// value with no key is added every time.
func (s *valueSet) holdsAll(l list) bool {
	found := make([]bool, s.members)
	var (
		k   int
		buf []byte
	)
	for j := 0; j < l.len(); j++ {
		if k, buf = s.memberOf(l, j, buf); k >= 0 {
			found[k] = true
		}
	}
	for i := range s.values {
		if k := s.member[i]; k < 0 || !found[k] {
			return false
		}
	}
	return true
}

// prune takes out of l the elements that are one of the values.
func (s *valueSet) prune(l list) effect {
	var (
		keep []bool
		buf  []byte
	)
	for j := 0; j < l.len(); j++ {
		var k int
		if k, buf = s.memberOf(l, j, buf); k >= 0 {
			if keep == nil {
				keep = make([]bool, l.len())
				for i := range j {
					keep[i] = true
				}
			}
			continue
		}
		if keep != nil {
			keep[j] = true
		}
	}
	if keep == nil {
		return effect{}
	}
	return l.retain(keep)
}
