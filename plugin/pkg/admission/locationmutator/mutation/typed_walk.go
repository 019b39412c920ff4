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

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// walkTyped is walk on a typed value: cur is the struct, slice or map that
// the steps before i lead to. The plan has ruled out every mismatch of
// path and type; only writing a composite value can fail (see setTyped).
func (m *Mutator) walkTyped(p *typedPlan, cur reflect.Value, i int, md Metadata) (bool, error) {
	step := &p.steps[i]
	last := i == len(p.steps)-1
	switch step.kind {
	case stepField:
		field := cur.Field(step.field.index)
		var exists bool
		if last && p.write == writeComposite {
			// A composite may have a form of its own (a Quantity): ask
			// the converter.
			u, written, err := toUnstructuredValue(field, step.field.omitEmpty)
			exists = err == nil && written && !isNull(u)
		} else {
			exists = presentInUnstructured(field, step.field.omitEmpty)
		}
		if !m.allowed(i, exists) {
			return false, nil
		}
		if last {
			return m.setTyped(p, field, exists, md)
		}
		if !step.throughPointer {
			return m.walkTyped(p, field, i+1, md)
		}
		if !field.IsNil() {
			return m.walkTyped(p, field.Elem(), i+1, md)
		}
		// As the map walker does, keep the new struct only if something
		// was written into it.
		created := reflect.New(field.Type().Elem())
		changed, err := m.walkTyped(p, created.Elem(), i+1, md)
		if changed {
			field.Set(created)
		}
		return changed, err

	case stepMapEntry:
		key := reflect.ValueOf(step.mapKey).Convert(cur.Type().Key())
		entry := cur.MapIndex(key)
		exists := entry.IsValid()
		if !m.allowed(i, exists) {
			return false, nil
		}
		if p.write == writeComposite {
			return m.setMapEntry(cur, key, entry, exists)
		}
		var want string
		if p.write == writeFromMetadata {
			want = m.metadataValue(md)
		} else {
			want = p.value.String()
		}
		if exists && entry.String() == want {
			return false, nil
		}
		if cur.IsNil() {
			cur.Set(reflect.MakeMap(cur.Type()))
		}
		cur.SetMapIndex(key, reflect.ValueOf(want).Convert(cur.Type().Elem()))
		return true, nil

	case stepEveryElement:
		if !m.allowed(i, true) {
			return false, nil
		}
		changed := false
		for j := 0; j < cur.Len(); j++ {
			c, err := m.walkTyped(p, cur.Index(j), i+1, md)
			if err != nil {
				return changed, err
			}
			changed = changed || c
		}
		return changed, nil

	case stepKeyed:
		sel := m.nodes[i].(path.List)
		first := -1
		for j := 0; j < cur.Len(); j++ {
			if keyMatches(cur.Index(j).Field(step.field.index), step.field.omitEmpty, sel.KeyValue) {
				first = j
				break
			}
		}
		if !m.allowed(i, first >= 0) {
			return false, nil
		}
		if first < 0 {
			// As the map walker does, append the new element only if
			// something was written into it.
			e := reflect.New(step.newElement.Type()).Elem()
			e.Set(step.newElement)
			changed, err := m.walkTyped(p, e, i+1, md)
			if !changed || err != nil {
				return false, err
			}
			cur.Set(reflect.Append(cur, e))
			return true, nil
		}
		changed := false
		for j := first; j < cur.Len(); j++ {
			e := cur.Index(j)
			if !keyMatches(e.Field(step.field.index), step.field.omitEmpty, sel.KeyValue) {
				continue
			}
			c, err := m.walkTyped(p, e, i+1, md)
			if err != nil {
				return changed, err
			}
			changed = changed || c
		}
		return changed, nil
	}
	return false, nil
}

// setMapEntry writes the assigned value into an entry of a map whose
// values have a form of their own (a Quantity in a ResourceList): compared
// in that form, decoded anew for each write so that no two objects share
// it.
func (m *Mutator) setMapEntry(mp, key, entry reflect.Value, exists bool) (bool, error) {
	if exists {
		u, written, err := toUnstructuredValue(entry, false)
		if err == nil && written && jsonEqual(u, m.value) {
			return false, nil
		}
	}
	fresh, err := fromUnstructuredValue(m.value, mp.Type().Elem())
	if err != nil {
		return false, fmt.Errorf("%s: %w", m.id, err)
	}
	if mp.IsNil() {
		mp.Set(reflect.MakeMap(mp.Type()))
	}
	mp.SetMapIndex(key, fresh)
	return true, nil
}

// keyMatches is keyedElement's test on a typed key field: its unstructured
// form is present and equal to the selector's value (a string or an
// int64).
func keyMatches(key reflect.Value, omitEmpty bool, want any) bool {
	if !presentInUnstructured(key, omitEmpty) {
		return false
	}
	switch key.Kind() {
	case reflect.String:
		s, ok := want.(string)
		return ok && key.String() == s
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w, ok := want.(int64)
		return ok && key.Int() == w
	case reflect.Bool:
		w, ok := want.(bool)
		return ok && key.Bool() == w
	case reflect.Float32, reflect.Float64:
		eq, _ := numbersEqual(key.Float(), want)
		return eq
	}
	return false
}

// setTyped is set on a typed struct field.
func (m *Mutator) setTyped(p *typedPlan, field reflect.Value, exists bool, md Metadata) (bool, error) {
	switch p.write {
	case writeScalar:
		if exists && field.Equal(p.value) {
			return false, nil
		}
		field.Set(p.value)
		return true, nil

	case writePointerToScalar:
		if exists && field.Elem().Equal(p.value.Elem()) {
			return false, nil
		}
		// A pointer of our own: the object must not share p.value.
		ptr := reflect.New(field.Type().Elem())
		ptr.Elem().Set(p.value.Elem())
		field.Set(ptr)
		return true, nil

	case writeComposite:
		if exists {
			u, _, err := toUnstructuredValue(field, false)
			if err == nil && jsonEqual(u, m.value) {
				return false, nil
			}
		}
		// Each write decodes the value anew, so that no two objects share
		// its maps and slices. The plan decoded it once already, so this
		// does not fail; should it, the request fails naming the mutator.
		fresh, err := fromUnstructuredValue(m.value, field.Type())
		if err != nil {
			return false, fmt.Errorf("%s: %w", m.id, err)
		}
		field.Set(fresh)
		return true, nil

	case writeFromMetadata:
		v := m.metadataValue(md)
		if exists && field.String() == v {
			return false, nil
		}
		field.SetString(v)
		return true, nil

	case writeModifySet:
		return m.modifySetTyped(p, field, exists), nil

	case writeImage:
		s := ""
		if exists {
			s = field.String()
		}
		// Never empty: validation requires one of the parts.
		img := assignImage(s, m.domain, m.imgPath, m.tag)
		if exists && img == s {
			return false, nil
		}
		field.SetString(img)
		return true, nil
	}
	return false, nil
}

// modifySetTyped is ModifySet on a []string (of some string type), through
// p.setIndex: linear in the list and the values.
func (m *Mutator) modifySetTyped(p *typedPlan, list reflect.Value, exists bool) bool {
	et := list.Type().Elem()
	if !exists {
		if m.prune || len(p.setValues) == 0 {
			return false
		}
		out := reflect.MakeSlice(list.Type(), 0, len(p.setValues))
		for _, v := range p.setValues {
			out = reflect.Append(out, reflect.ValueOf(v).Convert(et))
		}
		list.Set(out)
		return true
	}
	n := list.Len()
	if m.prune {
		out := reflect.MakeSlice(list.Type(), 0, n)
		removed := false
		for j := 0; j < n; j++ {
			e := list.Index(j)
			if _, found := p.setIndex[e.String()]; found {
				removed = true
				continue
			}
			out = reflect.Append(out, e)
		}
		if !removed {
			return false
		}
		list.Set(out)
		return true
	}
	present := make([]bool, len(p.setValues))
	missing := len(p.setValues)
	for j := 0; j < n && missing > 0; j++ {
		if k, found := p.setIndex[list.Index(j).String()]; found && !present[k] {
			present[k] = true
			missing--
		}
	}
	if missing == 0 {
		return false
	}
	// One new array for all the values added.
	out := reflect.MakeSlice(list.Type(), n+missing, n+missing)
	reflect.Copy(out, list)
	for k, v := range p.setValues {
		if !present[k] {
			out.Index(n).SetString(v)
			n++
		}
	}
	list.Set(out)
	return true
}
