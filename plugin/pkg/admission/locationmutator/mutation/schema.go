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
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// impliedType is what a mutator's location says one value is. Each
// mutator with an applyTo implies a schema for the kinds it binds to:
// every value along its location is an object, a list keyed by some field,
// or (at the end) a set, a string or anything. Two mutators that imply
// different types for the same value, in the same binding, cannot both be
// right, and running both could keep the object from converging.
type impliedType struct {
	kind string // "object", "list", "set", "string"; "" for anything
	key  string // key field of a list
}

func (t impliedType) String() string {
	switch t.kind {
	case "list":
		return "a list keyed by " + path.Quote(t.key)
	case "":
		return "any value"
	case "object":
		return "an object"
	default:
		return "a " + t.kind
	}
}

// schemaSlot is one value along a mutator's location and the type the
// mutator implies for it. key names the value the same way for every
// mutator (globs and key values share the element), so two slots are the
// same value exactly when their keys are equal.
type schemaSlot struct {
	key string
	t   impliedType
}

// schemaSlots lays out the types m implies, shallowest first; values that
// may hold anything are left out, since they conflict with nothing.
func (m *Mutator) schemaSlots() []schemaSlot {
	if m.bindings == nil {
		return nil
	}
	// Every slot's key is a prefix of the last one's: build that once and
	// share it.
	var (
		key  strings.Builder
		ends = make([]int, len(m.nodes))
	)
	for i, n := range m.nodes {
		switch n := n.(type) {
		case path.Object:
			if i > 0 {
				key.WriteByte('.')
			}
			key.WriteString(path.Quote(n.Reference))
		case path.List:
			key.WriteString("[" + path.Quote(n.KeyField) + "]")
		}
		ends[i] = key.Len()
	}
	full := key.String()
	var out []schemaSlot
	for i := range m.nodes {
		t := m.op.endType()
		if i+1 < len(m.nodes) {
			switch next := m.nodes[i+1].(type) {
			case path.Object:
				t = impliedType{kind: "object"}
			case path.List:
				t = impliedType{kind: "list", key: next.KeyField}
			}
		}
		if t.kind != "" {
			out = append(out, schemaSlot{key: full[:ends[i]], t: t})
		}
	}
	return out
}

// Conflict is two mutators that cannot run together, because they share a
// kind and name or imply different types for the same value.
type Conflict struct {
	// Mutators are the two, the first in run order first.
	Mutators [2]ID
	// Reason names both mutators and, for a schema conflict, the value,
	// the binding and the two types.
	Reason string
}

// String is the reason.
func (c Conflict) String() string { return c.Reason }

// Other returns the member of the pair that is not id.
func (c Conflict) Other(id ID) ID {
	if c.Mutators[0] == id {
		return c.Mutators[1]
	}
	return c.Mutators[0]
}

func duplicateConflict(a, b ID) Conflict {
	return Conflict{Mutators: [2]ID{a, b}, Reason: fmt.Sprintf("%s %q: metadata.name: Duplicate value: %q", b.Kind, b.Name, b.Name)}
}

// conflictBetween reports whether a and b imply different types for the
// same value in a binding they share, and names the shallowest such value
// and the first such binding of the mutator that runs first.
func conflictBetween(a, b *Mutator) (Conflict, bool) {
	if b.id.less(a.id) {
		a, b = b, a
	}
	for _, sa := range a.slots {
		i := slices.IndexFunc(b.slots, func(sb schemaSlot) bool { return sb.key == sa.key })
		if i < 0 || b.slots[i].t == sa.t {
			continue
		}
		for _, bind := range a.bindings {
			if !slices.Contains(b.bindings, bind) {
				continue
			}
			return Conflict{
				Mutators: [2]ID{a.id, b.id},
				Reason: fmt.Sprintf("%s %q and %s %q conflict: for %s %s, %s is used as %s by the first and as %s by the second",
					a.id.Kind, a.id.Name, b.id.Kind, b.id.Name,
					bindingString(bind), bind.Operation, sa.key, sa.t, b.slots[i].t),
			}, true
		}
	}
	return Conflict{}, false
}

// SchemaIndex finds the mutators a mutator's schema conflicts with without
// comparing it to every other one: it indexes each mutator by the values
// its location implies a type for, so a lookup costs what the mutators
// that disagree on one of those values cost. It is not safe for concurrent
// use.
type SchemaIndex struct {
	// uses holds, per slot key and implied type, the mutators that imply
	// it.
	uses map[string]map[impliedType]map[*Mutator]struct{}
}

// NewSchemaIndex returns an empty index.
func NewSchemaIndex() *SchemaIndex {
	return &SchemaIndex{uses: map[string]map[impliedType]map[*Mutator]struct{}{}}
}

// Conflicts returns the schema conflicts of m with the mutators in the
// index (m itself and any mutator of its kind and name aside), sorted by
// reason.
func (x *SchemaIndex) Conflicts(m *Mutator) []Conflict {
	var (
		out  []Conflict
		seen map[*Mutator]bool
	)
	for _, s := range m.slots {
		for t, ms := range x.uses[s.key] {
			if t == s.t {
				continue
			}
			for o := range ms {
				if o.id == m.id || seen[o] {
					continue
				}
				if seen == nil {
					seen = map[*Mutator]bool{}
				}
				seen[o] = true
				if c, ok := conflictBetween(m, o); ok {
					out = append(out, c)
				}
			}
		}
	}
	sortConflicts(out)
	return out
}

// Add indexes m.
func (x *SchemaIndex) Add(m *Mutator) {
	for _, s := range m.slots {
		byType := x.uses[s.key]
		if byType == nil {
			byType = map[impliedType]map[*Mutator]struct{}{}
			x.uses[s.key] = byType
		}
		ms := byType[s.t]
		if ms == nil {
			ms = map[*Mutator]struct{}{}
			byType[s.t] = ms
		}
		ms[m] = struct{}{}
	}
}

// Remove forgets m.
func (x *SchemaIndex) Remove(m *Mutator) {
	for _, s := range m.slots {
		byType := x.uses[s.key]
		delete(byType[s.t], m)
		if len(byType[s.t]) == 0 {
			delete(byType, s.t)
		}
		if len(byType) == 0 {
			delete(x.uses, s.key)
		}
	}
}

func sortConflicts(cs []Conflict) {
	slices.SortStableFunc(cs, func(a, b Conflict) int { return cmp.Compare(a.Reason, b.Reason) })
}

// FindConflicts returns every pair of ms that cannot run together, each
// once, sorted by reason: mutators of the same kind and name, and schema
// conflicts.
func FindConflicts(ms []*Mutator) []Conflict {
	sorted := slices.Clone(ms)
	slices.SortStableFunc(sorted, runOrder)
	var out []Conflict
	for i := 1; i < len(sorted); i++ {
		if sorted[i].id == sorted[i-1].id {
			out = append(out, duplicateConflict(sorted[i-1].id, sorted[i].id))
		}
	}
	x := NewSchemaIndex()
	for _, m := range sorted {
		for _, c := range x.Conflicts(m) {
			if c.Mutators[0] != c.Mutators[1] {
				out = append(out, c)
			}
		}
		x.Add(m)
	}
	sortConflicts(out)
	return out
}

func bindingString(b binding) string {
	if b.GVK.Group == "" {
		return b.GVK.Version + "/" + b.GVK.Kind
	}
	return b.GVK.Group + "/" + b.GVK.Version + "/" + b.GVK.Kind
}
