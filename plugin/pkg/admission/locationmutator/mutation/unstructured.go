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
	"sync"
)

// requestMeta is what a mutator may read of the request besides the
// object: the namespace and name fromMetadata writes.
type requestMeta struct {
	Namespace string
	Name      string
	// values are Namespace and Name as the JSON values fromMetadata
	// writes, made once per request rather than by every write; nil
	// makes them on every use.
	values *metaValues
	// external holds the request's external data, nil where there is
	// none (Options.External).
	external *External
}

// metaValues are a request's namespace and name as JSON values, each made
// on its first use: putting a string into an interface allocates, and most
// requests write neither. They live in the request's scratch, which clears
// them when the request ends.
type metaValues struct {
	namespace, name any
}

// namespace returns the namespace as a JSON value.
func (md requestMeta) namespace() any {
	if md.values == nil {
		return md.Namespace
	}
	if md.values.namespace == nil {
		md.values.namespace = md.Namespace
	}
	return md.values.namespace
}

// name returns the name as a JSON value.
func (md requestMeta) name() any {
	if md.values == nil {
		return md.Name
	}
	if md.values.name == nil {
		md.values.name = md.Name
	}
	return md.values.name
}

// The unstructured form's implementations of the walker's interfaces.
var (
	_ object = (*jsonObject)(nil)
	_ slot   = (*jsonSlot)(nil)
	_ list   = (*jsonList)(nil)
)

// jsonScratch holds the objects, slots and lists of walks on unstructured
// objects.
type jsonScratch struct {
	objects slab[jsonObject]
	slots   slab[jsonSlot]
	lists   slab[jsonList]
	// root and meta are the request's, here rather than allocated by
	// each request.
	root unstructuredRoot
	meta metaValues
}

// jsonScratches keep the chunks of finished requests for the next ones.
var jsonScratches = sync.Pool{New: func() any { return new(jsonScratch) }}

// release empties sc, so that it holds on to no object, and returns it to
// the pool.
func (sc *jsonScratch) release() {
	sc.objects.clear()
	sc.slots.clear()
	sc.lists.clear()
	sc.root.obj, sc.root.sc = nil, nil
	sc.meta.namespace, sc.meta.name = nil, nil
	jsonScratches.Put(sc)
}

// reset rewinds sc for the next walk of the same request.
func (sc *jsonScratch) reset() {
	sc.objects.reset()
	sc.slots.reset()
	sc.lists.reset()
}

// The constructors below set every field of what the slabs hand out, one
// store each (see slab.next).

func (sc *jsonScratch) object(m map[string]any) *jsonObject {
	o := sc.objects.next()
	o.m, o.sc = m, sc
	return o
}

func (sc *jsonScratch) slot(parent map[string]any, key string, value any, found bool) *jsonSlot {
	s := sc.slots.next()
	s.parent, s.key, s.value, s.found, s.sc = parent, key, value, found, sc
	return s
}

func (sc *jsonScratch) list(at *jsonSlot, items []any) *jsonList {
	l := sc.lists.next()
	l.at, l.items = at, items
	return l
}

// jsonObject is an object in unstructured form.
type jsonObject struct {
	m  map[string]any
	sc *jsonScratch
}

func (o *jsonObject) field(name string, _ *fieldHint) slot {
	v, ok := o.m[name]
	return o.sc.slot(o.m, name, v, ok)
}

// jsonSlot is a member of an unstructured object. Writes store new values
// there directly.
type jsonSlot struct {
	parent map[string]any
	key    string
	// value and found are what parent held at key when the slot was made,
	// which is all the walker reads before it writes there.
	value any
	found bool
	sc    *jsonScratch
}

func (s *jsonSlot) get() (any, bool) { return s.value, s.found }

// exists treats an explicit null as missing, as Gatekeeper does since
// open-policy-agent/gatekeeper#3463.
func (s *jsonSlot) exists() bool {
	v, ok := s.get()
	return ok && !isNull(v)
}

func (s *jsonSlot) typeName() string {
	v, _ := s.get()
	return jsonTypeName(v)
}

func (s *jsonSlot) object() (object, bool) {
	v, _ := s.get()
	if isNull(v) {
		return s.sc.object(map[string]any{}), true
	}
	o, ok := v.(map[string]any)
	return s.sc.object(o), ok
}

func (s *jsonSlot) attach(o object) (bool, error) {
	s.parent[s.key] = o.(*jsonObject).m
	return true, nil
}

func (s *jsonSlot) list() (list, bool) {
	v, _ := s.get()
	if isNull(v) {
		return s.sc.list(s, nil), true
	}
	l, ok := v.([]any)
	return s.sc.list(s, l), ok
}

func (s *jsonSlot) holds(v any) bool {
	cur, ok := s.get()
	return ok && jsonEqual(cur, v)
}

func (s *jsonSlot) str() (string, bool) {
	v, _ := s.get()
	str, ok := v.(string)
	return str, ok
}

func (s *jsonSlot) set(v any) (effect, error) {
	s.parent[s.key] = deepCopyJSON(v)
	return changedByWrite, nil
}

// jsonList is an unstructured list, stored back in its slot when it grows
// or shrinks.
type jsonList struct {
	at    *jsonSlot
	items []any
}

func (l *jsonList) len() int { return len(l.items) }

func (l *jsonList) elem(j int) (object, bool) {
	o, ok := l.items[j].(map[string]any)
	return l.at.sc.object(o), ok
}

func (l *jsonList) elemTypeName(j int) string { return jsonTypeName(l.items[j]) }

func (l *jsonList) elemValue(j int) any { return l.items[j] }

func (l *jsonList) elemEqual(j int, v any) bool { return jsonEqual(l.items[j], v) }

func (l *jsonList) newElement(key string, value any) (object, error) {
	return l.at.sc.object(map[string]any{key: value}), nil
}

func (l *jsonList) store(items []any) {
	l.items = items
	l.at.parent[l.at.key] = items
}

func (l *jsonList) appendElement(o object) (bool, error) {
	l.store(append(l.items, o.(*jsonObject).m))
	return true, nil
}

func (l *jsonList) setElement(j int, v any) (effect, error) {
	if j < 0 {
		l.store(append(l.items, deepCopyJSON(v)))
	} else {
		l.items[j] = deepCopyJSON(v)
	}
	return changedByWrite, nil
}

func (l *jsonList) appendValues(vs []any) (effect, error) {
	items := l.items
	if items == nil {
		items = make([]any, 0, len(vs))
	}
	for _, v := range vs {
		items = append(items, deepCopyJSON(v))
	}
	l.store(items)
	return changedByWrite, nil
}

// retain stores a new list: the old one may be shared with the caller.
func (l *jsonList) retain(keep []bool) effect {
	out := make([]any, 0, len(l.items))
	for j, e := range l.items {
		if keep[j] {
			out = append(out, e)
		}
	}
	l.store(out)
	return changedByWrite
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
