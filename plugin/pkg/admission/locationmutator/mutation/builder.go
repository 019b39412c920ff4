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
	"slices"
)

// Builder holds a changing set of mutators and makes immutable Systems of
// it. A System shares nothing the Builder changes later, so it can be
// published while the next one is built; making one after a change
// redoes only the candidate lists of the bindings that change touched.
// Conflicts are not its concern (see SchemaIndex): it runs what it is
// given. It is not safe for concurrent use.
type Builder struct {
	byID map[ID]*Mutator
	// bound holds, per binding, the mutators that name it, and anyKind
	// those without applyTo, in run order.
	bound   map[Binding][]*Mutator
	anyKind []*Mutator
	// namespaceSelectors counts the mutators with a namespaceSelector.
	namespaceSelectors int
	// unenforced counts the mutators in Warn or Audit mode.
	unenforced int

	// merged are the candidate lists of the last System, reused for every
	// binding not in dirty (all of them when anyDirty).
	merged   map[Binding][]*Mutator
	dirty    map[Binding]bool
	anyDirty bool
	last     *System
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{
		byID:   map[ID]*Mutator{},
		bound:  map[Binding][]*Mutator{},
		merged: map[Binding][]*Mutator{},
		dirty:  map[Binding]bool{},
	}
}

// Len is the number of mutators.
func (b *Builder) Len() int { return len(b.byID) }

// Has reports whether a mutator of that kind and name is in.
func (b *Builder) Has(id ID) bool { _, ok := b.byID[id]; return ok }

// Add puts m in, replacing the mutator of its kind and name if there is
// one.
func (b *Builder) Add(m *Mutator) {
	b.Remove(m.id)
	b.byID[m.id] = m
	if m.matcher.NeedsNamespaceLabels() {
		b.namespaceSelectors++
	}
	if !m.Enforced() {
		b.unenforced++
	}
	if m.bindings == nil {
		b.anyKind = insertRunOrder(b.anyKind, m)
		b.anyDirty = true
	}
	for _, bind := range m.bindings {
		b.bound[bind] = insertRunOrder(b.bound[bind], m)
		b.dirty[bind] = true
	}
	b.last = nil
}

// Remove takes out the mutator of that kind and name, if any.
func (b *Builder) Remove(id ID) {
	m, ok := b.byID[id]
	if !ok {
		return
	}
	delete(b.byID, id)
	if m.matcher.NeedsNamespaceLabels() {
		b.namespaceSelectors--
	}
	if !m.Enforced() {
		b.unenforced--
	}
	if m.bindings == nil {
		b.anyKind = deleteRunOrder(b.anyKind, m)
		b.anyDirty = true
	}
	for _, bind := range m.bindings {
		list := deleteRunOrder(b.bound[bind], m)
		if len(list) == 0 {
			delete(b.bound, bind)
		} else {
			b.bound[bind] = list
		}
		b.dirty[bind] = true
	}
	b.last = nil
}

// System returns a System running the mutators in now.
func (b *Builder) System() *System {
	if b.last != nil {
		return b.last
	}
	if b.anyDirty {
		for bind := range b.bound {
			b.dirty[bind] = true
		}
		for bind := range b.merged {
			b.dirty[bind] = true
		}
	}
	for bind := range b.dirty {
		list, ok := b.bound[bind]
		if !ok {
			delete(b.merged, bind)
			continue
		}
		b.merged[bind] = mergeRunOrder(list, b.anyKind)
	}
	clear(b.dirty)
	b.anyDirty = false
	s := &System{
		n:               len(b.byID),
		byBinding:       make(map[Binding][]*Mutator, len(b.merged)),
		anyKind:         slices.Clone(b.anyKind),
		needsNamespaces: b.namespaceSelectors > 0,
		unenforced:      b.unenforced > 0,
	}
	for bind, list := range b.merged {
		s.byBinding[bind] = list
	}
	b.last = s
	return s
}

// mergeRunOrder merges two lists in run order into a new one.
func mergeRunOrder(a, b []*Mutator) []*Mutator {
	out := make([]*Mutator, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if runOrder(b[0], a[0]) < 0 {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	out = append(out, a...)
	return append(out, b...)
}

// insertRunOrder inserts m into a list in run order. No two mutators of a
// Builder share a kind and name, so the place is unique.
func insertRunOrder(list []*Mutator, m *Mutator) []*Mutator {
	i, _ := slices.BinarySearchFunc(list, m, runOrder)
	return slices.Insert(list, i, m)
}

// deleteRunOrder takes m out of a list in run order.
func deleteRunOrder(list []*Mutator, m *Mutator) []*Mutator {
	if i, found := slices.BinarySearchFunc(list, m, runOrder); found && list[i] == m {
		return slices.Delete(list, i, i+1)
	}
	return list
}
