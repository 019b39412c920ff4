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

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// Metadata is what fromMetadata can read.
type Metadata struct {
	Namespace string
	Name      string
}

// Mutate applies m once to obj, in place, and reports whether any value
// really changed. Parents are only created when something is written below
// them, so a pathTest that stops the walk leaves no empty maps behind.
func (m *Mutator) Mutate(obj map[string]any, md Metadata) (bool, error) {
	if len(m.nodes) == 0 {
		return false, nil
	}
	if obj == nil {
		return false, fmt.Errorf("%s: the object is null, there is nothing to mutate", m.id)
	}
	_, changed, err := m.walk(obj, 0, md)
	return changed, err
}

// allowed applies the pathTest at depth i to whether a value exists there.
func (m *Mutator) allowed(i int, exists bool) bool {
	if m.conds == nil {
		return true
	}
	switch m.conds[i] {
	case mutationsv1.MustExist:
		return exists
	case mutationsv1.MustNotExist:
		return !exists
	}
	return true
}

// emptyFor is the container node i needs when its parent is missing.
func emptyFor(n path.Node) any {
	if _, ok := n.(path.List); ok {
		return []any(nil)
	}
	return map[string]any{}
}

func (m *Mutator) mismatch(i int, want string, got any) error {
	return fmt.Errorf("%s %q: %s expects %s, the object has %s", m.id, m.location.String(), prefixString(m.location, i-1), want, jsonTypeName(got))
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	if _, _, _, ok := numberOf(v); ok {
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// walk applies nodes[i:] below cur, the value nodes[:i] lead to. It returns
// the (possibly new) value for the parent to store when changed is true.
func (m *Mutator) walk(cur any, i int, md Metadata) (_ any, changed bool, _ error) {
	last := i == len(m.nodes)-1
	switch n := m.nodes[i].(type) {
	case path.Object:
		obj, ok := cur.(map[string]any)
		if !ok {
			if i == 0 {
				return cur, false, fmt.Errorf("%s: the object is %s, not an object", m.id, jsonTypeName(cur))
			}
			return cur, false, m.mismatch(i, "an object", cur)
		}
		child, present := obj[n.Reference]
		exists := present && !isNull(child) // explicit null counts as missing (#3463)
		if !m.allowed(i, exists) {
			return cur, false, nil
		}
		if last {
			v, changed, err := m.set(child, exists, i, md)
			if changed {
				obj[n.Reference] = v
			}
			return obj, changed, err
		}
		if !exists {
			child = emptyFor(m.nodes[i+1])
		}
		v, changed, err := m.walk(child, i+1, md)
		if changed {
			obj[n.Reference] = v
		}
		return obj, changed, err

	case path.List:
		list, ok := cur.([]any)
		if !ok && cur != nil {
			return cur, false, m.mismatch(i, "a list", cur)
		}
		return m.walkList(list, n, i, last, md)
	}
	return cur, false, nil
}

func (m *Mutator) walkList(list []any, n path.List, i int, last bool, md Metadata) (any, bool, error) {
	if n.Glob {
		return m.walkGlob(list, i, last, md)
	}
	first, err := m.firstMatch(list, n, i, last)
	if err != nil {
		return list, false, err
	}
	if !m.allowed(i, first >= 0) {
		return list, false, nil
	}
	switch {
	case last:
		return m.setElement(list, first)
	case first < 0:
		return m.appendElement(list, n, i, md)
	}
	changed := false
	for _, e := range list[first:] {
		em, ok := keyedElement(e, n)
		if !ok {
			continue
		}
		_, c, err := m.walk(em, i+1, md)
		changed = changed || c
		if err != nil {
			return list, changed, err
		}
	}
	return list, changed, nil
}

// walkGlob visits every element. Every element exists, so MustNotExist can
// never hold; and a glob never creates elements.
func (m *Mutator) walkGlob(list []any, i int, last bool, md Metadata) (any, bool, error) {
	if !m.allowed(i, true) || last {
		return list, false, nil
	}
	changed := false
	for _, e := range list {
		em, ok := e.(map[string]any)
		if !ok {
			return list, changed, m.mismatch(i+1, "list elements that are objects", e)
		}
		_, c, err := m.walk(em, i+1, md)
		changed = changed || c
		if err != nil {
			return list, changed, err
		}
	}
	return list, changed, nil
}

// keyedElement returns e as an object if its key field holds the
// selector's value. Gatekeeper passes over elements that are not objects
// when it looks for a key, so this does too.
func keyedElement(e any, n path.List) (map[string]any, bool) {
	em, ok := e.(map[string]any)
	if !ok {
		return nil, false
	}
	k, ok := em[n.KeyField]
	return em, ok && jsonEqual(k, n.KeyValue)
}

// firstMatch returns the index of the first element n selects, or -1. When
// the element itself is to be replaced (last), the list must hold only
// objects up to the match: replacing one object among other values would
// not be a keyed list at all.
func (m *Mutator) firstMatch(list []any, n path.List, i int, last bool) (int, error) {
	for j, e := range list {
		if _, ok := e.(map[string]any); !ok && last {
			return -1, m.mismatch(i+1, "list elements that are objects", e)
		}
		if _, ok := keyedElement(e, n); ok {
			return j, nil
		}
	}
	return -1, nil
}

// setElement replaces the element at first with the assigned object, or
// appends it when first is -1. Only Assign with a literal object value
// gets here (validated).
func (m *Mutator) setElement(list []any, first int) (any, bool, error) {
	if first < 0 {
		return append(list, deepCopyJSON(m.value)), true, nil
	}
	if jsonEqual(list[first], m.value) {
		return list, false, nil
	}
	list[first] = deepCopyJSON(m.value)
	return list, true, nil
}

// appendElement creates the element the selector names, `{key: value}`,
// and keeps it only if the rest of the path wrote something into it.
func (m *Mutator) appendElement(list []any, n path.List, i int, md Metadata) (any, bool, error) {
	elem := map[string]any{n.KeyField: n.KeyValue}
	if _, changed, err := m.walk(elem, i+1, md); !changed || err != nil {
		return list, false, err
	}
	return append(list, elem), true, nil
}

// set computes the value for the last node.
func (m *Mutator) set(cur any, exists bool, i int, md Metadata) (any, bool, error) {
	switch m.id.Kind {
	case mutationsv1.KindAssign, mutationsv1.KindAssignMetadata:
		if m.fromMetadata != "" {
			v := m.metadataValue(md)
			if s, ok := cur.(string); exists && ok && s == v {
				return cur, false, nil
			}
			return v, true, nil
		}
		if (exists && jsonEqual(cur, m.value)) || (!exists && m.value == nil) {
			return cur, false, nil
		}
		return deepCopyJSON(m.value), true, nil

	case mutationsv1.KindModifySet:
		if !exists {
			if m.prune || len(m.values) == 0 {
				return cur, false, nil
			}
			out, _ := m.valueIndex.mergeInto(make([]any, 0, len(m.values)))
			return out, true, nil
		}
		list, ok := cur.([]any)
		if !ok {
			return cur, false, fmt.Errorf("%s %q: %s is %s, not a list of values, so it cannot be treated as a set", m.id, m.location.String(), m.location.String(), jsonTypeName(cur))
		}
		if m.prune {
			out, changed := m.valueIndex.prune(list)
			if !changed {
				return cur, false, nil
			}
			return out, true, nil
		}
		merged, changed := m.valueIndex.mergeInto(list)
		return merged, changed, nil

	case mutationsv1.KindAssignImage:
		s := ""
		if exists {
			var ok bool
			if s, ok = cur.(string); !ok {
				return cur, false, fmt.Errorf("%s %q: the image at %s is %s, not a string", m.id, m.location.String(), m.location.String(), jsonTypeName(cur))
			}
		}
		img := assignImage(s, m.domain, m.imgPath, m.tag)
		if exists && img == s {
			return cur, false, nil
		}
		return img, true, nil
	}
	return cur, false, nil
}
