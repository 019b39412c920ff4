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
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// jsonField is a struct field found by its json name: what a typed Go
// value looks like in its unstructured form, the form
// runtime.DefaultUnstructuredConverter gives and the map walker works on.
//
// Field names come from the json tags, read by the converter's own rules
// (k8s.io/apimachinery/pkg/runtime's fieldInfoFromField). That function is
// not exported, and structured-merge-diff's value.TypeReflectEntryOf(t).Fields()
// does not serve in its place: the converter does not use it for struct
// fields, and the two disagree just where this file must be careful.
// structured-merge-diff merges inline members into their parent's names,
// so a name an inline member shadows (TypeMeta's kind) looks like any
// other; it keeps omitempty, omitzero and the field index private; it
// skips unexported fields, which the converter writes; and it does not
// know the `,embed` option the converter honours from Go 1.27. We use
// structured-merge-diff for what the converter itself asks it: whether a
// type has an unstructured form of its own (hasOwnForm).
type jsonField struct {
	index     int // in its struct
	typ       reflect.Type
	omitEmpty bool
}

// structField names a field of a struct type by its index.
type structField struct {
	structType reflect.Type
	index      int
}

type fieldCacheKey struct {
	structType reflect.Type
	jsonName   string
}

type cachedField struct {
	field jsonField
	err   error
}

// fieldCache holds fieldByJSONName's answers: fieldCacheKey -> cachedField.
var fieldCache sync.Map

// jsonTag reads a field's json name and options as the unstructured
// converter does. inline is an embedded struct without a name, whose
// members the converter writes into the parent; "embed", which the
// converter honours from Go 1.27, is read as inline on every Go version,
// so that such a field is refused rather than misread.
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

// fieldByJSONName finds the field of struct t whose json name is name,
// once per (t, name). A name an inline member may hold, a name two fields
// share, an unexported field and omitzero are unsupported.
func fieldByJSONName(t reflect.Type, name string) (jsonField, error) {
	k := fieldCacheKey{t, name}
	if v, ok := fieldCache.Load(k); ok {
		c := v.(cachedField)
		return c.field, c.err
	}
	f, err := findField(t, name)
	fieldCache.Store(k, cachedField{f, err})
	return f, err
}

func findField(t reflect.Type, name string) (jsonField, error) {
	found := false
	var out jsonField
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		n, omitEmpty, omitZero, inline := jsonTag(sf)
		if inline {
			// The inline member's fields share the parent's names (TypeMeta
			// holds kind and apiVersion): which one the converter keeps is
			// not ours to guess.
			if mayHaveKey(sf.Type, name) {
				return jsonField{}, unsupported("%v inlines %v, which may hold %q", t, sf.Type, name)
			}
			continue
		}
		if n != name || n == "-" {
			continue
		}
		if found || !sf.IsExported() || omitZero {
			return jsonField{}, unsupported("field %q of %v", name, t)
		}
		found = true
		out = jsonField{index: i, typ: sf.Type, omitEmpty: omitEmpty}
	}
	if !found {
		return jsonField{}, unsupported("%v has no field %q", t, name)
	}
	return out, nil
}

// mayHaveKey reports whether the unstructured form of a t may have the key
// name, inline members included. Anything but a plain struct may have any.
func mayHaveKey(t reflect.Type, name string) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !plainStruct(t) {
		return true
	}
	for i := 0; i < t.NumField(); i++ {
		n, _, _, inline := jsonTag(t.Field(i))
		if n == name || (inline && mayHaveKey(t.Field(i).Type, name)) {
			return true
		}
	}
	return false
}

// hasOwnForm reports a type with its own unstructured form (a JSON or
// unstructured marshaller: Quantity, IntOrString, Time, RawExtension), which
// the converter hands the value to.
func hasOwnForm(t reflect.Type) bool {
	e := value.TypeReflectEntryOf(t)
	return e.CanConvertToUnstructured() || e.CanConvertFromUnstructured()
}

// plainScalar reports a bool, string, integer or float without a form of
// its own.
func plainScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Float32, reflect.Float64:
		return !hasOwnForm(t)
	}
	return false
}

func plainStruct(t reflect.Type) bool { return t.Kind() == reflect.Struct && !hasOwnForm(t) }

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
	holder := reflect.New(holderType(v.Type(), omitEmpty))
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
	holder := reflect.New(holderType(t, false))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"v": deepCopyJSON(u)}, holder.Interface()); err != nil {
		return reflect.Value{}, err
	}
	return holder.Elem().Field(0), nil
}

// presentInUnstructured reports whether the unstructured form of a field
// holding v has a non-null value there, which is what the map walker calls
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

// zeroIsEmptyObject reports whether a new zero t reads as {}, as the empty
// map the map walker creates in its place does.
func zeroIsEmptyObject(t reflect.Type) bool {
	u, written, err := toUnstructuredValue(reflect.New(t).Elem(), false)
	if err != nil || !written {
		return false
	}
	m, isMap := u.(map[string]any)
	return isMap && len(m) == 0
}
