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
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
)

// The typed adapter gives the walker (walk.go: object, slot, list) a
// typed object as if it were its unstructured form. Which Go type stands
// for which JSON shape (jsonShapes in typed_fields.go decides), and which
// of the adapter's types walks it:
//
//	Go type                              JSON shape            walked as
//	-----------------------------------  --------------------  ----------------------------
//	pointer to the object's struct       object                typedRoot (mutable)
//	struct                               object                structObject (object)
//	*struct                              object, or null       structObject behind a typedField
//	a struct's json field                member of an object   typedField (slot)
//	map[string]T                         object of any keys    typedMap (object)
//	one key of such a map                member of that object typedMapEntry (slot)
//	[]T                                  list                  typedList (list)
//	bool, string, integers, floats       scalar                a slot's value
//	*bool, *string, *int64, ...          scalar, or null       a slot's value
//	Quantity, IntOrString, Time,         the type's own form   a slot's value, compared
//	RawExtension                         (its marshaller's)    as the type holds it
//	a field the type does not have       nothing               absentField, absentObject,
//	                                                           absentList (writes dropped)
//	an unset field that holds neither    object or list, to    misfitObject, misfitList (an
//	an object nor a list (string, ...)   Gatekeeper            error once written into)
//	interfaces, maps of other keys       a value the walker    a slot's value, read and
//	                                     does not go into      written whole
var (
	_ mutable = (*typedRoot)(nil)
	_ object  = (*structObject)(nil)
	_ object  = (*typedMap)(nil)
	_ object  = absentObject{}
	_ slot    = (*typedField)(nil)
	_ slot    = (*typedMapEntry)(nil)
	_ slot    = absentField{}
	_ list    = (*typedList)(nil)
	_ list    = absentList{}
	_ object  = misfitObject{}
	_ list    = misfitList{}
)

// mutateTyped is Mutate on a typed object (a pointer to a versioned API
// struct), changed in place by reflection, so that a Pod need not be
// converted to its unstructured form and back on every request.
//
// The walker is the same; what it sees is the object's unstructured form,
// the one runtime.DefaultUnstructuredConverter gives, read field by field
// through the json tags. So the result is what the walker on the
// unstructured form gives once that is decoded back into the type, with
// three differences, all of them where the unstructured form cannot be
// decoded as it is: a value that does not fit its field (a string where an
// integer goes, an integer too large for it, an object where a string
// goes) is an error naming the mutator, where the decoder would refuse the
// object or silently cut the integer; a field the type does not have takes
// no value, as the decoder drops it; and values are compared as the type
// holds them, so a write that reads as before (an empty string into an
// omitempty field, 1024Mi over 1Gi) is not a change.
func mutateTyped(candidates []*Mutator, obj runtime.Object, t *match.Target, ext *External) (Result, error) {
	ptr := reflect.ValueOf(obj)
	if ptr.Kind() != reflect.Pointer || ptr.IsNil() || typeInfoOf(ptr.Type().Elem()).shape != shapeObject {
		return Result{}, fmt.Errorf("%s: cannot mutate a %T in place", describe(t), obj)
	}
	accessor, ok := obj.(metav1.Object)
	if !ok {
		return Result{}, fmt.Errorf("%s: a %T has no metadata", describe(t), obj)
	}
	sc := typedScratches.Get().(*typedScratch)
	defer sc.release()
	r := &sc.root
	r.root.v, r.root.info, r.root.sc, r.root.made = ptr.Elem(), typeInfoOf(ptr.Type().Elem()), sc, nil
	r.obj, r.accessor = obj, accessor
	return run(candidates, r, t, ext, &sc.meta)
}

// The walker's interfaces, and the typed form's implementations of them
// (the unstructured form's are in unstructured.go).
var (
	_ object = (*structObject)(nil)
	_ object = (*typedMap)(nil)
	_ object = absentObject{}
	_ object = misfitObject{}
	_ slot   = (*typedField)(nil)
	_ slot   = (*typedMapEntry)(nil)
	_ slot   = absentField{}
	_ slot   = unusableField{}
	_ list   = (*typedList)(nil)
	_ list   = absentList{}
	_ list   = misfitList{}
)

// typedRoot is a typed object under mutation, for run.
type typedRoot struct {
	root     structObject
	obj      runtime.Object
	accessor metav1.Object
}

func (o *typedRoot) apply(m *Mutator, md requestMeta) (effect, error) {
	o.root.sc.reset()
	return m.run(o.root.sc.structObject(o.root.v, o.root.info, nil), md)
}

// typedScratch holds the objects, slots and lists of walks on a typed
// object.
type typedScratch struct {
	structs slab[structObject]
	made    slab[madeStruct]
	fields  slab[typedField]
	maps    slab[typedMap]
	entries slab[typedMapEntry]
	lists   slab[typedList]
	// root and meta are the request's, here rather than allocated by
	// each request.
	root typedRoot
	meta metaValues
	// elements are the structs new list elements are built in, by type.
	elements []elementStructs
}

// elementStructs are zero structs of one type for new list elements. A new
// element is copied into its list when it is kept (typedList.push), so the
// struct it was built in is free again once the walk that made it ends:
// the walks of a request, and the requests after it, build their new
// elements in the same few structs instead of allocating one for each.
type elementStructs struct {
	t    reflect.Type
	ptrs []reflect.Value // pointers to structs of type t
	used int             // by the walk under way
}

// elementStruct returns a pointer to a zero struct of type t that no other
// value of the walk under way uses.
func (sc *typedScratch) elementStruct(t reflect.Type) reflect.Value {
	i := 0
	for i < len(sc.elements) && sc.elements[i].t != t {
		i++
	}
	if i == len(sc.elements) {
		sc.elements = append(sc.elements, elementStructs{t: t})
	}
	es := &sc.elements[i]
	if es.used == len(es.ptrs) {
		es.ptrs = append(es.ptrs, reflect.New(t))
	} else {
		es.ptrs[es.used].Elem().SetZero()
	}
	es.used++
	return es.ptrs[es.used-1]
}

// typedScratches keep the chunks of finished requests for the next ones.
var typedScratches = sync.Pool{New: func() any { return new(typedScratch) }}

// release empties sc, so that it holds on to no object, and returns it to
// the pool.
func (sc *typedScratch) release() {
	sc.structs.clear()
	sc.made.clear()
	sc.fields.clear()
	sc.maps.clear()
	sc.entries.clear()
	sc.lists.clear()
	for i := range sc.elements {
		es := &sc.elements[i]
		for _, p := range es.ptrs {
			p.Elem().SetZero()
		}
		es.used = 0
	}
	sc.root.root.v, sc.root.root.sc, sc.root.obj, sc.root.accessor = reflect.Value{}, nil, nil, nil
	sc.meta.namespace, sc.meta.name = nil, nil
	typedScratches.Put(sc)
}

func (sc *typedScratch) reset() {
	sc.structs.reset()
	sc.made.reset()
	sc.fields.reset()
	sc.maps.reset()
	sc.entries.reset()
	sc.lists.reset()
	for i := range sc.elements {
		sc.elements[i].used = 0
	}
}

func (o *typedRoot) labels() labels.Labels { return labels.Set(o.accessor.GetLabels()) }

func (o *typedRoot) snapshot() (any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
}

func (o *typedRoot) same(snapshot any) (bool, error) {
	now, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
	if err != nil {
		return false, err
	}
	return jsonEqual(snapshot, now), nil
}

// structObject is a typed struct.
type structObject struct {
	v    reflect.Value // the struct, addressable
	info *typeInfo
	sc   *typedScratch
	// made is set on a struct the walker made, or one inside it, not part
	// of the object yet. Gatekeeper makes an empty object there, so every
	// field reads as missing until written.
	made *madeStruct
}

// madeStruct is what the walker knows of a struct it made.
type madeStruct struct {
	// ptr is the pointer to attach, for a new struct behind a pointer.
	ptr reflect.Value
	// key is the field a new list element is selected by, which reads as
	// set.
	key []int
}

// inMade marks a struct inside one the walker made.
var inMade = &madeStruct{}

// newStruct is a fresh zero struct of the type info describes: behind a
// new pointer, which becomes part of the object, when pointer is true;
// otherwise one of the scratch's, to be copied into a list.
func (sc *typedScratch) newStruct(info *typeInfo, pointer bool) *structObject {
	made := sc.made.next()
	made.ptr, made.key = reflect.Value{}, nil
	var p reflect.Value
	if pointer {
		p = reflect.New(info.t)
		made.ptr = p
	} else {
		p = sc.elementStruct(info.t)
	}
	return sc.structObject(p.Elem(), info, made)
}

// The constructors below set every field of what the slabs hand out, one
// store each (see slab.next).

func (sc *typedScratch) structObject(v reflect.Value, info *typeInfo, made *madeStruct) *structObject {
	o := sc.structs.next()
	o.v, o.info, o.sc, o.made = v, info, sc, made
	return o
}

func (sc *typedScratch) field(v reflect.Value, f *jsonField, fresh, there bool) *typedField {
	s := sc.fields.next()
	s.v, s.f, s.sc, s.fresh, s.there = v, f, sc, fresh, there
	return s
}

func (sc *typedScratch) mapObject(v reflect.Value, info *typeInfo) *typedMap {
	o := sc.maps.next()
	o.v, o.info, o.sc = v, info, sc
	return o
}

func (sc *typedScratch) entry(m, key reflect.Value, info *typeInfo) *typedMapEntry {
	s := sc.entries.next()
	s.m, s.key, s.info = m, key, info
	return s
}

func (sc *typedScratch) list(v reflect.Value, info *typeInfo) *typedList {
	l := sc.lists.next()
	l.v, l.info, l.sc = v, info, sc
	return l
}

func (o *structObject) field(name string, hint *fieldHint) slot {
	f, err := hint.fieldOf(o.info, name)
	switch {
	case err == errNoField:
		return absentField{}
	case err != nil:
		return unusableField{err}
	}
	v := o.v.FieldByIndex(f.index)
	fresh := o.made != nil && !slices.Equal(f.index, o.made.key)
	return o.sc.field(v, f, fresh, !fresh && present(v, f))
}

// typedField is a field of a typed struct.
type typedField struct {
	v  reflect.Value // addressable
	f  *jsonField
	sc *typedScratch
	// fresh: the field is in a struct the walker made.
	fresh bool
	// there is exists' answer, worked out once.
	there bool
}

func (s *typedField) exists() bool { return s.there }

func (s *typedField) typeName() string {
	if s.exists() {
		return typedValueName(s.v, s.f.info)
	}
	return fmt.Sprintf("a %v field", s.v.Type())
}

func (s *typedField) object() (object, bool) {
	info := s.f.info
	exists := s.exists()
	switch {
	case info.shape == shapeObject:
		// A struct always reads as present, unless omitzero leaves it
		// out: then it is as new.
		var made *madeStruct
		if s.fresh || !exists {
			made = inMade
		}
		return s.sc.structObject(s.v, info, made), true
	case info.shape == shapePointerToObject:
		if exists {
			return s.sc.structObject(s.v.Elem(), info.elemInfo(), nil), true
		}
		return s.sc.newStruct(info.elemInfo(), true), true
	case info.shape == shapeStringMap:
		return s.sc.mapObject(s.v, info), true
	case !exists:
		return misfitObject{}, true
	}
	return nil, false
}

// attach sets the pointer to a new struct; a struct or map held in the
// field itself was written in place.
func (s *typedField) attach(o object) (bool, error) {
	switch o := o.(type) {
	case misfitObject:
		return false, &misfitError{value: map[string]any{}, t: s.v.Type()}
	case *structObject:
		if o.made != nil && o.made.ptr.IsValid() {
			s.v.Set(o.made.ptr)
		}
	}
	return true, nil
}

func (s *typedField) list() (list, bool) {
	switch {
	case s.f.info.shape == shapeList:
		return s.sc.list(s.v, s.f.info), true
	case !s.exists():
		return misfitList{s.v.Type()}, true
	}
	return nil, false
}

func (s *typedField) holds(v any) bool { return s.exists() && typedEqual(s.v, s.f.info, v) }

func (s *typedField) str() (string, bool) { return typedString(s.v, s.f.info) }

func (s *typedField) set(v any) (effect, error) {
	nv, err := decodeValue(v, s.f.info)
	if err != nil {
		return effect{}, err
	}
	was, is := present(s.v, s.f), present(nv, s.f)
	same := was == is && (!was || sameValue(s.v, nv, s.f.info))
	s.v.Set(nv)
	return effect{wrote: true, changed: !same}, nil
}

// typedMap is a map with string keys: labels, a node selector, a
// ResourceList.
type typedMap struct {
	v    reflect.Value // the map field, addressable
	info *typeInfo
	sc   *typedScratch
}

func (o *typedMap) field(name string, hint *fieldHint) slot {
	return o.sc.entry(o.v, hint.mapKey(o.info, name), o.info.elemInfo())
}

// typedMapEntry is an entry of a typed map. Its values are written whole:
// map entries are not addressable.
type typedMapEntry struct {
	m, key reflect.Value
	info   *typeInfo // of the values
}

func (s *typedMapEntry) get() reflect.Value { return s.m.MapIndex(s.key) }

// stringMapType is the type of labels, annotations and selectors.
var stringMapType = reflect.TypeFor[map[string]string]()

// lookupString reads the entry of a map[string]string (ok) without
// MapIndex, which copies every string it finds into an allocation of its
// own: a request reads labels and annotations on every pass.
func (s *typedMapEntry) lookupString() (value string, found, ok bool) {
	if s.m.Type() != stringMapType {
		return "", false, false
	}
	value, found = s.m.Interface().(map[string]string)[s.key.String()]
	return value, found, true
}

func (s *typedMapEntry) exists() bool {
	if _, found, ok := s.lookupString(); ok {
		return found
	}
	e := s.get()
	if !e.IsValid() {
		return false
	}
	if s.info.shape == shapeScalar {
		return true // never null, and boxing it in typedJSON allocates
	}
	u, ok := typedJSON(e, s.info)
	return ok && !isNull(u)
}

func (s *typedMapEntry) typeName() string {
	if e := s.get(); e.IsValid() {
		return typedValueName(e, s.info)
	}
	return fmt.Sprintf("a %v entry", s.info.t)
}

func (s *typedMapEntry) object() (object, bool) {
	if s.exists() {
		return nil, false
	}
	return misfitObject{}, true
}

func (s *typedMapEntry) attach(object) (bool, error) {
	return false, &misfitError{value: map[string]any{}, t: s.info.t}
}

func (s *typedMapEntry) list() (list, bool) {
	if s.exists() {
		return nil, false
	}
	return misfitList{s.info.t}, true
}

func (s *typedMapEntry) holds(v any) bool {
	if cur, found, ok := s.lookupString(); ok {
		want, isString := v.(string)
		return found && isString && cur == want
	}
	e := s.get()
	return e.IsValid() && typedEqual(e, s.info, v)
}

func (s *typedMapEntry) str() (string, bool) {
	if cur, found, ok := s.lookupString(); ok {
		return cur, found
	}
	e := s.get()
	if !e.IsValid() {
		return "", false
	}
	return typedString(e, s.info)
}

func (s *typedMapEntry) set(v any) (effect, error) {
	nv, err := decodeValue(v, s.info)
	if err != nil {
		return effect{}, err
	}
	old := s.get()
	same := old.IsValid() && sameValue(old, nv, s.info)
	if s.m.IsNil() {
		s.m.Set(reflect.MakeMap(s.m.Type()))
	}
	s.m.SetMapIndex(s.key, nv)
	return effect{wrote: true, changed: !same}, nil
}

// typedList is a slice.
type typedList struct {
	v    reflect.Value // the slice field, addressable
	info *typeInfo
	sc   *typedScratch
}

func (l *typedList) len() int { return l.v.Len() }

func (l *typedList) elem(j int) (object, bool) {
	e, ei := l.v.Index(j), l.info.elemInfo()
	switch {
	case ei.shape == shapeObject:
		return l.sc.structObject(e, ei, nil), true
	case ei.shape == shapePointerToObject && !e.IsNil():
		return l.sc.structObject(e.Elem(), ei.elemInfo(), nil), true
	}
	return nil, false
}

func (l *typedList) elemTypeName(j int) string {
	return typedValueName(l.v.Index(j), l.info.elemInfo())
}

func (l *typedList) elemValue(j int) any {
	u, _ := typedJSON(l.v.Index(j), l.info.elemInfo())
	return u
}

func (l *typedList) elemEqual(j int, v any) bool {
	return typedEqual(l.v.Index(j), l.info.elemInfo(), v)
}

func (l *typedList) newElement(key string, value any) (object, error) {
	var o *structObject
	switch ei := l.info.elemInfo(); {
	case ei.shape == shapeObject:
		o = l.sc.newStruct(ei, false)
	case ei.shape == shapePointerToObject:
		o = l.sc.newStruct(ei.elemInfo(), true)
	default:
		return nil, fmt.Errorf("the list holds %v values, not objects", ei.t)
	}
	f, err := o.info.fieldOf(key)
	switch {
	case err == errNoField:
		// The key is dropped, as the decoder drops it: such an element is
		// selected by nothing on the next pass.
		return o, nil
	case err != nil:
		return nil, fmt.Errorf("its elements cannot be selected by %q: %w", key, err)
	}
	if _, err := (&typedField{v: o.v.FieldByIndex(f.index), f: f}).set(value); err != nil {
		return nil, fmt.Errorf("key %s: %w", key, err)
	}
	o.made.key = f.index
	return o, nil
}

func (l *typedList) appendElement(o object) (bool, error) {
	so := o.(*structObject)
	e := so.v
	if so.made.ptr.IsValid() {
		e = so.made.ptr
	}
	l.push(e)
	return true, nil
}

// push appends e to the slice in place. It is reflect.Append, whose
// result Value costs an allocation of its own on every call.
func (l *typedList) push(e reflect.Value) {
	n := l.v.Len()
	l.v.Grow(1)
	l.v.SetLen(n + 1)
	l.v.Index(n).Set(e)
}

func (l *typedList) setElement(j int, v any) (effect, error) {
	ei := l.info.elemInfo()
	nv, err := decodeValue(v, ei)
	if err != nil {
		return effect{}, err
	}
	if j < 0 {
		l.push(nv)
		return changedByWrite, nil
	}
	same := sameValue(l.v.Index(j), nv, ei)
	l.v.Index(j).Set(nv)
	return effect{wrote: true, changed: !same}, nil
}

func (l *typedList) appendValues(vs []any) (effect, error) {
	out := reflect.MakeSlice(l.v.Type(), l.v.Len(), l.v.Len()+len(vs))
	reflect.Copy(out, l.v)
	for _, v := range vs {
		nv, err := decodeValue(v, l.info.elemInfo())
		if err != nil {
			return effect{}, err
		}
		out = reflect.Append(out, nv)
	}
	l.v.Set(out)
	return changedByWrite, nil
}

// retain makes a new slice: the old one's array may be shared with other
// objects. It is made at its length and filled by index, since every
// reflect.Append allocates a Value of its own.
func (l *typedList) retain(keep []bool) effect {
	n := 0
	for _, k := range keep {
		if k {
			n++
		}
	}
	out := reflect.MakeSlice(l.v.Type(), n, n)
	i := 0
	for j, k := range keep {
		if k {
			out.Index(i).Set(l.v.Index(j))
			i++
		}
	}
	l.v.Set(out)
	return changedByWrite
}

// absentField is a field the type does not have. Nothing is there, and
// what is written there is dropped, as the decoder drops an unknown
// field; new parents above it are kept all the same, as they are after
// decoding.
type absentField struct{}

func (absentField) exists() bool                { return false }
func (absentField) typeName() string            { return "no such field" }
func (absentField) object() (object, bool)      { return absentObject{}, true }
func (absentField) attach(object) (bool, error) { return false, nil }
func (absentField) list() (list, bool)          { return absentList{}, true }
func (absentField) holds(any) bool              { return false }
func (absentField) str() (string, bool)         { return "", false }
func (absentField) set(any) (effect, error)     { return effect{wrote: true}, nil }

// absentObject is an object below an absentField: all its fields are
// absent too.
type absentObject struct{}

func (absentObject) field(string, *fieldHint) slot { return absentField{} }

// absentList is a list below an absentField: empty, and what is written
// into it is dropped.
type absentList struct{}

func (absentList) len() int                           { return 0 }
func (absentList) elem(int) (object, bool)            { return nil, false }
func (absentList) elemTypeName(int) string            { return "" }
func (absentList) elemEqual(int, any) bool            { return false }
func (absentList) elemValue(int) any                  { return nil }
func (absentList) appendElement(object) (bool, error) { return false, nil }
func (absentList) retain([]bool) effect               { return effect{} }
func (absentList) setElement(int, any) (effect, error) {
	return effect{wrote: true}, nil
}
func (absentList) appendValues([]any) (effect, error) {
	return effect{wrote: true}, nil
}
func (absentList) newElement(string, any) (object, error) {
	return absentObject{}, nil
}

// unusableField is a field the walker cannot read or write safely (an
// unexported one, or a name two fields claim): every use is an error.
type unusableField struct{ err error }

func (s unusableField) exists() bool                { return false }
func (s unusableField) typeName() string            { return s.err.Error() }
func (s unusableField) object() (object, bool)      { return nil, false }
func (s unusableField) attach(object) (bool, error) { return false, s.err }
func (s unusableField) list() (list, bool)          { return nil, false }
func (s unusableField) holds(any) bool              { return false }
func (s unusableField) str() (string, bool)         { return "", false }
func (s unusableField) set(any) (effect, error)     { return effect{}, s.err }

// misfitObject and misfitList stand, during one walk, for an object or a
// list where nothing is and the type can hold neither (a string field, an
// IntOrString). Gatekeeper would make an empty one there: that is only
// wrong, and refused, once something is written into it.
type misfitObject struct{}

func (misfitObject) field(string, *fieldHint) slot { return absentField{} }

type misfitList struct{ t reflect.Type }

func (misfitList) len() int                { return 0 }
func (misfitList) elem(int) (object, bool) { return nil, false }
func (misfitList) elemTypeName(int) string { return "" }
func (misfitList) elemEqual(int, any) bool { return false }
func (misfitList) elemValue(int) any       { return nil }
func (misfitList) retain([]bool) effect    { return effect{} }
func (misfitList) newElement(string, any) (object, error) {
	return absentObject{}, nil
}
func (l misfitList) misfit() error                      { return &misfitError{value: []any{}, t: l.t} }
func (l misfitList) appendElement(object) (bool, error) { return false, l.misfit() }
func (l misfitList) setElement(int, any) (effect, error) {
	return effect{}, l.misfit()
}
func (l misfitList) appendValues([]any) (effect, error) {
	return effect{}, l.misfit()
}
