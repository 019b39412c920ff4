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

import "math"

// JSON values here are what unstructured objects hold: map[string]any,
// []any, string, bool, nil and numbers. Numbers may be any Go integer or
// float type (hand-built unstructured objects use int), so equality goes by
// numeric value, never by Go type.

// numberOf returns the value of a number; isInt says whether it is exact
// as an int64.
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
		return float64(ai) == bf && bf == math.Trunc(bf) && int64(bf) == ai, true
	case bInt:
		return float64(bi) == af && af == math.Trunc(af) && int64(af) == bi, true
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

func containsJSON(list []any, v any) bool {
	for _, e := range list {
		if jsonEqual(e, v) {
			return true
		}
	}
	return false
}
