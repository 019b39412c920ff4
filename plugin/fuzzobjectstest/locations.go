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

package fuzzobjectstest

import (
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// location mostly follows the fields of the object's Go type, so that
// the location fits; one time in twelve it takes a name from the lists
// of field names instead. It returns the type found at the location, or
// nil where it left the type.
func (g *Mutators) location() (string, reflect.Type) {
	var nodes []path.Node
	t := reflect.TypeOf(corev1.Pod{})
	if g.Deployment {
		t = reflect.TypeOf(appsv1.Deployment{})
	}
	for depth := 0; depth < 8; depth++ {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			nodes = append(nodes, g.listNode(t.Elem()))
			t = t.Elem()
			continue
		}
		if t.Kind() != reflect.Struct || (depth > 0 && g.Next(5) == 1) {
			break
		}
		names, types := fieldsOf(t, depth == 0)
		if len(names) == 0 || g.Next(12) == 1 {
			names = slices.Concat(typedLeaves, typedObjects, typedLists)
			nodes = append(nodes, path.Object{Reference: names[g.Next(len(names))]})
			t = reflect.TypeOf(any(nil))
			break
		}
		i := g.Next(len(names))
		for j, n := range names {
			if g.Next(3) == 0 && strings.Contains(favoured, n) {
				i = j
				break
			}
		}
		nodes = append(nodes, path.Object{Reference: names[i]})
		t = types[i]
		if t.Kind() == reflect.Map {
			if g.Next(2) == 0 {
				nodes = append(nodes, path.Object{Reference: typedLabelNames[g.Next(len(typedLabelNames))]})
				t = t.Elem()
			}
			break
		}
	}
	if len(nodes) == 0 {
		nodes = append(nodes, path.Object{Reference: "spec"})
	}
	return path.Path{Nodes: nodes}.String(), t
}

// listNode selects elements of a list of elem: by name mostly, when elem
// has one, else by one of the key fields, a glob one time in three.
func (g *Mutators) listNode(elem reflect.Type) path.List {
	key := typedKeys[g.Next(len(typedKeys))]
	var kv any = typedKeyValues[g.Next(len(typedKeyValues))]
	if _, ok := elem.FieldByName("Name"); ok && g.Next(3) != 0 {
		key = "name"
		kv = []string{"app", "proxy", "sidecar", "A", "http"}[g.Next(5)]
	}
	if g.Next(3) == 0 {
		return path.List{KeyField: key, Glob: true}
	}
	return path.List{KeyField: key, KeyValue: kv}
}

// fieldsOf are the json names and types of t's fields, less inline ones,
// ignored ones and status (and, at the top, metadata).
func fieldsOf(t reflect.Type, top bool) ([]string, []reflect.Type) {
	var names []string
	var types []reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && n == "" || n == "-" || n == "status" || top && n == "metadata" {
			continue
		}
		if n == "" {
			n = f.Name
		}
		names = append(names, n)
		types = append(types, f.Type)
	}
	return names, types
}

// fittingValue is a value for a field of type t, or a random one.
func (g *Mutators) fittingValue(t reflect.Type) any {
	if t == nil || g.Next(4) == 1 {
		return g.value(0)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return []string{"Always", "x", "nginx:1", "TCP", ""}[g.Next(5)]
	case reflect.Bool:
		return g.Next(2) == 0
	case reflect.Int32, reflect.Int64, reflect.Int:
		return []any{int64(30), int64(0), int64(80), int64(1) << 40, 2.0}[g.Next(5)]
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return []any{"a", "--v=2"}[:g.Next(3)]
		}
		if t.Elem().Kind() == reflect.Struct {
			return []any{map[string]any{"name": "x"}}[:g.Next(2)]
		}
	case reflect.Map:
		return map[string]any{"app": "x"}
	case reflect.Struct:
		m := map[string]any{}
		for i := g.Next(3); i > 0; i-- {
			f := t.Field(g.Next(t.NumField()))
			n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if n == "" && !f.Anonymous {
				n = f.Name
			}
			m[n] = g.fittingValue(f.Type)
		}
		return m
	}
	return g.value(1)
}

// value is a random value: strings, numbers, booleans, null, and lists
// and objects of them, two deep.
func (g *Mutators) value(depth int) any {
	switch g.Next(10) {
	case 0, 1:
		return []string{"Always", "IfNotPresent", "x", "", "nginx:1", "TCP"}[g.Next(6)]
	case 2:
		return []any{int64(0), int64(30), int64(80), int64(1) << 40, 1.5, int64(-1)}[g.Next(6)]
	case 3:
		return g.Next(2) == 0
	case 4:
		return nil
	case 5, 6:
		if depth > 1 {
			return "x"
		}
		var l []any
		for i := g.Next(3); i > 0; i-- {
			l = append(l, g.value(depth+1))
		}
		return l
	default:
		if depth > 1 {
			return int64(1)
		}
		m := map[string]any{}
		for i := g.Next(3); i > 0; i-- {
			m[typedLeaves[g.Next(len(typedLeaves))]] = g.value(depth + 1)
		}
		return m
	}
}
