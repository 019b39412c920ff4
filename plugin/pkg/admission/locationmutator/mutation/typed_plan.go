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
	"reflect"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// typedPlan is a mutator laid out against one Go type: a step per location
// node, and what the last one writes. It is computed once per type and
// then only read.
type typedPlan struct {
	err   error // why the type is not supported; nil when it is
	steps []planStep
	write writeKind
	// value is the assigned value decoded into the last field's type
	// (Assign and AssignMetadata with a value).
	value reflect.Value
	// lastField is the struct field the location ends at.
	lastField structField
	// lastOmitEmpty is the last field's omitempty, which fromMetadata
	// needs.
	lastOmitEmpty bool
	// setValues are a ModifySet's values, each once, in order, and
	// setIndex their positions there.
	setValues []string
	setIndex  map[string]int
	// newElementObjects are the struct fields a new list element has in its
	// unstructured form that the map walker's {key: value} lacks: structs,
	// which the converter always writes, here each empty, {}
	// (checkNewElementObjects).
	newElementObjects []structField
}

type stepKind int

const (
	stepField        stepKind = iota // a struct field
	stepMapEntry                     // an entry of a map of strings
	stepEveryElement                 // every element of a slice of structs ([key: *])
	stepKeyed                        // the elements of a slice of structs with a key
)

// planStep is how one location node is walked on the Go type.
type planStep struct {
	kind stepKind
	// field is the struct field (stepField) or the elements' key field
	// (stepKeyed).
	field jsonField
	// structType is the struct holding field (stepField).
	structType reflect.Type
	// throughPointer: the field is a pointer to the struct the next step
	// walks, created when missing (stepField).
	throughPointer bool
	// newElement is the element a keyed step appends when none has the
	// key: a zero struct with the key set (stepKeyed).
	newElement reflect.Value
	mapKey     string // stepMapEntry
}

// writeKind is what the last step writes.
type writeKind int

const (
	writeScalar          writeKind = iota // an Assign value into a plain scalar or map entry
	writePointerToScalar                  // an Assign value into a pointer to a plain scalar
	writeComposite                        // an Assign value into anything else, compared unstructured
	writeFromMetadata                     // fromMetadata into a string
	writeModifySet                        // ModifySet on a []string
	writeImage                            // AssignImage on a string
)

// planFor returns m laid out against struct type t, computed once.
func (m *Mutator) planFor(t reflect.Type) *typedPlan {
	if v, ok := m.typed.Load(t); ok {
		return v.(*typedPlan)
	}
	p := &typedPlan{}
	if err := m.planSteps(p, t); err != nil {
		p.err = fmt.Errorf("%s %q on %v: %w", m.id, m.location.String(), t, err)
	}
	v, _ := m.typed.LoadOrStore(t, p)
	return v.(*typedPlan)
}

func (m *Mutator) planSteps(p *typedPlan, root reflect.Type) error {
	if !plainStruct(root) {
		return unsupported("the object is a %v", root)
	}
	if len(m.nodes) == 0 {
		return unsupported("no location")
	}
	t := root
	for i, n := range m.nodes {
		last := i == len(m.nodes)-1
		switch n := n.(type) {
		case path.Object:
			if t.Kind() == reflect.Map {
				if !last {
					return unsupported("below a map entry")
				}
				p.steps = append(p.steps, planStep{kind: stepMapEntry, mapKey: n.Reference})
				return m.planWrite(p, t.Elem(), false, true)
			}
			f, err := fieldByJSONName(t, n.Reference)
			if err != nil {
				return err
			}
			step := planStep{kind: stepField, field: f, structType: t}
			if last {
				p.steps = append(p.steps, step)
				p.lastField = structField{t, f.index}
				return m.planWrite(p, f.typ, f.omitEmpty, false)
			}
			next := f.typ
			if _, isList := m.nodes[i+1].(path.List); isList {
				if next.Kind() != reflect.Slice || hasOwnForm(next) || !plainStruct(next.Elem()) {
					return unsupported("%s is a %v, not a list of objects", prefixString(m.location, i), next)
				}
				p.steps = append(p.steps, step)
				t = next
				continue
			}
			switch {
			case plainStruct(next):
			case next.Kind() == reflect.Pointer && plainStruct(next.Elem()):
				// A nil pointer is missing: the map walker creates {}
				// there, so a new zero struct must read as {}.
				if !zeroIsEmptyObject(next.Elem()) {
					return unsupported("a new %v would not read as {}", next.Elem())
				}
				step.throughPointer = true
				next = next.Elem()
			case next.Kind() == reflect.Map && next.Key().Kind() == reflect.String && plainScalar(next.Key()) && !hasOwnForm(next) &&
				(next.Elem().Kind() == reflect.String && plainScalar(next.Elem()) ||
					// A map of values with a form of their own (a
					// ResourceList of Quantities) holds only whole values:
					// the next node must be the entry itself.
					hasOwnForm(next.Elem()) && i+2 == len(m.nodes)):
				if !f.omitEmpty {
					// A non-nil empty map would read as {} and a nil one
					// as missing, as the map walker sees them; but keep
					// to the shape the API types use.
					return unsupported("map %q without omitempty", n.Reference)
				}
			default:
				return unsupported("%s is a %v, not an object", prefixString(m.location, i), next)
			}
			p.steps = append(p.steps, step)
			t = next

		case path.List:
			elem := t.Elem()
			if last {
				return unsupported("assigning a whole list element")
			}
			if _, ok := m.nodes[i+1].(path.Object); !ok {
				return unsupported("a list directly in a list")
			}
			if n.Glob {
				p.steps = append(p.steps, planStep{kind: stepEveryElement})
				t = elem
				continue
			}
			key, err := fieldByJSONName(elem, n.KeyField)
			if err != nil {
				return err
			}
			if !plainScalar(key.typ) {
				return unsupported("key field %q is a %v", n.KeyField, key.typ)
			}
			// The element the map walker appends is {key: value}: the typed
			// one must read exactly so.
			keyValue, err := fromUnstructuredValue(n.KeyValue, key.typ)
			if err != nil {
				return unsupported("key %v does not fit a %v: %v", n.KeyValue, key.typ, err)
			}
			e := reflect.New(elem).Elem()
			e.Field(key.index).Set(keyValue)
			objects, err := newElementObjects(e, n)
			if err != nil {
				return err
			}
			p.newElementObjects = append(p.newElementObjects, objects...)
			p.steps = append(p.steps, planStep{kind: stepKeyed, field: key, newElement: e})
			t = elem
		}
	}
	return nil
}

// planWrite checks what the mutator writes against the last field's type
// ft; mapEntry is an entry of a map of strings.
func (m *Mutator) planWrite(p *typedPlan, ft reflect.Type, omitEmpty, mapEntry bool) error {
	p.lastOmitEmpty = omitEmpty
	if ft.Kind() == reflect.Interface {
		return unsupported("the field is an interface")
	}
	switch m.id.Kind {
	case mutationsv1.KindAssign, mutationsv1.KindAssignMetadata:
		if m.fromMetadata != "" {
			if ft.Kind() != reflect.String || !plainScalar(ft) {
				return unsupported("fromMetadata into a %v", ft)
			}
			p.write = writeFromMetadata
			return nil
		}
		v, err := fromUnstructuredValue(m.value, ft)
		if err != nil {
			return unsupported("the value does not decode into a %v: %v", ft, err)
		}
		// Map entries are always written, whatever omitempty says.
		u, written, err := toUnstructuredValue(v, omitEmpty && !mapEntry)
		if err != nil || !written || isNull(u) || !jsonEqual(u, m.value) {
			return unsupported("the value does not read back as itself from a %v", ft)
		}
		p.value = v
		switch {
		case mapEntry && hasOwnForm(ft):
			p.write = writeComposite
		case mapEntry || plainScalar(ft):
			p.write = writeScalar
		case ft.Kind() == reflect.Pointer && plainScalar(ft.Elem()):
			p.write = writePointerToScalar
		default:
			p.write = writeComposite
		}
		return nil

	case mutationsv1.KindModifySet:
		if mapEntry || ft.Kind() != reflect.Slice || hasOwnForm(ft) || ft.Elem().Kind() != reflect.String || !plainScalar(ft.Elem()) {
			return unsupported("ModifySet on a %v", ft)
		}
		p.setIndex = make(map[string]int, len(m.values))
		for _, v := range m.values {
			s, ok := v.(string)
			if !ok {
				return unsupported("ModifySet of %s on a %v", jsonTypeName(v), ft)
			}
			if _, seen := p.setIndex[s]; !seen {
				p.setIndex[s] = len(p.setValues)
				p.setValues = append(p.setValues, s)
			}
		}
		p.write = writeModifySet
		return nil

	case mutationsv1.KindAssignImage:
		if mapEntry || ft.Kind() != reflect.String || !plainScalar(ft) {
			return unsupported("AssignImage on a %v", ft)
		}
		p.write = writeImage
		return nil
	}
	return unsupported("mutator kind %s", m.id.Kind)
}

// newElementObjects checks that the new element e reads as the map
// walker's {key: value} plus, at most, empty objects (struct fields, which
// the converter always writes), and returns those fields.
func newElementObjects(e reflect.Value, n path.List) ([]structField, error) {
	u, written, err := toUnstructuredValue(e, false)
	m, isMap := u.(map[string]any)
	if err != nil || !written || !isMap {
		return nil, unsupported("a new %v does not read as an object", e.Type())
	}
	var out []structField
	for k, v := range m {
		if k == n.KeyField {
			if !jsonEqual(v, n.KeyValue) {
				return nil, unsupported("a new %v keyed %s: %v would not read as that key", e.Type(), n.KeyField, n.KeyValue)
			}
			continue
		}
		if em, ok := v.(map[string]any); !ok || len(em) != 0 {
			return nil, unsupported("a new %v keyed %s: %v would also read with %s: %v", e.Type(), n.KeyField, n.KeyValue, k, v)
		}
		f, err := fieldByJSONName(e.Type(), k)
		if err != nil {
			return nil, err
		}
		out = append(out, structField{e.Type(), f.index})
	}
	if _, ok := m[n.KeyField]; !ok {
		return nil, unsupported("a new %v keyed %s: %v would not read with its key", e.Type(), n.KeyField, n.KeyValue)
	}
	return out, nil
}
