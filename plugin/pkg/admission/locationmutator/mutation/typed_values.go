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
	"reflect"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
)

// Typed values are read and compared in their JSON form, the converter's:
// plain scalars directly, everything else through the converter.

// present reports whether a field holding v has a non-null value in the
// object's JSON form.
func present(v reflect.Value, f *jsonField) bool {
	if f.omitZero != nil && f.omitZero(v) {
		return false
	}
	if f.info.shape == shapeOwnForm {
		u, written, err := toUnstructuredValue(v, f.omitEmpty)
		return err == nil && written && !isNull(u)
	}
	return presentInUnstructured(v, f.omitEmpty)
}

// typedJSON returns the JSON form of v, a value of the type info
// describes; false when the converter cannot give one.
func typedJSON(v reflect.Value, info *typeInfo) (any, bool) {
	if info.shape == shapePointerToScalar {
		if v.IsNil() {
			return nil, true
		}
		v, info = v.Elem(), info.elemInfo()
	}
	if info.shape == shapeScalar {
		switch v.Kind() {
		case reflect.String:
			return v.String(), true
		case reflect.Bool:
			return v.Bool(), true
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return v.Int(), true
		case reflect.Float32, reflect.Float64:
			return v.Float(), true
		}
	}
	u, written, err := toUnstructuredValue(v, false)
	return u, err == nil && written
}

// typedString returns v's JSON form if it is a string.
func typedString(v reflect.Value, info *typeInfo) (string, bool) {
	if info.shape == shapeScalar && v.Kind() == reflect.String {
		return v.String(), true
	}
	u, ok := typedJSON(v, info)
	s, isString := u.(string)
	return s, ok && isString
}

// typedValueName names the JSON type of v, for messages.
func typedValueName(v reflect.Value, info *typeInfo) string {
	if u, ok := typedJSON(v, info); ok {
		return jsonTypeName(u)
	}
	return fmt.Sprintf("a %v", v.Type())
}

// typedEqual reports whether the JSON form of v is jsonEqual to x; plain
// scalars are compared without making their JSON form.
func typedEqual(v reflect.Value, info *typeInfo, x any) bool {
	if info.shape == shapePointerToScalar {
		if v.IsNil() {
			return x == nil
		}
		v, info = v.Elem(), info.elemInfo()
	}
	if info.shape == shapeScalar {
		switch v.Kind() {
		case reflect.String:
			s, ok := x.(string)
			return ok && v.String() == s
		case reflect.Bool:
			b, ok := x.(bool)
			return ok && v.Bool() == b
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			i, ok := integerOf(x)
			return ok && v.Int() == i
		}
	}
	u, ok := typedJSON(v, info)
	return ok && jsonEqual(u, x)
}

// integerOf returns a JSON number that is an integer, as an int64.
func integerOf(x any) (int64, bool) {
	i, f, isInt, ok := numberOf(x)
	switch {
	case !ok:
		return 0, false
	case isInt:
		return i, true
	}
	return mutationsv1.FloatAsInt(f)
}

// sameValue reports whether two values of the type info describes have
// the same JSON form.
func sameValue(a, b reflect.Value, info *typeInfo) bool {
	switch {
	case info.shape == shapeScalar:
		return a.Equal(b)
	case info.shape == shapePointerToScalar:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return a.Elem().Equal(b.Elem())
	}
	ua, oka := typedJSON(a, info)
	ub, okb := typedJSON(b, info)
	return oka && okb && jsonEqual(ua, ub)
}

// misfitError is a value a typed field cannot hold.
type misfitError struct {
	value any
	t     reflect.Type
	err   error // the converter's, if it is the one that refused
}

func (e *misfitError) Error() string {
	var v string
	switch x := e.value.(type) {
	case string:
		v = fmt.Sprintf("%q", x)
	case bool:
		v = fmt.Sprint(x)
	default:
		if _, _, _, ok := numberOf(x); ok {
			v = fmt.Sprint(x)
		} else {
			v = jsonTypeName(x)
		}
	}
	msg := fmt.Sprintf("%s does not fit in a field of type %v", v, e.t)
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

// decodeValue makes a new value of type t from the JSON value x, as the
// converter would decode it there, except that a plain scalar must read
// back as x: the converter cuts an integer too large for its field
// without a word. Every call makes new maps and slices, so no two objects
// share them.
func decodeValue(x any, info *typeInfo) (reflect.Value, error) {
	t := info.t
	if x == nil {
		return reflect.Zero(t), nil
	}
	switch {
	case info.shape == shapeScalar:
		return decodeScalar(x, t)
	case info.shape == shapePointerToScalar:
		// Decoded straight into the new pointer's value: one allocation.
		p := reflect.New(t.Elem())
		if err := setScalar(p.Elem(), x); err != nil {
			return reflect.Value{}, err
		}
		return p, nil
	}
	v, err := fromUnstructuredValue(x, t)
	if err != nil {
		return reflect.Value{}, &misfitError{value: x, t: t, err: err}
	}
	return v, nil
}

// decodeScalar makes the error only when x does not fit: it is most of
// what a write that fits would otherwise allocate.
func decodeScalar(x any, t reflect.Type) (reflect.Value, error) {
	switch t.Kind() {
	case reflect.String, reflect.Bool:
		// x itself, as the field's type: no copy is made.
		xv := reflect.ValueOf(x)
		if xv.Kind() != t.Kind() {
			return reflect.Value{}, &misfitError{value: x, t: t}
		}
		return xv.Convert(t), nil
	}
	v := reflect.New(t).Elem()
	if err := setScalar(v, x); err != nil {
		return reflect.Value{}, err
	}
	return v, nil
}

// setScalar sets v, a settable boolean, string or number, to x.
func setScalar(v reflect.Value, x any) error {
	switch v.Kind() {
	case reflect.String, reflect.Bool:
		xv := reflect.ValueOf(x)
		if xv.Kind() != v.Kind() {
			return &misfitError{value: x, t: v.Type()}
		}
		v.Set(xv.Convert(v.Type()))
		return nil
	}
	if !setNumber(v, x) {
		return &misfitError{value: x, t: v.Type()}
	}
	return nil
}

// setNumber sets v, an integer or a float, to the JSON number x, and
// reports whether x is one that v holds exactly (an integer in range, a
// float that is not NaN).
func setNumber(v reflect.Value, x any) bool {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, ok := integerOf(x)
		if !ok || v.OverflowInt(i) {
			return false
		}
		v.SetInt(i)
		return true
	case reflect.Float32, reflect.Float64:
		i, f, isInt, ok := numberOf(x)
		if isInt {
			f = float64(i)
		}
		if !ok || math.IsNaN(f) || v.OverflowFloat(f) {
			return false
		}
		v.SetFloat(f)
		return true
	}
	return false
}
