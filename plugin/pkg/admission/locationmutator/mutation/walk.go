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

// The walker follows a mutator's location through an object and hands the
// value at its end to the mutator's kind. It is written once, over the
// interfaces below, which an unstructured object (unstructured.go) and a
// typed one (typed.go) both implement: every location rule (globs, keyed
// elements, creating parents only when something is written below them,
// explicit null as missing, pathTests) lives here and nowhere else.
//
// What an object reads as is its JSON form: for a typed object, the form
// runtime.DefaultUnstructuredConverter gives it.

// object is an object of the value under mutation.
type object interface {
	// field returns the place of one of its members. hint is the node's:
	// an object may keep there where it found the name.
	field(name string, hint *fieldHint) slot
}

// slot is the place of an object's member, which may hold a value or not.
type slot interface {
	// exists reports a value that is not null.
	exists() bool
	// typeName names what is there, for messages: "an object", "a
	// string", "null".
	typeName() string
	// object returns the object held there or, when nothing is, a new
	// empty one that becomes part of the object only through attach.
	// false means the place holds, or can only hold, something else.
	object() (object, bool)
	// attach stores a new object that object returned, and reports
	// whether that changed the object.
	attach(o object) (bool, error)
	// list returns the list held there, empty when nothing is; false
	// means the place holds, or can only hold, something else.
	list() (list, bool)
	// holds reports a value there equal to v.
	holds(v any) bool
	// str returns the string there, if it holds one.
	str() (string, bool)
	// set writes v there.
	set(v any) (effect, error)
}

// list is a list of the value under mutation.
type list interface {
	len() int
	// elem returns element j as an object, or false when it is not one.
	elem(j int) (object, bool)
	// elemTypeName names element j, for messages.
	elemTypeName(j int) string
	// elemValue returns element j as a JSON value, for comparing it;
	// elemEqual compares it with v without making that value.
	elemValue(j int) any
	elemEqual(j int, v any) bool
	// newElement returns a new element object with only its key set; it
	// becomes part of the list through appendElement.
	newElement(key string, value any) (object, error)
	// appendElement appends a new element, and reports whether that
	// changed the object.
	appendElement(o object) (bool, error)
	// setElement writes v as element j, or appends it when j is -1.
	setElement(j int, v any) (effect, error)
	// appendValues appends values; retain keeps only the elements for
	// which keep is true.
	appendValues(vs []any) (effect, error)
	retain(keep []bool) effect
}

// effect is what a write did. wrote is whether the walker wrote anything:
// new parents and list elements are kept exactly then, as Gatekeeper keeps
// them. changed is whether the object's JSON form is now different, which
// is less for a typed object when the write is dropped or reads as before
// (an empty string in an omitempty field, say). reached is whether the
// walk came to the end of the location with every pathTest holding, which
// is what Gatekeeper counts as a mutator having mutated (its
// gatekeeper.sh/mutations annotation), whether or not the value changed.
// unsure is whether the mutator's next run might not find what this one
// wrote (a typed element that lost the key its selector names, a merged
// value that does not read back as a member): then the next pass may
// change the object again, and only running it tells (see settles).
type effect struct {
	wrote, changed, reached, unsure bool
}

func (e effect) or(o effect) effect {
	return effect{e.wrote || o.wrote, e.changed || o.changed, e.reached || o.reached, e.unsure || o.unsure}
}

// changedByWrite is the effect of a write that changed the object.
var changedByWrite = effect{wrote: true, changed: true}

// run applies m once below root.
func (m *Mutator) run(root object, md requestMeta) (effect, error) {
	if len(m.nodes) == 0 {
		return effect{}, nil
	}
	return m.walkObject(root, 0, md)
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

func (m *Mutator) mismatch(i int, want, got string) error {
	return fmt.Errorf("%s %q: %s expects %s, the object has %s", m.id, m.location.String(), prefixString(m.location, i-1), want, got)
}

// fail names the mutator and its location in an error of its kind's write.
func (m *Mutator) fail(err error) error {
	return fmt.Errorf("%s %q: %w", m.id, m.location.String(), err)
}

// walkObject applies nodes[i:] to o, node i being one of its members.
func (m *Mutator) walkObject(o object, i int, md requestMeta) (effect, error) {
	n, ok := m.nodes[i].(path.Object)
	if !ok {
		// The parser never puts a list node first or after another one.
		return effect{}, m.fail(fmt.Errorf("%s selects list elements where an object's field is expected", prefixString(m.location, i)))
	}
	s := o.field(n.Reference, &m.hints[i])
	exists := s.exists()
	if !m.allowed(i, exists) {
		return effect{}, nil
	}
	if i == len(m.nodes)-1 {
		e, err := m.op.write(m, s, exists, md)
		e.reached = true
		return e, err
	}
	switch next := m.nodes[i+1].(type) {
	case path.List:
		l, ok := s.list()
		if !ok {
			return effect{}, m.mismatch(i+1, "a list", s.typeName())
		}
		return m.walkList(l, next, i+1, md)
	default:
		child, ok := s.object()
		if !ok {
			return effect{}, m.mismatch(i+1, "an object", s.typeName())
		}
		e, err := m.walkObject(child, i+1, md)
		if exists || !e.wrote || err != nil {
			return e, err
		}
		attached, err := s.attach(child)
		if err != nil {
			return effect{}, m.fail(fmt.Errorf("%s: %w", prefixString(m.location, i), err))
		}
		e.changed = e.changed || attached
		return e, nil
	}
}

// walkList applies nodes[i:] to l, node i selecting its elements.
func (m *Mutator) walkList(l list, n path.List, i int, md requestMeta) (effect, error) {
	last := i == len(m.nodes)-1
	if n.Glob {
		// Every element exists, so MustNotExist never holds; and a glob
		// never creates elements.
		if !m.allowed(i, true) || last {
			return effect{}, nil
		}
		return m.walkElements(l, 0, nil, i, md)
	}
	first, err := m.firstKeyed(l, n, i, last)
	if err != nil {
		return effect{}, err
	}
	if !m.allowed(i, first >= 0) {
		return effect{}, nil
	}
	switch {
	case last:
		w, ok := m.op.(elementWriter)
		if !ok {
			return effect{}, nil // validation refuses such a location
		}
		e, err := w.writeElement(m, l, first)
		e.reached = true
		if err == nil && e.changed && !m.selectsAgain(l, first, n, i) {
			e.unsure = true
		}
		return e, err
	case first < 0:
		return m.appendElement(l, n, i, md)
	}
	return m.walkElements(l, first, &n, i, md)
}

// walkElements walks below the elements from first on: every one, or
// those with the key of sel.
func (m *Mutator) walkElements(l list, first int, sel *path.List, i int, md requestMeta) (effect, error) {
	var e effect
	for j := first; j < l.len(); j++ {
		o, ok := l.elem(j)
		switch {
		case !ok && sel == nil:
			return e, m.mismatch(i+1, "list elements that are objects", l.elemTypeName(j))
		case !ok || (sel != nil && !keyed(o, *sel, &m.hints[i])):
			continue
		}
		c, err := m.walkObject(o, i+1, md)
		e = e.or(c)
		if err != nil {
			return e, err
		}
	}
	return e, nil
}

// keyed reports whether an element's key field holds the selector's value.
func keyed(o object, n path.List, hint *fieldHint) bool {
	return o.field(n.KeyField, hint).holds(n.KeyValue)
}

// firstKeyed returns the index of the first element n selects, or -1.
// Gatekeeper passes over elements that are not objects when it looks for a
// key, so this does too, unless the element itself is to be replaced
// (last): replacing one object among other values would not be a keyed
// list at all.
func (m *Mutator) firstKeyed(l list, n path.List, i int, last bool) (int, error) {
	for j := 0; j < l.len(); j++ {
		o, ok := l.elem(j)
		if !ok {
			if last {
				return -1, m.mismatch(i+1, "list elements that are objects", l.elemTypeName(j))
			}
			continue
		}
		if keyed(o, n, &m.hints[i]) {
			return j, nil
		}
	}
	return -1, nil
}

// appendElement creates the element the selector names, `{key: value}`,
// and keeps it only if the rest of the path wrote something into it.
func (m *Mutator) appendElement(l list, n path.List, i int, md requestMeta) (effect, error) {
	o, err := l.newElement(n.KeyField, n.KeyValue)
	if err != nil {
		return effect{}, m.fail(fmt.Errorf("%s cannot be created: %w", prefixString(m.location, i), err))
	}
	e, err := m.walkObject(o, i+1, md)
	if !e.wrote || err != nil {
		return effect{reached: e.reached}, err
	}
	// A typed element drops a key its type has no field for, or an empty
	// string in an omitempty one: the next pass would make another.
	found := keyed(o, n, &m.hints[i])
	appended, err := l.appendElement(o)
	if err != nil {
		return effect{}, m.fail(fmt.Errorf("%s: %w", prefixString(m.location, i-1), err))
	}
	return effect{wrote: true, changed: appended, reached: true, unsure: e.unsure || !found}, nil
}

// selectsAgain reports whether the element a whole-element write left at
// j (the last one when it appended) is the first one n selects, as the
// next pass looks for it: a typed element may lose its key.
func (m *Mutator) selectsAgain(l list, j int, n path.List, i int) bool {
	if j < 0 {
		j = l.len() - 1
	}
	o, ok := l.elem(j)
	return ok && keyed(o, n, &m.hints[i])
}
