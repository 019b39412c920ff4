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
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// ErrTypedUnsupported is wrapped by MutateTyped's error when it cannot run
// the candidates on the typed object exactly as Mutate would on the
// object's unstructured form. Nothing has been changed when it is returned:
// the caller converts the object and uses Mutate.
var ErrTypedUnsupported = errors.New("not supported on the typed object")

// The typed walker applies a mutator directly to a typed (versioned) Go
// object, guided by its json tags, so that a Pod need not be converted to a
// map and back. It must behave exactly as the map walker does on
// runtime.DefaultUnstructuredConverter.ToUnstructured of the object, which
// we call the object's J form below; the invariant kept is that after every
// write the map walker's object equals J of the typed one.
//
// Everything that could break the invariant is refused when the mutator is
// planned for a Go type, never half-way through a walk: a path that does
// not fit the type (the map walker would fail or write something the
// decoder drops or rejects), inline structs or interface fields on the way,
// types with their own JSON form on the way (Quantity, IntOrString, Time,
// RawExtension), omitzero, a value that does not decode into the field and
// come back as itself and present, parents or new list elements whose zero
// value would not read as an empty object, Assign of a whole list element,
// and ModifySet on anything but a []string.

// typedPlan is a mutator laid out against one Go type.
type typedPlan struct {
	err   error // why the type is not supported; nil when it is
	steps []tstep
	final finalKind
	// dec is the assigned value decoded into the final field's type (Assign
	// and AssignMetadata with a value).
	dec reflect.Value
	// terminal is the struct field the location ends at.
	terminal fieldKey
	// omitEmpty is the final field's omitempty, which fromMetadata needs.
	omitEmpty bool
	// strValues are a ModifySet's values, each once, in order, and
	// strIndex their positions there.
	strValues []string
	strIndex  map[string]int
	// extras are the struct fields a new list element has in J that the
	// map walker's {key: value} lacks: structs, which J always writes, and
	// which read as {} (checkExtras).
	extras []fieldKey
}

type stepKind int

const (
	stepField  stepKind = iota // a struct field
	stepMapKey                 // an entry of a map[string]string
	stepGlob                   // every element of a slice of structs
	stepKeyed                  // the elements of a slice of structs with a key
)

type tstep struct {
	kind stepKind
	// field is the struct field (stepField) or the element's key field
	// (stepKeyed).
	field tfield
	// fieldType is the struct holding field (stepField).
	fieldType reflect.Type
	// viaPtr: the field is a pointer to the struct the next step walks.
	viaPtr bool
	// elem is the new element, key set, a keyed step appends (stepKeyed).
	elem reflect.Value
	key  string // stepMapKey
}

type finalKind int

const (
	finScalar    finalKind = iota // Assign value into a plain scalar
	finPtrScalar                  // Assign value into a pointer to a plain scalar
	finComposite                  // Assign value into anything else, compared by J
	finFromMeta                   // fromMetadata into a string
	finModifySet                  // ModifySet on a []string
	finImage                      // AssignImage on a string
)

type fieldKey struct {
	t     reflect.Type
	index int
}

// tfield is a struct field found by its json name.
type tfield struct {
	index     int
	typ       reflect.Type
	omitEmpty bool
}

type jsonNameKey struct {
	t    reflect.Type
	name string
}

type fieldLookup struct {
	f   tfield
	err error
}

// fieldCache caches field lookups by (struct type, json name).
var fieldCache sync.Map // jsonNameKey -> fieldLookup

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrTypedUnsupported, fmt.Sprintf(format, args...))
}

// jsonName reads a field's json name and options the way the unstructured
// converter does; inline is an embedded struct without a name, whose
// members the converter merges into the parent (and "embed", which newer
// converters honour, is treated the same way to be safe).
func jsonName(sf reflect.StructField) (name string, omitEmpty, omitZero, inline bool) {
	tag, ok := sf.Tag.Lookup("json")
	if !ok || tag == "" {
		if sf.Anonymous {
			return "", false, false, true
		}
		return sf.Name, false, false, false
	}
	items := strings.Split(tag, ",")
	name = items[0]
	for _, o := range items[1:] {
		switch o {
		case "omitempty":
			omitEmpty = true
		case "omitzero":
			omitZero = true
		case "embed":
			inline = true
		}
	}
	if name == "" {
		if sf.Anonymous {
			inline = true
		} else {
			name = sf.Name
		}
	}
	return name, omitEmpty, omitZero, inline
}

// fieldByJSON finds the field of struct t whose json name is name. A name
// an inline member may hold, a shadowed name and omitzero are unsupported.
func fieldByJSON(t reflect.Type, name string) (tfield, error) {
	k := jsonNameKey{t, name}
	if v, ok := fieldCache.Load(k); ok {
		l := v.(fieldLookup)
		return l.f, l.err
	}
	f, err := lookupField(t, name)
	fieldCache.Store(k, fieldLookup{f, err})
	return f, err
}

// mayHold reports whether J of a struct of type t may have the key name,
// its inline members included; anything but a struct inline may hold any.
func mayHold(t reflect.Type, name string) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || custom(t) {
		return true
	}
	for i := 0; i < t.NumField(); i++ {
		n, _, _, inline := jsonName(t.Field(i))
		if n == name || (inline && mayHold(t.Field(i).Type, name)) {
			return true
		}
	}
	return false
}

func lookupField(t reflect.Type, name string) (tfield, error) {
	found := -1
	var out tfield
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		n, omitEmpty, omitZero, inline := jsonName(sf)
		if inline {
			// The inline member's fields share the parent's names (TypeMeta
			// holds kind and apiVersion).
			if mayHold(sf.Type, name) {
				return tfield{}, unsupported("%v inlines %v, which may hold %q", t, sf.Type, name)
			}
			continue
		}
		if n != name || n == "-" {
			continue
		}
		if found >= 0 || !sf.IsExported() || omitZero {
			return tfield{}, unsupported("field %q of %v", name, t)
		}
		found = i
		out = tfield{index: i, typ: sf.Type, omitEmpty: omitEmpty}
	}
	if found < 0 {
		return tfield{}, unsupported("%v has no field %q", t, name)
	}
	return out, nil
}

// custom reports a type with its own unstructured form.
func custom(t reflect.Type) bool {
	e := value.TypeReflectEntryOf(t)
	return e.CanConvertToUnstructured() || e.CanConvertFromUnstructured()
}

// plainScalar reports a bool, string, integer or float with no JSON form
// of its own.
func plainScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Float32, reflect.Float64:
		return !custom(t)
	}
	return false
}

func plainStruct(t reflect.Type) bool { return t.Kind() == reflect.Struct && !custom(t) }

// wrapperType is a struct with one field, "v", of type t, tagged like the
// original field, so that the converter treats its value as it would in
// place.
func wrapperType(t reflect.Type, omitEmpty bool) reflect.Type {
	tag := `json:"v"`
	if omitEmpty {
		tag = `json:"v,omitempty"`
	}
	return reflect.StructOf([]reflect.StructField{{Name: "V", Type: t, Tag: reflect.StructTag(tag)}})
}

// toJ returns J of v as it would read in a field with these options, and
// whether the field would be present at all.
func toJ(v reflect.Value, omitEmpty bool) (any, bool, error) {
	w := reflect.New(wrapperType(v.Type(), omitEmpty))
	w.Elem().Field(0).Set(v)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w.Interface())
	if err != nil {
		return nil, false, err
	}
	j, ok := u["v"]
	return j, ok, nil
}

// fromJ decodes a JSON value into a new value of type t, as the converter
// would decode it in place.
func fromJ(j any, t reflect.Type) (reflect.Value, error) {
	w := reflect.New(wrapperType(t, false))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"v": deepCopyJSON(j)}, w.Interface()); err != nil {
		return reflect.Value{}, err
	}
	return w.Elem().Field(0), nil
}

// jPresent reports whether J holds a non-null value for a field holding v.
// Structs are always written; a nil pointer, slice or map is null; an empty
// value with omitempty is left out. Custom types are not asked here.
func jPresent(v reflect.Value, omitEmpty bool) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil()
	case reflect.Map, reflect.Slice:
		return !v.IsNil() && !(omitEmpty && v.Len() == 0)
	case reflect.Struct:
		return true
	case reflect.String:
		return !omitEmpty || v.Len() > 0
	case reflect.Bool:
		return !omitEmpty || v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return !omitEmpty || v.Int() != 0
	case reflect.Float32, reflect.Float64:
		return !omitEmpty || v.Float() != 0
	}
	return true
}

// zeroReadsEmpty reports whether a new zero t reads as {} in J, as the
// empty map the map walker creates in its place does.
func zeroReadsEmpty(t reflect.Type) bool {
	j, ok, err := toJ(reflect.New(t).Elem(), false)
	if err != nil || !ok {
		return false
	}
	m, isMap := j.(map[string]any)
	return isMap && len(m) == 0
}

// planFor returns m laid out against struct type t, computed once.
func (m *Mutator) planFor(t reflect.Type) *typedPlan {
	if v, ok := m.typed.Load(t); ok {
		return v.(*typedPlan)
	}
	p := m.plan(t)
	v, _ := m.typed.LoadOrStore(t, p)
	return v.(*typedPlan)
}

func (m *Mutator) plan(root reflect.Type) *typedPlan {
	p := &typedPlan{}
	if err := m.planSteps(p, root); err != nil {
		p.err = fmt.Errorf("%s %q on %v: %w", m.id, m.location.String(), root, err)
	}
	return p
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
				p.steps = append(p.steps, tstep{kind: stepMapKey, key: n.Reference})
				return m.planFinal(p, t.Elem(), false, true)
			}
			f, err := fieldByJSON(t, n.Reference)
			if err != nil {
				return err
			}
			st := tstep{kind: stepField, field: f, fieldType: t}
			if last {
				p.steps = append(p.steps, st)
				p.terminal = fieldKey{t, f.index}
				return m.planFinal(p, f.typ, f.omitEmpty, false)
			}
			ft := f.typ
			switch next := m.nodes[i+1].(type) {
			case path.Object:
				switch {
				case plainStruct(ft):
				case ft.Kind() == reflect.Pointer && plainStruct(ft.Elem()):
					// A nil pointer is missing: the map walker creates {}
					// there, and so a new zero struct must read as {}.
					if !zeroReadsEmpty(ft.Elem()) {
						return unsupported("a new %v would not read as {}", ft.Elem())
					}
					st.viaPtr = true
					ft = ft.Elem()
				case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && ft.Elem().Kind() == reflect.String &&
					!custom(ft) && plainScalar(ft.Elem()) && ft.Key() == reflect.TypeOf(""):
					if !f.omitEmpty {
						// A non-nil empty map would read as {} and a nil one
						// as missing, as the map walker sees them; but keep
						// to the shape the API types use.
						return unsupported("map %q without omitempty", n.Reference)
					}
				default:
					return unsupported("%s is a %v, not an object", prefixString(m.location, i), ft)
				}
			case path.List:
				_ = next
				if ft.Kind() != reflect.Slice || custom(ft) || !plainStruct(ft.Elem()) {
					return unsupported("%s is a %v, not a list of objects", prefixString(m.location, i), ft)
				}
			}
			p.steps = append(p.steps, st)
			t = ft

		case path.List:
			elem := t.Elem()
			if last {
				return unsupported("assigning a whole list element")
			}
			if _, ok := m.nodes[i+1].(path.Object); !ok {
				return unsupported("a list directly in a list")
			}
			if n.Glob {
				p.steps = append(p.steps, tstep{kind: stepGlob})
				t = elem
				continue
			}
			kf, err := fieldByJSON(elem, n.KeyField)
			if err != nil {
				return err
			}
			if !plainScalar(kf.typ) {
				return unsupported("key field %q is a %v", n.KeyField, kf.typ)
			}
			// The element the map walker appends is {key: value}: the typed
			// one must read exactly so.
			kv, err := fromJ(n.KeyValue, kf.typ)
			if err != nil {
				return unsupported("key %v does not fit a %v: %v", n.KeyValue, kf.typ, err)
			}
			e := reflect.New(elem).Elem()
			e.Field(kf.index).Set(kv)
			extras, err := newElementExtras(e, n)
			if err != nil {
				return err
			}
			p.extras = append(p.extras, extras...)
			p.steps = append(p.steps, tstep{kind: stepKeyed, field: kf, elem: e})
			t = elem
		}
	}
	return nil
}

// planFinal checks what the mutator writes against the final field's type.
func (m *Mutator) planFinal(p *typedPlan, ft reflect.Type, omitEmpty, mapEntry bool) error {
	p.omitEmpty = omitEmpty
	if ft.Kind() == reflect.Interface {
		return unsupported("the field is an interface")
	}
	switch m.id.Kind {
	case mutationsv1.KindAssign, mutationsv1.KindAssignMetadata:
		if m.fromMetadata != "" {
			if ft.Kind() != reflect.String || !plainScalar(ft) {
				return unsupported("fromMetadata into a %v", ft)
			}
			p.final = finFromMeta
			return nil
		}
		dec, err := fromJ(m.value, ft)
		if err != nil {
			return unsupported("the value does not decode into a %v: %v", ft, err)
		}
		// Map entries are always written, whatever omitempty says.
		j, ok, err := toJ(dec, omitEmpty && !mapEntry)
		if err != nil || !ok || isNull(j) || !jsonEqual(j, m.value) {
			return unsupported("the value does not read back as itself from a %v", ft)
		}
		p.dec = dec
		switch {
		case mapEntry || plainScalar(ft):
			p.final = finScalar
		case ft.Kind() == reflect.Pointer && plainScalar(ft.Elem()):
			p.final = finPtrScalar
		default:
			p.final = finComposite
		}
		return nil

	case mutationsv1.KindModifySet:
		if mapEntry || ft.Kind() != reflect.Slice || custom(ft) || ft.Elem().Kind() != reflect.String || !plainScalar(ft.Elem()) {
			return unsupported("ModifySet on a %v", ft)
		}
		p.strIndex = make(map[string]int, len(m.values))
		for _, v := range m.values {
			s, ok := v.(string)
			if !ok {
				return unsupported("ModifySet of %s on a %v", jsonTypeName(v), ft)
			}
			if _, seen := p.strIndex[s]; !seen {
				p.strIndex[s] = len(p.strValues)
				p.strValues = append(p.strValues, s)
			}
		}
		p.final = finModifySet
		return nil

	case mutationsv1.KindAssignImage:
		if mapEntry || ft.Kind() != reflect.String || !plainScalar(ft) {
			return unsupported("AssignImage on a %v", ft)
		}
		p.final = finImage
		return nil
	}
	return unsupported("mutator kind %s", m.id.Kind)
}

// MutateTyped is Mutate on a typed object (a pointer to a versioned API
// struct), changed in place, with the same result, errors and final object
// as converting it to unstructured, running Mutate and decoding it back.
// When it cannot guarantee that, it returns an error wrapping
// ErrTypedUnsupported before changing anything.
func MutateTyped(candidates []*Mutator, obj runtime.Object, t *match.Target) (Result, error) {
	root := reflect.ValueOf(obj)
	if root.Kind() != reflect.Pointer || root.IsNil() {
		return Result{}, unsupported("the object is a %T", obj)
	}
	accessor, ok := obj.(metav1.Object)
	if !ok {
		return Result{}, unsupported("%T has no ObjectMeta", obj)
	}
	rt := root.Type().Elem()
	plans := make([]*typedPlan, len(candidates))
	for i, m := range candidates {
		p := m.planFor(rt)
		if p.err != nil {
			return Result{}, p.err
		}
		if p.final == finFromMeta && p.omitEmpty {
			// An empty name or namespace written into an omitempty field
			// is present in the map but not in J.
			if v := fromMetadataValue(m, t); v == "" {
				return Result{}, unsupported("%s writes an empty %s into an omitempty field", m.id, m.fromMetadata)
			}
		}
		plans[i] = p
	}
	if err := checkPrunes(candidates, plans); err != nil {
		return Result{}, err
	}
	if err := checkExtras(candidates, plans); err != nil {
		return Result{}, err
	}
	obj2 := &typedObject{root: root.Elem(), obj: obj, accessor: accessor, plans: plans}
	return run(candidates, obj2, t)
}

// checkPrunes refuses a prune next to another mutator ending at the same
// field: a prune that empties an omitempty list leaves [] in the map but
// nothing in J, which only a mutator reading that very field could tell.
func checkPrunes(candidates []*Mutator, plans []*typedPlan) error {
	for i, p := range plans {
		if p.final != finModifySet || !candidates[i].prune {
			continue
		}
		for j, q := range plans {
			if j != i && q.terminal == p.terminal {
				return unsupported("%s prunes a field %s also ends at", candidates[i].id, candidates[j].id)
			}
		}
	}
	return nil
}

// newElementExtras checks that the new element e, J of which is the map
// walker's {key: value} plus possibly empty objects (struct fields, always
// written), and returns those fields.
func newElementExtras(e reflect.Value, n path.List) ([]fieldKey, error) {
	j, ok, err := toJ(e, false)
	m, isMap := j.(map[string]any)
	if err != nil || !ok || !isMap {
		return nil, unsupported("a new %v does not read as an object", e.Type())
	}
	var extras []fieldKey
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
		f, err := fieldByJSON(e.Type(), k)
		if err != nil {
			return nil, err
		}
		extras = append(extras, fieldKey{e.Type(), f.index})
	}
	if _, ok := m[n.KeyField]; !ok {
		return nil, unsupported("a new %v keyed %s: %v would not read with its key", e.Type(), n.KeyField, n.KeyValue)
	}
	return extras, nil
}

// checkExtras refuses a set in which a new list element's extra {} could
// be seen: the map walker's element lacks it, so a pathTest at that field,
// a mutator ending there, or a whole value compared (composite) would tell
// the two apart. Walking through it is fine: the map walker creates the {}
// where the typed walker finds it.
func checkExtras(candidates []*Mutator, plans []*typedPlan) error {
	var extras []fieldKey
	for _, p := range plans {
		extras = append(extras, p.extras...)
	}
	if len(extras) == 0 {
		return nil
	}
	for j, q := range plans {
		if q.final == finComposite {
			return unsupported("%s compares a whole value where new list elements are made", candidates[j].id)
		}
		m := candidates[j]
		for d, st := range q.steps {
			if st.kind != stepField || (d != len(q.steps)-1 && (m.conds == nil || m.conds[d] == "")) {
				continue
			}
			for _, e := range extras {
				if st.fieldType == e.t && st.field.index == e.index {
					return unsupported("%s looks at %s, which a new list element has as {} and the map walker's lacks", m.id, prefixString(m.location, d))
				}
			}
		}
	}
	return nil
}

func fromMetadataValue(m *Mutator, t *match.Target) string {
	if m.fromMetadata == "namespace" {
		return t.Namespace
	}
	return t.Name
}

// typedObject is a typed object under mutation.
type typedObject struct {
	root     reflect.Value
	obj      runtime.Object
	accessor metav1.Object
	plans    []*typedPlan
}

func (o *typedObject) apply(i int, m *Mutator, md Metadata) (bool, error) {
	return m.walkTyped(o.plans[i], o.root, 0, md)
}

func (o *typedObject) labels() labels.Labels { return labels.Set(o.accessor.GetLabels()) }

func (o *typedObject) snapshot() (any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
}

func (o *typedObject) same(snapshot any) (bool, error) {
	now, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
	if err != nil {
		return false, err
	}
	return jsonEqual(snapshot, now), nil
}

// walkTyped is walk on a typed value: cur is the struct, slice or map that
// nodes[:i] lead to. The plan has ruled out every mismatch of path and
// type; only writing a composite value can fail (see setTyped).
func (m *Mutator) walkTyped(p *typedPlan, cur reflect.Value, i int, md Metadata) (bool, error) {
	st := &p.steps[i]
	last := i == len(p.steps)-1
	switch st.kind {
	case stepField:
		fv := cur.Field(st.field.index)
		var exists bool
		if last && p.final == finComposite {
			j, ok, err := toJ(fv, st.field.omitEmpty)
			exists = err == nil && ok && !isNull(j)
		} else {
			exists = jPresent(fv, st.field.omitEmpty)
		}
		if !m.allowed(i, exists) {
			return false, nil
		}
		if last {
			return m.setTyped(p, fv, exists, md)
		}
		if st.viaPtr {
			if fv.IsNil() {
				nv := reflect.New(fv.Type().Elem())
				changed, err := m.walkTyped(p, nv.Elem(), i+1, md)
				if changed {
					fv.Set(nv)
				}
				return changed, err
			}
			return m.walkTyped(p, fv.Elem(), i+1, md)
		}
		return m.walkTyped(p, fv, i+1, md)

	case stepMapKey:
		k := reflect.ValueOf(st.key)
		ev := cur.MapIndex(k)
		exists := ev.IsValid()
		if !m.allowed(i, exists) {
			return false, nil
		}
		var want string
		if p.final == finFromMeta {
			want = md.Name
			if m.fromMetadata == "namespace" {
				want = md.Namespace
			}
		} else {
			want = p.dec.String()
		}
		if exists && ev.String() == want {
			return false, nil
		}
		if cur.IsNil() {
			cur.Set(reflect.MakeMap(cur.Type()))
		}
		cur.SetMapIndex(k, reflect.ValueOf(want).Convert(cur.Type().Elem()))
		return true, nil

	case stepGlob:
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
		n := m.nodes[i].(path.List)
		first := -1
		for j := 0; j < cur.Len(); j++ {
			if keyMatches(cur.Index(j).Field(st.field.index), st.field.omitEmpty, n.KeyValue) {
				first = j
				break
			}
		}
		if !m.allowed(i, first >= 0) {
			return false, nil
		}
		if first < 0 {
			e := reflect.New(st.elem.Type()).Elem()
			e.Set(st.elem)
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
			if !keyMatches(e.Field(st.field.index), st.field.omitEmpty, n.KeyValue) {
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

// keyMatches is keyedElement's test on a typed key field: J of it is
// present and equal to the selector's value (a string or an int64).
func keyMatches(kv reflect.Value, omitEmpty bool, want any) bool {
	if !jPresent(kv, omitEmpty) {
		return false
	}
	switch kv.Kind() {
	case reflect.String:
		s, ok := want.(string)
		return ok && kv.String() == s
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w, ok := want.(int64)
		return ok && kv.Int() == w
	case reflect.Bool:
		w, ok := want.(bool)
		return ok && kv.Bool() == w
	case reflect.Float32, reflect.Float64:
		eq, _ := numbersEqual(kv.Float(), want)
		return eq
	}
	return false
}

// setTyped is set on a typed struct field.
func (m *Mutator) setTyped(p *typedPlan, fv reflect.Value, exists bool, md Metadata) (bool, error) {
	switch p.final {
	case finScalar:
		if exists && fv.Equal(p.dec) {
			return false, nil
		}
		fv.Set(p.dec)
		return true, nil

	case finPtrScalar:
		if exists && fv.Elem().Equal(p.dec.Elem()) {
			return false, nil
		}
		nv := reflect.New(fv.Type().Elem())
		nv.Elem().Set(p.dec.Elem())
		fv.Set(nv)
		return true, nil

	case finComposite:
		if exists {
			j, _, err := toJ(fv, false)
			if err == nil && jsonEqual(j, m.value) {
				return false, nil
			}
		}
		// Each write decodes the value anew, so that no two objects share
		// its maps and slices. The plan decoded it once already, so this
		// does not fail; should it, the request fails naming the mutator.
		fresh, err := fromJ(m.value, fv.Type())
		if err != nil {
			return false, fmt.Errorf("%s: %w", m.id, err)
		}
		fv.Set(fresh)
		return true, nil

	case finFromMeta:
		v := md.Name
		if m.fromMetadata == "namespace" {
			v = md.Namespace
		}
		if exists && fv.String() == v {
			return false, nil
		}
		fv.SetString(v)
		return true, nil

	case finModifySet:
		return m.modifySetTyped(p, fv, exists), nil

	case finImage:
		s := ""
		if exists {
			s = fv.String()
		}
		// Never empty: validation requires one of the parts.
		img := assignImage(s, m.domain, m.imgPath, m.tag)
		if exists && img == s {
			return false, nil
		}
		fv.SetString(img)
		return true, nil
	}
	return false, nil
}

// modifySetTyped is the ModifySet case of set on a []string (of some
// string type), through p.strIndex: linear in the list and the values.
func (m *Mutator) modifySetTyped(p *typedPlan, fv reflect.Value, exists bool) bool {
	et := fv.Type().Elem()
	if !exists {
		if m.prune || len(p.strValues) == 0 {
			return false
		}
		out := reflect.MakeSlice(fv.Type(), 0, len(p.strValues))
		for _, v := range p.strValues {
			out = reflect.Append(out, reflect.ValueOf(v).Convert(et))
		}
		fv.Set(out)
		return true
	}
	if m.prune {
		n := fv.Len()
		out := reflect.MakeSlice(fv.Type(), 0, n)
		removed := false
		for j := 0; j < n; j++ {
			e := fv.Index(j)
			if _, found := p.strIndex[e.String()]; found {
				removed = true
				continue
			}
			out = reflect.Append(out, e)
		}
		if !removed {
			return false
		}
		fv.Set(out)
		return true
	}
	n := fv.Len()
	present := make([]bool, len(p.strValues))
	missing := len(p.strValues)
	for j := 0; j < n && missing > 0; j++ {
		if k, found := p.strIndex[fv.Index(j).String()]; found && !present[k] {
			present[k] = true
			missing--
		}
	}
	if missing == 0 {
		return false
	}
	// One new array for all the values added.
	out := reflect.MakeSlice(fv.Type(), n+missing, n+missing)
	reflect.Copy(out, fv)
	for k, v := range p.strValues {
		if !present[k] {
			out.Index(n).SetString(v)
			n++
		}
	}
	fv.Set(out)
	return true
}
