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

package compiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// Built-in kinds are mutated by the plugin as typed objects and by
// kube-apiserver's JSONPatch as JSON decoded strictly into the type. The
// two give the same object only where the location is a path of the
// type's fields and the value written reads back as itself: a field the
// type lacks, or a value its field cannot hold exactly (a string where an
// integer goes, 1024Mi where Quantity prints 1Gi, an empty string where
// omitempty drops it), is refused.

// goType returns the Go type of a built-in kind, false for a kind
// client-go's scheme does not know.
func goType(gvk schema.GroupVersionKind) (reflect.Type, bool) {
	t, ok := scheme.Scheme.AllKnownTypes()[gvk]
	return t, ok
}

// jsonMarshaler types print themselves: a location cannot go inside them.
var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// errAbsent is typeAt's answer for a location through a field the type
// lacks, below parents the type always has. The plugin's typed walk reads
// such a field as absent and drops what is written there, so the mutator
// changes nothing in the kind.
var errAbsent = errors.New("the kind has no such field")

// typeAt follows the location's nodes from t and returns the type of the
// value at the end, and whether a write there may create a parent: a
// field that is a pointer or a map, or a keyed list element, which the
// typed object may lack, unlike a struct, which it always prints. A list
// node keys elements that are structs holding the key field.
func typeAt(t reflect.Type, nodes []path.Node) (_ reflect.Type, creates bool, _ error) {
	for i, n := range nodes {
		if i > 0 {
			switch t.Kind() {
			case reflect.Pointer, reflect.Map:
				creates = true
			}
		}
		t = deref(t)
		switch n := n.(type) {
		case path.Object:
			next, err := memberType(t, n.Reference)
			switch {
			case err != nil && !creates && t.Kind() == reflect.Struct:
				return nil, false, errAbsent
			case err != nil:
				return nil, false, fmt.Errorf("%s: %w", prefix(nodes, i), err)
			}
			t = next
		case path.List:
			if t.Kind() != reflect.Slice || deref(t.Elem()).Kind() != reflect.Struct {
				return nil, false, fmt.Errorf("%s: %s is not a list of objects", prefix(nodes, i), t)
			}
			if !n.Glob {
				creates = true
				kt, err := memberType(deref(t.Elem()), n.KeyField)
				if err != nil {
					return nil, false, fmt.Errorf("%s: %w", prefix(nodes, i), err)
				}
				if err := fits(n.KeyValue, kt, true); err != nil {
					return nil, false, fmt.Errorf("%s: the key %w", prefix(nodes, i), err)
				}
			}
			t = t.Elem()
		}
	}
	return t, creates, nil
}

// memberType is the type of a struct field by its JSON name, or a map's
// value type.
func memberType(t reflect.Type, name string) (reflect.Type, error) {
	switch {
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		return t.Elem(), nil
	case t.Kind() != reflect.Struct || t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler):
		return nil, fmt.Errorf("%s has no field %q", t, name)
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" && f.Anonymous {
			if ft, err := memberType(deref(f.Type), name); err == nil {
				return ft, nil
			}
			continue
		}
		if tag == name {
			return f.Type, nil
		}
	}
	return nil, fmt.Errorf("%s has no field %q", t, name)
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func prefix(nodes []path.Node, i int) string { return path.Path{Nodes: nodes[:i+1]}.String() }

// fits reports, as an error, a JSON value that a field of type t cannot
// hold as it is: decoded strictly into t and encoded again, it must give
// the same JSON, but for members the type always prints (an empty struct,
// a null list).
// A null fits a pointer, slice or map, which it empties. Where the write
// may create a parent (creates), an empty value is refused too: omitempty
// drops it, and the plugin then counts the write as no change and creates
// no parent for it.
func fits(v any, t reflect.Type, creates bool) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%v is not JSON: %w", v, err)
	}
	p := reflect.New(t)
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(p.Interface()); err != nil {
		return fmt.Errorf("%s does not fit %s: %w", data, t, err)
	}
	back, err := json.Marshal(p.Interface())
	if err != nil {
		return fmt.Errorf("%s does not fit %s: %w", data, t, err)
	}
	var was, is any
	if json.Unmarshal(data, &was) != nil || json.Unmarshal(back, &is) != nil || !covers(is, was) {
		return fmt.Errorf("%s reads back from %s as %s", data, t, back)
	}
	if creates && v != nil && t.Kind() != reflect.Pointer && isEmpty(is) {
		return fmt.Errorf("%s is the empty value of %s, which the object may drop", data, t)
	}
	return nil
}

// covers reports whether is holds what was holds, and besides only what
// the type prints for a field it was not given (an empty object, or
// null); a null it was given may be left out.
func covers(is, was any) bool {
	switch was := was.(type) {
	case map[string]any:
		m, ok := is.(map[string]any)
		if !ok {
			return false
		}
		for k, w := range was {
			if v, ok := m[k]; ok && !covers(v, w) || !ok && w != nil {
				return false
			}
		}
		for k, v := range m {
			if _, ok := was[k]; !ok && v != nil {
				if o, isMap := v.(map[string]any); !isMap || len(o) > 0 {
					return false
				}
			}
		}
		return true
	case []any:
		l, ok := is.([]any)
		if !ok || len(l) != len(was) {
			return false
		}
		for i := range l {
			if !covers(l[i], was[i]) {
				return false
			}
		}
		return true
	}
	return equality.Semantic.DeepEqual(is, was)
}

// isEmpty reports the JSON values an omitempty field leaves out.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}
