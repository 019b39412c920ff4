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
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// jsonField is a struct field found by its json name: what a typed Go
// value looks like in its unstructured form, the form
// runtime.DefaultUnstructuredConverter gives and the walker reads.
//
// Field names come from the json tags, read by the converter's own rules
// (k8s.io/apimachinery/pkg/runtime's fieldInfoFromField). That function is
// not exported, and structured-merge-diff's value.TypeReflectEntryOf(t).Fields()
// does not serve in its place: the converter does not use it for struct
// fields, and the two disagree just where this file must be careful.
// structured-merge-diff merges inline members into their parent's names,
// so a name an inline member shadows looks like any other; it keeps
// omitempty, omitzero and the field index private; it skips unexported
// fields, which the converter writes; and it does not know the `,embed`
// option the converter honours from Go 1.27. We use structured-merge-diff
// for what the converter itself asks it: whether a type has an
// unstructured form of its own, and omitzero's test.
type jsonField struct {
	// index leads to the field, through inline members.
	index     []int
	info      *typeInfo // of the field's type
	omitEmpty bool
	// omitZero is the test the converter leaves the field out by, nil
	// without omitzero.
	omitZero func(reflect.Value) bool
}

// errNoField is fieldOf's answer for a name the type lacks.
var errNoField = errors.New("no such field")

// typeInfo is what the walker asks of a Go type, worked out once per type.
type typeInfo struct {
	shape jsonShape
	t     reflect.Type
	// elem is the element type's info, for a map, slice or pointer, made
	// on first use: types refer to themselves through these.
	elemOnce sync.Once
	elem     *typeInfo
	// holders are holderType(t, false) and holderType(t, true).
	holders [2]reflect.Type

	fieldsOnce sync.Once
	fields     map[string]*fieldLookup
}

type fieldLookup struct {
	field jsonField
	err   error
}

// typeInfos holds typeInfoOf's answers: reflect.Type -> *typeInfo.
var typeInfos sync.Map

func typeInfoOf(t reflect.Type) *typeInfo {
	if v, ok := typeInfos.Load(t); ok {
		return v.(*typeInfo)
	}
	info := &typeInfo{t: t, shape: shapeOf(t)}
	info.holders = [2]reflect.Type{holderType(t, false), holderType(t, true)}
	v, _ := typeInfos.LoadOrStore(t, info)
	return v.(*typeInfo)
}

// jsonShape is what a Go type is in the unstructured form (the one
// runtime.DefaultUnstructuredConverter gives), and so how the walker
// reads and writes it.
type jsonShape uint8

const (
	// shapeOther is nothing the walker goes into or compares as JSON: a
	// map with keys that are not strings, an interface, a channel.
	shapeOther jsonShape = iota
	// shapeOwnForm is whatever the type's own (un)marshaller makes of it,
	// which the converter hands the value to: Quantity, IntOrString, Time,
	// RawExtension.
	shapeOwnForm
	// shapeScalar is a boolean, a string or a number.
	shapeScalar
	// shapePointerToScalar is the same, or null.
	shapePointerToScalar
	// shapeObject is an object of the struct's json fields.
	shapeObject
	// shapePointerToObject is the same, or null.
	shapePointerToObject
	// shapeStringMap is an object with any keys.
	shapeStringMap
	// shapeList is a list.
	shapeList
)

// jsonShapes says which Go types stand for which JSON shape: a type has
// the shape of the first row it fits, and a pointer the one pointerShapes
// gives for the shape of what it points to.
var jsonShapes = []struct {
	shape jsonShape
	fits  func(t reflect.Type) bool
}{
	{shapeOwnForm, ownForm},
	{shapeScalar, scalarKind},
	{shapeObject, func(t reflect.Type) bool { return t.Kind() == reflect.Struct }},
	{shapeStringMap, func(t reflect.Type) bool { return t.Kind() == reflect.Map && t.Key().Kind() == reflect.String }},
	{shapeList, func(t reflect.Type) bool { return t.Kind() == reflect.Slice }},
}

// pointerShapes are the shapes of pointers, by the shape they point to;
// a pointer to anything else is shapeOther.
var pointerShapes = map[jsonShape]jsonShape{
	shapeScalar: shapePointerToScalar,
	shapeObject: shapePointerToObject,
}

// shapeOf reads jsonShapes for t.
func shapeOf(t reflect.Type) jsonShape {
	for _, row := range jsonShapes {
		if row.fits(t) {
			return row.shape
		}
	}
	if t.Kind() == reflect.Pointer {
		if shape, ok := pointerShapes[shapeOf(t.Elem())]; ok {
			return shape
		}
	}
	return shapeOther
}

// fieldHint keeps, for one node of a mutator's location, the type its name
// was last looked up in and the answer (a struct's field, or a map's key
// as a value of the key type), so that walking objects of that type again,
// which is what requests do, skips the lookup by name.
type fieldHint struct {
	last atomic.Pointer[hintedField]
}

type hintedField struct {
	in  *typeInfo
	f   *jsonField
	err error
	key reflect.Value
}

// fieldOf is info.fieldOf(name), remembered.
func (h *fieldHint) fieldOf(info *typeInfo, name string) (*jsonField, error) {
	if l := h.last.Load(); l != nil && l.in == info {
		return l.f, l.err
	}
	f, err := info.fieldOf(name)
	h.last.Store(&hintedField{in: info, f: f, err: err})
	return f, err
}

// mapKey is name as a key of the map type info describes, remembered.
func (h *fieldHint) mapKey(info *typeInfo, name string) reflect.Value {
	if l := h.last.Load(); l != nil && l.in == info {
		return l.key
	}
	key := reflect.ValueOf(name).Convert(info.t.Key())
	h.last.Store(&hintedField{in: info, key: key})
	return key
}

// elemInfo is the info of the element type of a map, slice or pointer.
func (info *typeInfo) elemInfo() *typeInfo {
	info.elemOnce.Do(func() { info.elem = typeInfoOf(info.t.Elem()) })
	return info.elem
}

func ownForm(t reflect.Type) bool {
	e := value.TypeReflectEntryOf(t)
	return e.CanConvertToUnstructured() || e.CanConvertFromUnstructured()
}

func scalarKind(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// fieldOf finds the field of struct info.t whose json name is name, inline
// members included. errNoField means there is none; a name two fields
// share, one an inline member that is not a plain struct may hold, and an
// unexported field are errors, since which field the converter reads there
// is not ours to guess, and an unexported one cannot be set.
func (info *typeInfo) fieldOf(name string) (*jsonField, error) {
	info.fieldsOnce.Do(func() { info.fields = jsonFields(info.t) })
	l, ok := info.fields[name]
	if !ok {
		return nil, errNoField
	}
	return &l.field, l.err
}

// jsonFields maps every json name of struct t to its field, or to why it
// cannot be used.
func jsonFields(t reflect.Type) map[string]*fieldLookup {
	out := map[string]*fieldLookup{}
	opaque := ""
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			idx := append(slices.Clip(prefix), i)
			n, omitEmpty, omitZero, inline := jsonTag(sf)
			switch {
			case inline && typeInfoOf(sf.Type).shape == shapeObject:
				walk(sf.Type, idx)
				continue
			case inline:
				opaque = sf.Type.String()
				continue
			case n == "-":
				continue
			}
			if _, dup := out[n]; dup {
				out[n] = &fieldLookup{err: fmt.Errorf("field %q of %v: two fields have that name", n, t)}
				continue
			}
			if !sf.IsExported() {
				out[n] = &fieldLookup{err: fmt.Errorf("field %q of %v is unexported", n, t)}
				continue
			}
			f := jsonField{index: idx, info: typeInfoOf(sf.Type), omitEmpty: omitEmpty}
			if omitZero {
				f.omitZero = value.OmitZeroFunc(sf.Type)
			}
			out[n] = &fieldLookup{field: f}
		}
	}
	walk(t, nil)
	if opaque != "" {
		// Any name may be the inline member's: none can be told apart.
		for n := range out {
			out[n] = &fieldLookup{err: fmt.Errorf("field %q of %v: %s is inline and may hold it", n, t, opaque)}
		}
	}
	return out
}

// jsonTag reads a field's json name and options as the unstructured
// converter does. inline is an embedded struct without a name, whose
// members the converter writes into the parent; "embed", which the
// converter honours from Go 1.27, is read as inline on every Go version.
func jsonTag(sf reflect.StructField) (name string, omitEmpty, omitZero, inline bool) {
	tag, ok := sf.Tag.Lookup("json")
	if !ok || tag == "" {
		if sf.Anonymous {
			return "", false, false, true
		}
		return sf.Name, false, false, false
	}
	items := strings.Split(tag, ",")
	name = items[0]
	for _, o := range items[1:] {
		switch o {
		case "omitempty":
			omitEmpty = true
		case "omitzero":
			omitZero = true
		case "embed":
			inline = true
		}
	}
	if name == "" {
		if sf.Anonymous {
			inline = true
		} else {
			name = sf.Name
		}
	}
	return name, omitEmpty, omitZero, inline
}

// holderType is a struct with one field, "v", of type t and with t's
// omitempty, so that the converter reads and writes a value in it exactly
// as it would in the field it came from.
func holderType(t reflect.Type, omitEmpty bool) reflect.Type {
	tag := `json:"v"`
	if omitEmpty {
		tag = `json:"v,omitempty"`
	}
	return reflect.StructOf([]reflect.StructField{{Name: "V", Type: t, Tag: reflect.StructTag(tag)}})
}

// toUnstructuredValue returns the unstructured form of v as it reads in a
// field with that omitempty, and whether the field is written at all.
func toUnstructuredValue(v reflect.Value, omitEmpty bool) (u any, written bool, err error) {
	h := 0
	if omitEmpty {
		h = 1
	}
	holder := reflect.New(typeInfoOf(v.Type()).holders[h])
	holder.Elem().Field(0).Set(v)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(holder.Interface())
	if err != nil {
		return nil, false, err
	}
	u, written = m["v"]
	return u, written, nil
}

// fromUnstructuredValue decodes an unstructured value into a new value of
// type t, as the converter would decode it in a field of that type. u is
// copied first: the converter may keep its maps and slices.
func fromUnstructuredValue(u any, t reflect.Type) (reflect.Value, error) {
	holder := reflect.New(typeInfoOf(t).holders[0])
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"v": deepCopyJSON(u)}, holder.Interface()); err != nil {
		return reflect.Value{}, err
	}
	return holder.Elem().Field(0), nil
}

// presentInUnstructured reports whether the unstructured form of a field
// holding v has a non-null value there, which is what the walker calls
// existing. A struct is always written; a nil pointer, slice or map is
// null; an empty value with omitempty is left out. Only for types without
// a form of their own.
func presentInUnstructured(v reflect.Value, omitEmpty bool) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil()
	case reflect.Map, reflect.Slice:
		return !v.IsNil() && !(omitEmpty && v.Len() == 0)
	case reflect.Struct:
		return true
	case reflect.String:
		return !omitEmpty || v.Len() > 0
	case reflect.Bool:
		return !omitEmpty || v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return !omitEmpty || v.Int() != 0
	case reflect.Float32, reflect.Float64:
		return !omitEmpty || v.Float() != 0
	}
	return true
}
