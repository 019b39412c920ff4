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
	"k8s.io/apimachinery/pkg/util/validation/field"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// assignMetadataOp is an AssignMetadata's operation: a string added as a
// label or an annotation of any kind of object, never replacing one.
type assignMetadataOp struct{ assignment }

// endType: labels and annotations are never part of a conflict, since an
// AssignMetadata applies to every kind and has no applyTo.
func (assignMetadataOp) endType() impliedType { return impliedType{} }

// newAssignMetadata validates an AssignMetadata and returns its mutator.
func newAssignMetadata(a *mutationsv1.AssignMetadata) (*Mutator, field.ErrorList) {
	m := &Mutator{id: ID{Kind: mutationsv1.KindAssignMetadata, Name: a.Name}, generation: a.Generation}
	errs := validateName(a.Name, nil)
	m.location, errs = parseLocation(a.Spec.Location, errs)
	m.nodes = m.location.Nodes
	if len(m.nodes) > 0 && !isMetadataKey(m.location) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "location"), a.Spec.Location, "must be metadata.labels.<key> or metadata.annotations.<key>"))
	}
	vp := field.NewPath("spec", "parameters", "assign")
	var op assignMetadataOp
	op.assignment, errs = compileAssignField(a.Spec.Parameters.Assign, vp, false, errs)
	if a.Spec.Parameters.Assign.Value != nil {
		if _, ok := op.value.(string); !ok {
			errs = append(errs, field.Invalid(vp.Child("value"), op.value, "labels and annotations are strings"))
		}
	}
	if e := a.Spec.Parameters.Assign.ExternalData; e != nil && e.DataSource != DataSourceUsername {
		// As in Gatekeeper: a label or annotation that does not exist yet
		// has no value to send.
		errs = append(errs, field.NotSupported(vp.Child("externalData", "dataSource"), e.DataSource, []string{DataSourceUsername}))
	}
	m.op = op
	// Add-only: an existing label or annotation is never replaced, which is
	// also what makes metadata mutators converge.
	m.conds = []mutationsv1.Condition{"", "", mutationsv1.MustNotExist}
	return m.finishMatch(a.Spec.Match, errs)
}

// addsLabel: an AssignMetadata adds a label when its location is one.
func (assignMetadataOp) addsLabel(m *Mutator) bool {
	if len(m.nodes) < 2 {
		return false
	}
	o, ok := m.nodes[1].(path.Object)
	return ok && o.Reference == "labels"
}

func isMetadataKey(p path.Path) bool {
	if len(p.Nodes) != 3 {
		return false
	}
	for i, n := range p.Nodes {
		o, ok := n.(path.Object)
		if !ok {
			return false
		}
		switch i {
		case 0:
			if o.Reference != "metadata" {
				return false
			}
		case 1:
			if o.Reference != "labels" && o.Reference != "annotations" {
				return false
			}
		}
	}
	return true
}
