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

package noderestriction

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// The hot rules must judge kube-apiserver's internal objects, which this
// module cannot import, in tens of nanoseconds, while converting a whole
// Pod to v1 costs microseconds. The internal Go types use k8s.io/api's
// field names, so a rule names the fields it reads; the names are resolved
// once per Go type, with reflection, into byte offsets and checked kinds,
// and a request then reads those offsets directly. Reading with
// reflect.Value instead measured about 6 ns a field here, which put a
// mirror-pod create (some sixty fields) well past the upstream budget.
//
// Safety rests on four invariants, the first three established at resolve
// time: an offset is only ever applied to a pointer to the exact struct
// type it was resolved on (shapes are cached by the object's reflect.Type
// and element types are resolved from the slice or pointer that holds
// them); an offset path crosses no pointer except where a hop says so, and
// a hop reads a field whose kind is Pointer; each read matches the field's
// kind (string, slice, pointer) or, for typed reads, its exact Go type. And
// an object's address is taken from its interface (pointerIn) only once its
// dynamic type is known to be a pointer to a struct.

// path locates a field from the start of a struct: off is its offset from
// the base, or, when rest is set, the offset of a pointer to follow; each
// offset in rest applies after following the pointer found at the
// previous position.
type path struct {
	off      uintptr
	rest     []uintptr
	typ      reflect.Type // the field's type
	elemSize uintptr      // for slices: the size of one element
}

// addr returns the field's address in the struct at base, or nil when a
// pointer on the way is nil. The direct case is kept apart so that it
// inlines to one addition.
func (f *path) addr(base unsafe.Pointer) unsafe.Pointer {
	p := unsafe.Add(base, f.off)
	if f.rest == nil {
		return p
	}
	return follow(p, f.rest)
}

func follow(p unsafe.Pointer, rest []uintptr) unsafe.Pointer {
	for _, off := range rest {
		p = *(*unsafe.Pointer)(p)
		if p == nil {
			return nil
		}
		p = unsafe.Add(p, off)
	}
	return p
}

// str reads a string-kinded field; "" when unreachable.
func (f *path) str(base unsafe.Pointer) string {
	p := f.addr(base)
	if p == nil {
		return ""
	}
	return *(*string)(p)
}

// ptr reads a pointer-kinded field; nil when unset or unreachable.
func (f *path) ptr(base unsafe.Pointer) unsafe.Pointer {
	p := f.addr(base)
	if p == nil {
		return nil
	}
	return *(*unsafe.Pointer)(p)
}

// sliceHeader is the representation every Go slice shares.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// slice reads a slice-kinded field as its data pointer and length.
func (f *path) slice(base unsafe.Pointer) (unsafe.Pointer, int) {
	p := f.addr(base)
	if p == nil {
		return nil, 0
	}
	h := (*sliceHeader)(p)
	return h.data, h.len
}

// directLen is the length of a slice field resolved with direct.
func (f *path) directLen(base unsafe.Pointer) int {
	return (*sliceHeader)(unsafe.Add(base, f.off)).len
}

// directPtr reads a pointer field resolved with direct.
func (f *path) directPtr(base unsafe.Pointer) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Add(base, f.off))
}

// at is the address of element i of a slice read by f.
func (f *path) at(data unsafe.Pointer, i int) unsafe.Pointer {
	return unsafe.Add(data, uintptr(i)*f.elemSize)
}

// value returns a pointer to the field as an interface of its real type
// (never allocating: the interface holds a pointer), for comparisons
// that must be apimachinery's semantic equality; nil when unreachable.
func (f *path) value(base unsafe.Pointer) any {
	p := f.addr(base)
	if p == nil {
		return nil
	}
	return reflect.NewAt(f.typ, p).Interface()
}

// typedAt reads a field resolved with exactType[T] as *T.
func typedAt[T any](f *path, base unsafe.Pointer) *T {
	p := f.addr(base)
	if p == nil {
		return nil
	}
	return (*T)(p)
}

// pointerIn returns the pointer an interface holds, for an object whose
// dynamic type is known to be a pointer type. It reads the interface's data
// word, which for a pointer is the pointer itself; reflect's
// Value.UnsafePointer answers the same but costs a kind switch that, on
// the hot path, is several nanoseconds of a budget of tens.
// TestPointerIn holds the two to the same answer.
func pointerIn(obj runtime.Object) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&obj))[1]
}

// resolver resolves field names into paths. The first failure sticks, so
// a shape is built with straight-line code and checked once at the end.
type resolver struct {
	err error
}

// field resolves names from struct type t. A name may be a field promoted
// from an embedded struct, not from an embedded pointer; a pointer-typed
// field between two names is followed with a hop. want is the kind the
// last field must have.
func (r *resolver) field(t reflect.Type, want reflect.Kind, names ...string) path {
	if r.err != nil {
		return path{}
	}
	fail := func(format string, args ...any) path {
		r.err = fmt.Errorf(format, args...)
		return path{}
	}
	var hops []uintptr
	var off uintptr
	for i, name := range names {
		if i > 0 && t.Kind() == reflect.Pointer {
			hops = append(hops, off)
			off = 0
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return fail("%v is not a struct, so it has no field %s", t, name)
		}
		sf, ok := t.FieldByName(name)
		if !ok || !sf.IsExported() {
			return fail("%v has no field %s", t, name)
		}
		inner := t
		for _, x := range sf.Index[:len(sf.Index)-1] {
			embedded := inner.Field(x)
			if embedded.Type.Kind() != reflect.Struct {
				return fail("%v reaches %s through a pointer", t, name)
			}
			off += embedded.Offset
			inner = embedded.Type
		}
		// sf.Offset is relative to the innermost embedded struct.
		off += sf.Offset
		t = sf.Type
	}
	if t.Kind() != want {
		return fail("field %v is a %v, not a %v", names, t.Kind(), want)
	}
	hops = append(hops, off)
	f := path{off: hops[0], typ: t}
	if len(hops) > 1 {
		f.rest = hops[1:]
	}
	if t.Kind() == reflect.Slice {
		f.elemSize = t.Elem().Size()
	}
	return f
}

// direct resolves, as field does, a field that must be reached without
// following a pointer, so that its offset applies to the struct itself:
// reads of it (directLen, directPtr) are one load and inline where a
// path's would not.
func (r *resolver) direct(t reflect.Type, want reflect.Kind, names ...string) path {
	f := r.field(t, want, names...)
	if r.err == nil && f.rest != nil {
		r.err = fmt.Errorf("field %v is reached through a pointer", names)
	}
	return f
}

// has reports whether struct type t has an exported field name; optional
// fields (a volume source one version lacks) are resolved only when present.
func has(t reflect.Type, name string) bool {
	sf, ok := t.FieldByName(name)
	return ok && sf.IsExported()
}

// elem is the element type of a slice or pointer path, or nil after a failure.
func elem(f *path) reflect.Type {
	if f.typ == nil {
		return nil
	}
	return f.typ.Elem()
}

// exactType resolves a field that must be exactly T (for instance
// *metav1.Time or []string, shared by internal and versioned types), so
// that typedAt may read it as one.
func exactType[T any](r *resolver, t reflect.Type, names ...string) path {
	want := reflect.TypeFor[T]()
	f := r.field(t, want.Kind(), names...)
	if r.err == nil && f.typ != want {
		r.err = fmt.Errorf("field %v is a %v, not a %v", names, f.typ, want)
	}
	return f
}

// shapeCache remembers, per Go type, the shape a rule resolved for it.
// Before a type is first read as the rule's kind, the chain's typer must
// say it is of that kind, as upstream's type assertion would, so that a
// foreign object with look-alike fields is not read as a Pod. A Go type
// does not change kind, so once confirmed the type admits an object with
// no typer call: the hot path is a type comparison. A request without
// ObjectInterfaces is still refused, whatever was confirmed before, so that
// its outcome does not depend on the requests before it.
type shapeCache[S any] struct {
	kind  schema.GroupKind
	build func(r *resolver, t reflect.Type) *S

	// last is the latest type confirmed: inside kube-apiserver a rule sees
	// one internal type, so this spares the map lookup on every request.
	last   atomic.Pointer[shapeEntry[S]]
	byType sync.Map // reflect.Type of the pointer → *shapeEntry[S]
}

type shapeEntry[S any] struct {
	ptrType   reflect.Type
	shape     *S
	err       error       // why the type has no shape
	confirmed atomic.Bool // a typer said the type is of the cache's kind
}

// read returns the address of obj's struct and its shape, or the
// "unexpected type" error a rule returns for an object it cannot read.
func (c *shapeCache[S]) read(obj runtime.Object, o admission.ObjectInterfaces) (unsafe.Pointer, *S, error) {
	if e := c.last.Load(); e != nil && e.ptrType == reflect.TypeOf(obj) && o != nil {
		if p := pointerIn(obj); p != nil {
			return p, e.shape, nil
		}
	}
	return c.readSlow(obj, o)
}

// readSlow is read for a type other than the latest: resolve its shape
// once, then have it confirmed by the typer unless it already was.
func (c *shapeCache[S]) readSlow(obj runtime.Object, o admission.ObjectInterfaces) (unsafe.Pointer, *S, error) {
	if isNilObject(obj) {
		return nil, nil, unexpectedType(obj, nil)
	}
	if o == nil {
		return nil, nil, unexpectedType(obj, fmt.Errorf("no object typer to tell whether it is a %v", c.kind))
	}
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, nil, unexpectedType(obj, nil)
	}
	e := c.structure(t)
	if e.err != nil {
		return nil, nil, unexpectedType(obj, e.err)
	}
	if !e.confirmed.Load() {
		if err := c.confirm(obj, o); err != nil {
			return nil, nil, err
		}
		e.confirmed.Store(true)
	}
	c.last.Store(e)
	return pointerIn(obj), e.shape, nil
}

// confirm asks the chain's typer whether obj is of the cache's kind.
func (c *shapeCache[S]) confirm(obj runtime.Object, o admission.ObjectInterfaces) error {
	typer := o.GetObjectTyper()
	if typer == nil {
		return unexpectedType(obj, fmt.Errorf("no object typer to tell whether it is a %v", c.kind))
	}
	kinds, _, err := typer.ObjectKinds(obj)
	if err != nil {
		return unexpectedType(obj, err)
	}
	for _, k := range kinds {
		if k.GroupKind() == c.kind {
			return nil
		}
	}
	return unexpectedType(obj, nil)
}

// readSecond reads the second object of a request whose first, known, was
// read with shape: an object of the same Go type has the same shape and
// kind, so only its address is needed.
func (c *shapeCache[S]) readSecond(obj, known runtime.Object, shape *S, o admission.ObjectInterfaces) (unsafe.Pointer, error) {
	if reflect.TypeOf(obj) == reflect.TypeOf(known) {
		if p := pointerIn(obj); p != nil {
			return p, nil
		}
		return nil, unexpectedType(obj, nil)
	}
	p, s, err := c.read(obj, o)
	if err != nil {
		return nil, err
	}
	if s != shape {
		return nil, unexpectedType(obj, fmt.Errorf("not of the Go type of %T", known))
	}
	return p, nil
}

// structure resolves (once) the shape of the struct *t points to.
func (c *shapeCache[S]) structure(t reflect.Type) *shapeEntry[S] {
	if v, ok := c.byType.Load(t); ok {
		return v.(*shapeEntry[S])
	}
	r := &resolver{}
	e := &shapeEntry[S]{ptrType: t, shape: c.build(r, t.Elem()), err: r.err}
	if r.err != nil {
		e.shape = nil
	}
	v, _ := c.byType.LoadOrStore(t, e)
	return v.(*shapeEntry[S])
}
