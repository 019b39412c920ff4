package mutation

import (
	"fmt"

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
	_, changed, err := m.walk(obj, 0, md)
	return changed, err
}

// allowed applies the pathTest at depth i to whether a value exists there.
func (m *Mutator) allowed(i int, exists bool) bool {
	if m.conds == nil {
		return true
	}
	switch m.conds[i] {
	case MustExist:
		return exists
	case MustNotExist:
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
		exists := present && child != nil // explicit null counts as missing
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
		// Every element exists, so MustNotExist can never hold; and a glob
		// never creates elements.
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

	first := -1
	for j, e := range list {
		em, ok := e.(map[string]any)
		if !ok {
			return list, false, m.mismatch(i+1, "list elements that are objects", e)
		}
		if k, ok := em[n.KeyField]; ok && jsonEqual(k, n.KeyValue) {
			first = j
			break
		}
	}
	exists := first >= 0
	if !m.allowed(i, exists) {
		return list, false, nil
	}
	if last {
		// Only Assign with a literal object value gets here (validated).
		if exists {
			if jsonEqual(list[first], m.value) {
				return list, false, nil
			}
			list[first] = deepCopyJSON(m.value)
			return list, true, nil
		}
		return append(list, deepCopyJSON(m.value)), true, nil
	}
	if !exists {
		elem := map[string]any{n.KeyField: n.KeyValue}
		if _, changed, err := m.walk(elem, i+1, md); !changed || err != nil {
			return list, false, err
		}
		return append(list, elem), true, nil
	}
	changed := false
	for _, e := range list[first:] {
		em, ok := e.(map[string]any)
		if !ok {
			return list, changed, m.mismatch(i+1, "list elements that are objects", e)
		}
		if k, ok := em[n.KeyField]; !ok || !jsonEqual(k, n.KeyValue) {
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

// set computes the value for the last node.
func (m *Mutator) set(cur any, exists bool, i int, md Metadata) (any, bool, error) {
	switch m.id.Kind {
	case KindAssign, KindAssignMetadata:
		if m.fromMetadata != "" {
			v := md.Name
			if m.fromMetadata == "namespace" {
				v = md.Namespace
			}
			if s, ok := cur.(string); exists && ok && s == v {
				return cur, false, nil
			}
			return v, true, nil
		}
		if (exists && jsonEqual(cur, m.value)) || (!exists && m.value == nil) {
			return cur, false, nil
		}
		return deepCopyJSON(m.value), true, nil

	case KindModifySet:
		if !exists {
			if m.prune || len(m.values) == 0 {
				return cur, false, nil
			}
			out := make([]any, 0, len(m.values))
			for _, v := range m.values {
				if !containsJSON(out, v) {
					out = append(out, deepCopyJSON(v))
				}
			}
			return out, true, nil
		}
		list, ok := cur.([]any)
		if !ok {
			return cur, false, fmt.Errorf("%s %q: %s is %s, not a list of values, so it cannot be treated as a set", m.id, m.location.String(), m.location.String(), jsonTypeName(cur))
		}
		if m.prune {
			var out []any
			for j, e := range list {
				if containsJSON(m.values, e) {
					if out == nil {
						out = append(make([]any, 0, len(list)), list[:j]...)
					}
					continue
				}
				if out != nil {
					out = append(out, e)
				}
			}
			if out == nil {
				return cur, false, nil
			}
			return out, true, nil
		}
		changed := false
		for _, v := range m.values {
			if !containsJSON(list, v) {
				list = append(list, deepCopyJSON(v))
				changed = true
			}
		}
		return list, changed, nil

	case KindAssignImage:
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
