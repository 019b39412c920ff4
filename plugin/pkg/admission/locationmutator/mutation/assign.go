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

	"k8s.io/apimachinery/pkg/util/validation/field"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// assignment is what Assign and AssignMetadata write: a literal value, or
// the object's name or namespace.
type assignment struct {
	value        any
	fromMetadata string // "namespace", "name", or "" for value
	external     *externalRef
}

// compileAssignField validates parameters.assign. listElement says the
// location ends in a list selector, where only a literal value can go.
func compileAssignField(f mutationsv1.AssignField, p *field.Path, listElement bool, errs field.ErrorList) (assignment, field.ErrorList) {
	var a assignment
	set := 0
	for _, isSet := range []bool{f.Value != nil, f.FromMetadata != nil, f.ExternalData != nil} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return a, append(errs, field.Invalid(p, "", "exactly one of value, fromMetadata or externalData must be set"))
	}
	switch {
	case f.ExternalData != nil:
		a.external, errs = compileExternalData(f.ExternalData, p.Child("externalData"), listElement, errs)
	case f.FromMetadata != nil:
		if f.FromMetadata.Field != "namespace" && f.FromMetadata.Field != "name" {
			errs = append(errs, field.NotSupported(p.Child("fromMetadata", "field"), f.FromMetadata.Field, []string{"namespace", "name"}))
		}
		if listElement {
			errs = append(errs, field.Invalid(p.Child("fromMetadata"), f.FromMetadata.Field, "cannot assign a string to a list element"))
		}
		a.fromMetadata = f.FromMetadata.Field
	default:
		a.value = f.Value.Value
	}
	return a, errs
}

// valueFor is what the assignment writes into an object with that
// metadata.
func (a assignment) valueFor(md requestMeta) any {
	switch a.fromMetadata {
	case "namespace":
		return md.namespace()
	case "name":
		return md.name()
	}
	return a.value
}

// write sets the value unless it is there already. A null value is never
// written where nothing is.
func (a assignment) write(m *Mutator, s slot, exists bool, md requestMeta) (effect, error) {
	if a.external != nil {
		return a.external.write(m, s, exists, md)
	}
	v := a.valueFor(md)
	if (exists && s.holds(v)) || (!exists && v == nil) {
		return effect{}, nil
	}
	e, err := s.set(v)
	if err != nil {
		return e, m.fail(err)
	}
	return e, nil
}

func (a assignment) summary(where string) string {
	if a.external != nil {
		return a.external.summary(where)
	}
	if a.fromMetadata != "" {
		return fmt.Sprintf("set %s to the object's %s", where, a.fromMetadata)
	}
	return fmt.Sprintf("set %s to %s", where, jsonShort(a.value))
}

// assignOp is an Assign's operation: any value, anywhere but metadata,
// including a whole keyed list element.
type assignOp struct{ assignment }

// endType: an Assign implies nothing about the value it writes.
func (assignOp) endType() impliedType { return impliedType{} }

// writeElement replaces the element at j with the assigned object, or
// appends it when j is -1. Validation allows only a literal object value
// with the selector's key here.
func (a assignOp) writeElement(m *Mutator, l list, j int) (effect, error) {
	if j >= 0 && jsonEqual(l.elemValue(j), a.value) {
		return effect{}, nil
	}
	e, err := l.setElement(j, a.value)
	if err != nil {
		return e, m.fail(err)
	}
	return e, nil
}

// newAssign validates an Assign and returns its mutator.
func newAssign(a *mutationsv1.Assign) (*Mutator, field.ErrorList) {
	m, errs := newMutator(mutationsv1.KindAssign, a.Name, a.Spec.Location, endRule{keepKey: true})
	m.generation = a.Generation
	vp := field.NewPath("spec", "parameters", "assign")
	var op assignOp
	op.assignment, errs = compileAssignField(a.Spec.Parameters.Assign, vp, m.endsInList(), errs)
	if m.endsInList() && a.Spec.Parameters.Assign.Value != nil {
		errs = m.checkElementValue(op.value, vp.Child("value"), errs)
	}
	m.op = op
	return m.finish(a.Spec.ApplyTo, a.Spec.Parameters.PathTests, a.Spec.Match, errs)
}

// checkElementValue requires a whole list element to be an object carrying
// the key value its selector names, compared by type and value once numbers
// are normalised (80 and 80.0 are the same key, "80" is another): an
// element with another key would be selected by nothing on the next pass.
func (m *Mutator) checkElementValue(value any, p *field.Path, errs field.ErrorList) field.ErrorList {
	l := lastNode(m.location).(path.List)
	if l.Glob {
		return errs // already refused by newMutator
	}
	obj, ok := value.(map[string]any)
	switch {
	case !ok:
		return append(errs, field.Invalid(p, value, "a list element must be assigned an object"))
	case !jsonEqual(obj[l.KeyField], l.KeyValue):
		return append(errs, field.Invalid(p, value, fmt.Sprintf("the element must carry %s: %v, as the location selects", path.Quote(l.KeyField), l.KeyValue)))
	}
	return errs
}
