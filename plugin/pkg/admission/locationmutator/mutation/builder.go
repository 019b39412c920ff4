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
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/internal/btree"
)

// Builder holds a changing set of mutators and makes immutable Systems of
// it. Its lists are trees: a change copies one path of each tree it
// touches and leaves the nodes a published System holds as they are, so a
// change costs O(log n) per binding of the changed mutator, and making a
// System after it costs O(bindings): a System shares every candidate list
// a change did not touch with the one before it, and merges the others
// only when a request first asks for them (see candidates). Conflicts are
// not its concern (see SchemaIndex): it runs what it is given. It is not
// safe for concurrent use.
type Builder struct {
	byID map[ID]*Mutator
	// bound holds, per binding, the mutators that name it, and anyKind
	// those without applyTo, in run order.
	bound   map[binding]btree.Tree[*Mutator]
	anyKind btree.Tree[*Mutator]
	// namespaceSelectors counts the mutators with a namespaceSelector.
	namespaceSelectors int
	// implied counts, per slot key, the mutators that imply each type
	// there; types holds the types each key has, and changes only when
	// those do (see System.ConflictsWith).
	implied map[string]map[impliedType]int
	types   btree.Tree[*keyTypes]
	// unenforced counts the mutators in Warn or Audit mode.
	unenforced int

	// last is the System of the mutators now, once made; previous is the
	// last one made, whose unchanged candidate lists the next one takes.
	last, previous *System
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{
		byID:    map[ID]*Mutator{},
		bound:   map[binding]btree.Tree[*Mutator]{},
		implied: map[string]map[impliedType]int{},
	}
}

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
		b.anyKind = b.anyKind.Insert(m, runOrder)
	}
	for _, bind := range m.bindings {
		b.bound[bind] = b.bound[bind].Insert(m, runOrder)
	}
	for _, slot := range m.slots {
		counts := b.implied[slot.key]
		if counts == nil {
			counts = map[impliedType]int{}
			b.implied[slot.key] = counts
		}
		if counts[slot.t]++; counts[slot.t] == 1 {
			b.retype(slot.key, counts)
		}
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
		b.anyKind, _ = b.anyKind.Remove(m, runOrder)
	}
	for _, bind := range m.bindings {
		list, _ := b.bound[bind].Remove(m, runOrder)
		if list.Len() == 0 {
			delete(b.bound, bind)
		} else {
			b.bound[bind] = list
		}
	}
	for _, slot := range m.slots {
		counts := b.implied[slot.key]
		if counts[slot.t]--; counts[slot.t] == 0 {
			delete(counts, slot.t)
			if len(counts) == 0 {
				delete(b.implied, slot.key)
			}
			b.retype(slot.key, counts)
		}
	}
	b.last = nil
}

// keyTypes are the types the mutators imply for one slot key.
type keyTypes struct {
	key   string
	types []impliedType
}

func byKey(a, b *keyTypes) int { return strings.Compare(a.key, b.key) }

// typesOf finds key's entry in types, sorted byKey.
func typesOf(types btree.Tree[*keyTypes], key string) (*keyTypes, bool) {
	for kt := range types.From(func(kt *keyTypes) bool { return kt.key >= key }) {
		return kt, kt.key == key
	}
	return nil, false
}

// retype sets the types of key in b.types to those counts holds.
func (b *Builder) retype(key string, counts map[impliedType]int) {
	if old, ok := typesOf(b.types, key); ok {
		b.types, _ = b.types.Remove(old, byKey)
	}
	if len(counts) > 0 {
		b.types = b.types.Insert(&keyTypes{key: key, types: slices.Collect(maps.Keys(counts))}, byKey)
	}
}

// System returns a System running the mutators in now. It costs a map
// entry per binding and a candidates value per changed list; no list is
// copied or merged here.
func (b *Builder) System() *System {
	if b.last != nil {
		return b.last
	}
	s := &System{
		n:               len(b.byID),
		types:           b.types,
		byKind:          make(map[string][]kindLists, len(b.bound)),
		needsNamespaces: b.namespaceSelectors > 0,
		unenforced:      b.unenforced > 0,
	}
	// A list is the one of the System before when its trees are: a tree
	// that changed has a new root.
	prev := b.previous
	if prev != nil && prev.anyKind.anyKind == b.anyKind {
		s.anyKind = prev.anyKind
	} else {
		s.anyKind = &candidates{anyKind: b.anyKind}
	}
	for bind, bound := range b.bound {
		var c *candidates
		if prev != nil {
			c = prev.list(bind.GVK, bind.Operation)
		}
		if c == nil || c.bound != bound || c.anyKind != b.anyKind {
			c = &candidates{bound: bound, anyKind: b.anyKind}
		}
		s.setList(bind, c)
	}
	b.last, b.previous = s, s
	return s
}

// setList sets the candidates of a binding in a System being made.
func (s *System) setList(bind binding, c *candidates) {
	kinds := s.byKind[bind.GVK.Kind]
	i := slices.IndexFunc(kinds, func(k kindLists) bool { return k.gvk == bind.GVK })
	if i < 0 {
		i = len(kinds)
		kinds = append(kinds, kindLists{gvk: bind.GVK})
		s.byKind[bind.GVK.Kind] = kinds
	}
	kinds[i].lists[operationIndex(bind.Operation)] = c
}

// candidates is one candidate list of a System: the mutators bound to a
// binding merged with the kind-independent ones, in run order. The System
// holds the trees, which never change; the list is merged from them the
// first time a request asks for it, and kept, so a publish merges nothing
// and a request pays at most one merge per list and System (none for the
// lists a change left alone, which the next System shares).
type candidates struct {
	bound, anyKind btree.Tree[*Mutator]

	// once sets list.
	once sync.Once
	list []*Mutator
}

// get returns the list, merging it on the first call; after that it is
// sync.Once's fast path, an atomic load, inlined.
func (c *candidates) get() []*Mutator {
	c.once.Do(c.merge)
	return c.list
}

func (c *candidates) merge() {
	switch {
	case c.anyKind.Len() == 0:
		c.list = slices.AppendSeq(make([]*Mutator, 0, c.bound.Len()), c.bound.All())
	case c.bound.Len() == 0:
		c.list = slices.AppendSeq(make([]*Mutator, 0, c.anyKind.Len()), c.anyKind.All())
	default:
		c.list = mergeRunOrder(slices.Collect(c.bound.All()), slices.Collect(c.anyKind.All()))
	}
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
