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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
)

// ErrTypedUnsupported is wrapped by MutateTyped's error when it cannot run
// the candidates on the typed object exactly as Mutate would on the
// object's unstructured form. Nothing has been changed when it is returned:
// the caller converts the object and uses Mutate.
var ErrTypedUnsupported = errors.New("not supported on the typed object")

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrTypedUnsupported, fmt.Sprintf(format, args...))
}

// MutateTyped is Mutate on a typed object (a pointer to a versioned API
// struct), changed in place by reflection guided by its json tags, so that
// a Pod need not be converted to an unstructured map and back on every
// request. It gives the same result, errors and final object as converting
// it with runtime.DefaultUnstructuredConverter, running Mutate and decoding
// it back; typed_test.go checks that with differential tests and a fuzz
// target.
//
// So everything that could make the two differ is refused when a mutator
// is planned for a Go type (typed_plan.go), never half-way through a walk:
// a path that does not fit the type (the map walker would fail, or write
// something the decoder drops or rejects); inline structs or interface
// fields on the way; types with an unstructured form of their own on the
// way (IntOrString, Time, RawExtension; a Quantity only as the value of a
// map entry); omitzero; a value that does not decode into the field and
// come back as itself; parents or new list elements whose zero value would
// not read as an empty object; Assign of a whole list element; and
// ModifySet on anything but a []string. MutateTyped then returns an error
// wrapping ErrTypedUnsupported before changing anything, and the caller
// converts the object and uses Mutate.
func MutateTyped(candidates []*Mutator, obj runtime.Object, t *match.Target) (Result, error) {
	ptr := reflect.ValueOf(obj)
	if ptr.Kind() != reflect.Pointer || ptr.IsNil() {
		return Result{}, unsupported("the object is a %T", obj)
	}
	accessor, ok := obj.(metav1.Object)
	if !ok {
		return Result{}, unsupported("%T has no ObjectMeta", obj)
	}
	objType := ptr.Type().Elem()
	md := Metadata{Namespace: t.Namespace, Name: t.Name}
	plans := make([]*typedPlan, len(candidates))
	for i, m := range candidates {
		p := m.planFor(objType)
		if p.err != nil {
			return Result{}, p.err
		}
		if p.write == writeFromMetadata && p.lastOmitEmpty && m.metadataValue(md) == "" {
			// An empty name or namespace written into an omitempty field
			// is present in the map but missing from the unstructured form.
			return Result{}, unsupported("%s writes an empty %s into an omitempty field", m.id, m.fromMetadata)
		}
		plans[i] = p
	}
	if err := checkPrunes(candidates, plans); err != nil {
		return Result{}, err
	}
	if err := checkNewElementObjects(candidates, plans); err != nil {
		return Result{}, err
	}
	return run(candidates, &typedObject{root: ptr.Elem(), obj: obj, accessor: accessor, plans: plans}, t)
}

// metadataValue is what m's fromMetadata reads.
func (m *Mutator) metadataValue(md Metadata) string {
	if m.fromMetadata == "namespace" {
		return md.Namespace
	}
	return md.Name
}

// checkPrunes refuses a prune next to another mutator ending at the same
// field: a prune that empties an omitempty list leaves [] in the map but
// nothing in the unstructured form, which only a mutator reading that very
// field could tell.
func checkPrunes(candidates []*Mutator, plans []*typedPlan) error {
	for i, p := range plans {
		if p.write != writeModifySet || !candidates[i].prune {
			continue
		}
		for j, q := range plans {
			if j != i && q.lastField == p.lastField {
				return unsupported("%s prunes a field %s also ends at", candidates[i].id, candidates[j].id)
			}
		}
	}
	return nil
}

// checkNewElementObjects refuses a set in which the {} a new list element
// has (see typedPlan.newElementObjects) could be seen: the map walker's
// element lacks it, so a pathTest at that field, a mutator ending there,
// or a whole value compared (writeComposite) would tell the two apart.
// Walking through it is fine: the map walker creates the {} where the
// typed walker finds it.
func checkNewElementObjects(candidates []*Mutator, plans []*typedPlan) error {
	var objects []structField
	for _, p := range plans {
		objects = append(objects, p.newElementObjects...)
	}
	if len(objects) == 0 {
		return nil
	}
	for j, q := range plans {
		m := candidates[j]
		// A map entry's value (a Quantity) is never one of those {}.
		if q.write == writeComposite && q.steps[len(q.steps)-1].kind != stepMapEntry {
			return unsupported("%s compares a whole value where new list elements are made", m.id)
		}
		for d, step := range q.steps {
			if step.kind != stepField || (d != len(q.steps)-1 && (m.conds == nil || m.conds[d] == "")) {
				continue
			}
			for _, o := range objects {
				if step.structType == o.structType && step.field.index == o.index {
					return unsupported("%s looks at %s, which a new list element has as {} and the map walker's lacks", m.id, prefixString(m.location, d))
				}
			}
		}
	}
	return nil
}

// typedObject is a typed object under mutation, for run.
type typedObject struct {
	root     reflect.Value // the struct obj points to
	obj      runtime.Object
	accessor metav1.Object
	plans    []*typedPlan // one per candidate
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
