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
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
)

// modifySetOp is a ModifySet's operation: a list treated as a set of values,
// into which values are merged or from which they are pruned.
type modifySetOp struct {
	prune  bool
	values *valueSet
}

func (modifySetOp) endType() impliedType { return impliedType{kind: "set"} }

func (o modifySetOp) summary(where string) string {
	all := o.values.values
	shown := all[:min(len(all), maxEffectValues)]
	parts := make([]string, len(shown), len(shown)+1)
	for i, v := range shown {
		parts[i] = jsonShort(v)
	}
	if hidden := len(all) - len(shown); hidden > 0 {
		parts = append(parts, fmt.Sprintf("%d more", hidden))
	}
	if o.prune {
		return fmt.Sprintf("remove %s from the list at %s", strings.Join(parts, ", "), where)
	}
	return fmt.Sprintf("add %s to the list at %s", strings.Join(parts, ", "), where)
}

func (o modifySetOp) write(m *Mutator, s slot, exists bool, _ requestMeta) (effect, error) {
	if !exists && (o.prune || len(o.values.values) == 0) {
		return effect{}, nil
	}
	l, ok := s.list()
	if !ok {
		return effect{}, m.fail(fmt.Errorf("%s is %s, not a list of values, so it cannot be treated as a set", m.location.String(), s.typeName()))
	}
	if o.prune {
		return o.values.prune(l), nil
	}
	e, err := o.values.merge(l)
	if err != nil {
		return e, m.fail(err)
	}
	return e, nil
}

// newModifySet validates a ModifySet and returns its mutator. Its key field
// may be the last node (`[name: x].name` as a set is odd but converges), as
// in Gatekeeper.
func newModifySet(s *mutationsv1.ModifySet) (*Mutator, field.ErrorList) {
	m, errs := newMutator(mutationsv1.KindModifySet, s.Name, s.Spec.Location, endRule{listEnd: "must end in a field holding the list, not in a list selector"})
	m.generation = s.Generation
	var op modifySetOp
	switch s.Spec.Parameters.Operation {
	case "", mutationsv1.OperationMerge:
	case mutationsv1.OperationPrune:
		op.prune = true
	default:
		errs = append(errs, field.NotSupported(field.NewPath("spec", "parameters", "operation"), s.Spec.Parameters.Operation, []string{mutationsv1.OperationMerge, mutationsv1.OperationPrune}))
	}
	values := make([]any, 0, len(s.Spec.Parameters.Values.FromList))
	for _, v := range s.Spec.Parameters.Values.FromList {
		values = append(values, v.Value)
	}
	op.values = newValueSet(values)
	m.op = op
	return m.finish(s.Spec.ApplyTo, s.Spec.Parameters.PathTests, s.Spec.Match, errs)
}
