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
	"k8s.io/apimachinery/pkg/runtime/schema"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// The accessors below give the parsed forms of a mutator to a compiler that
// restates it in another language (plugin/compiler), so that there is one
// parser of locations, pathTests and parameters.

// Binding is one group/version/kind and operation a mutator's applyTo
// names.
type Binding struct {
	GVK       schema.GroupVersionKind
	Operation string
}

// Bindings returns what spec.applyTo names, one entry per group, version,
// kind and operation; nil for an AssignMetadata, which applies to every
// kind its match selects.
func (m *Mutator) Bindings() []Binding {
	if m.bindings == nil {
		return nil
	}
	out := make([]Binding, len(m.bindings))
	for i, b := range m.bindings {
		out[i] = Binding(b)
	}
	return out
}

// PathTests returns the condition the mutator puts on each node of its
// location, by depth ("" for none), or nil when there is none. An
// AssignMetadata's is MustNotExist on its key: it never replaces a label
// or an annotation.
func (m *Mutator) PathTests() []mutationsv1.Condition { return m.conds }

// Assignment is what an Assign or AssignMetadata writes.
type Assignment struct {
	// Value is the literal value, as decoded from JSON; meaningful when
	// FromMetadata is "" and External is false.
	Value any
	// FromMetadata is "name" or "namespace" when the value is the
	// object's, "" otherwise.
	FromMetadata string
	// External is whether the value comes from an external data provider.
	External bool
}

// Assignment returns what an Assign or AssignMetadata writes; false for the
// other kinds.
func (m *Mutator) Assignment() (Assignment, bool) {
	var a assignment
	switch op := m.op.(type) {
	case assignOp:
		a = op.assignment
	case assignMetadataOp:
		a = op.assignment
	default:
		return Assignment{}, false
	}
	return Assignment{Value: a.value, FromMetadata: a.fromMetadata, External: a.external != nil}, true
}

// SetValues returns a ModifySet's values, each distinct value once in the
// order it first appears, and whether it prunes them (else merges them);
// exact is false when some value is equal to nothing, not even itself,
// as the merge compares values. ok is false for the other kinds.
func (m *Mutator) SetValues() (values []any, prune, exact, ok bool) {
	op, ok := m.op.(modifySetOp)
	if !ok {
		return nil, false, false, false
	}
	exact = true
	seen := make([]bool, op.values.members)
	for i, v := range op.values.values {
		k := op.values.member[i]
		switch {
		case k < 0:
			exact = false
		case seen[k]:
			continue
		default:
			seen[k] = true
		}
		values = append(values, v)
	}
	return values, op.prune, exact, true
}

// ImageParts returns the parts an AssignImage assigns ("" for a part it
// leaves as it is); ok is false for the other kinds.
func (m *Mutator) ImageParts() (domain, path, tag string, ok bool) {
	op, ok := m.op.(assignImageOp)
	return op.parts.domain, op.parts.path, op.parts.tag, ok
}

// MayAffect reports whether writer, run after reader in a pass, may change
// what reader finds on the next pass (see settles): the pairwise half of
// the proof that a pass converges.
func MayAffect(writer, reader *Mutator) bool {
	return mayAffect(writer.places, reader.readPlaces)
}

// WritesPartAt is the depth of the first node at which the locations of a
// and b part, each read as the other's writer (partAt), so that neither
// writes in the subtree the other writes or reads; false where they may
// meet. Above that depth the two locations agree, and what either writes
// there (a parent it creates) is the other's business too.
func WritesPartAt(a, b *Mutator) (int, bool) {
	k := partAt(a.places, b.places)
	if k < 0 || partAt(b.places, a.places) < 0 {
		return 0, false
	}
	return k, true
}

// MayMeet reports whether the order between m and something that writes
// at the locations writes and reads at the locations reads may matter: m
// may change what is read there, or what is written there may change what
// m reads. It judges as the convergence proof judges two mutators
// (mayAffect), and says they meet where it cannot tell.
func MayMeet(m *Mutator, writes, reads []path.Path) bool {
	for _, w := range writes {
		if mayAffect(placesOf(w.Nodes), m.readPlaces) {
			return true
		}
	}
	for _, r := range reads {
		if mayAffect(m.places, placesOf(r.Nodes)) {
			return true
		}
	}
	return false
}
