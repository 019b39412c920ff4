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

// Package btree is a persistent sorted sequence: a B+tree whose changes
// return a new tree and leave the old one as it was, sharing every node off
// the path they change.
//
// It is a package of its own because it knows nothing of mutators: the
// mutation package keeps its run-ordered lists of mutators, and the types
// their locations imply, in it, so that a Builder can go on changing what
// a published System still reads, at O(log n) a change. It sits under
// locationmutator/internal because mutation is its only user, and it is
// not an API forks are meant to build on.
package btree

import (
	"iter"
	"sort"
)

// Tree is an immutable sorted sequence; its zero value is empty. Leaves
// hold at most nodeMax values and inner nodes at most nodeMax children.
// Insert and Remove return a new Tree that shares every node off the one
// path they change, so a change copies O(log n) nodes of at most nodeMax
// entries, and the Tree they were called on stays as it was: a list copied
// whole per change would make applying n changes one by one cost n².
//
// Values that compare equal keep the order they were inserted in; Remove
// finds a value by comparing and then by ==, so it needs no two equal
// values in the tree.
type Tree[T comparable] struct {
	root *node[T]
	n    int
}

// nodeMax is the most values of a leaf and children of an inner node: a
// change copies about nodeMax pointers per level, and a tree of 10,000
// values has three levels.
const nodeMax = 32

// node is a leaf (values) or an inner node (children). last is the
// greatest value below it, which finds the child to descend into.
type node[T comparable] struct {
	values   []T
	children []*node[T]
	last     T
}

// Len is the number of values.
func (t Tree[T]) Len() int { return t.n }

// Insert returns t with v added after every value that compares equal to
// it.
func (t Tree[T]) Insert(v T, cmp func(a, b T) int) Tree[T] {
	if t.root == nil {
		return Tree[T]{root: &node[T]{values: []T{v}, last: v}, n: 1}
	}
	a, b := t.root.insert(v, cmp)
	if b != nil {
		a = &node[T]{children: []*node[T]{a, b}, last: b.last}
	}
	return Tree[T]{root: a, n: t.n + 1}
}

// insert returns n with v added, split in two when it holds too many.
func (n *node[T]) insert(v T, cmp func(a, b T) int) (*node[T], *node[T]) {
	if n.children == nil {
		i := sort.Search(len(n.values), func(j int) bool { return cmp(n.values[j], v) > 0 })
		return splitLeaf(inserted(n.values, i, v))
	}
	// The first child whose values go beyond v takes it, the last one
	// when none does.
	i := sort.Search(len(n.children), func(j int) bool { return cmp(n.children[j].last, v) > 0 })
	i = min(i, len(n.children)-1)
	a, b := n.children[i].insert(v, cmp)
	return splitInner(replaced(n.children, i, 1, a, b))
}

// Remove returns t without v, and whether v was in it.
func (t Tree[T]) Remove(v T, cmp func(a, b T) int) (Tree[T], bool) {
	if t.root == nil {
		return t, false
	}
	root, ok := t.root.remove(v, cmp)
	if !ok {
		return t, false
	}
	for root != nil && len(root.children) == 1 {
		root = root.children[0]
	}
	return Tree[T]{root: root, n: t.n - 1}, true
}

// remove returns n without v (nil when that leaves it empty), merging a
// child that became small with a neighbour they both fit in.
func (n *node[T]) remove(v T, cmp func(a, b T) int) (*node[T], bool) {
	if n.children == nil {
		i := sort.Search(len(n.values), func(j int) bool { return cmp(n.values[j], v) >= 0 })
		if i == len(n.values) || n.values[i] != v {
			return n, false
		}
		if len(n.values) == 1 {
			return nil, true
		}
		return leaf(replacedValues(n.values, i)), true
	}
	i := sort.Search(len(n.children), func(j int) bool { return cmp(n.children[j].last, v) >= 0 })
	if i == len(n.children) {
		return n, false
	}
	c, ok := n.children[i].remove(v, cmp)
	if !ok {
		return n, false
	}
	switch {
	case c == nil:
		if len(n.children) == 1 {
			return nil, true
		}
		return inner(replaced(n.children, i, 1, nil, nil)), true
	case c.size() < nodeMax/4 && i > 0 && n.children[i-1].size()+c.size() <= nodeMax:
		return inner(replaced(n.children, i-1, 2, merged(n.children[i-1], c), nil)), true
	case c.size() < nodeMax/4 && i+1 < len(n.children) && c.size()+n.children[i+1].size() <= nodeMax:
		return inner(replaced(n.children, i, 2, merged(c, n.children[i+1]), nil)), true
	}
	return inner(replaced(n.children, i, 1, c, nil)), true
}

// All yields the values in order.
func (t Tree[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		if t.root != nil {
			t.root.each(yield)
		}
	}
}

// From yields the values in order from the first one for which from is
// true: from must be false for a prefix of the values and true for the
// rest (a "v >= key" of the tree's order), so that From finds the first in
// O(log n).
func (t Tree[T]) From(from func(T) bool) iter.Seq[T] {
	return func(yield func(T) bool) {
		if t.root != nil {
			t.root.ascend(from, yield)
		}
	}
}

// ascend is From below n; it reports whether yield never returned false.
func (n *node[T]) ascend(from func(T) bool, yield func(T) bool) bool {
	if n.children == nil {
		i := sort.Search(len(n.values), func(j int) bool { return from(n.values[j]) })
		for _, v := range n.values[i:] {
			if !yield(v) {
				return false
			}
		}
		return true
	}
	i := sort.Search(len(n.children), func(j int) bool { return from(n.children[j].last) })
	if i == len(n.children) {
		return true
	}
	if !n.children[i].ascend(from, yield) {
		return false
	}
	for _, c := range n.children[i+1:] {
		if !c.each(yield) {
			return false
		}
	}
	return true
}

// each calls yield with n's values in order until it returns false, and
// reports whether it never did.
func (n *node[T]) each(yield func(T) bool) bool {
	if n.children == nil {
		for _, v := range n.values {
			if !yield(v) {
				return false
			}
		}
		return true
	}
	for _, c := range n.children {
		if !c.each(yield) {
			return false
		}
	}
	return true
}

func (n *node[T]) size() int {
	if n.children == nil {
		return len(n.values)
	}
	return len(n.children)
}

func leaf[T comparable](values []T) *node[T] {
	return &node[T]{values: values, last: values[len(values)-1]}
}

func inner[T comparable](children []*node[T]) *node[T] {
	return &node[T]{children: children, last: children[len(children)-1].last}
}

// splitLeaf is one leaf of values, or two when they are more than nodeMax.
func splitLeaf[T comparable](values []T) (*node[T], *node[T]) {
	if len(values) <= nodeMax {
		return leaf(values), nil
	}
	h := len(values) / 2
	return leaf(values[:h:h]), leaf(values[h:])
}

// splitInner is one inner node of children, or two when they are more
// than nodeMax.
func splitInner[T comparable](children []*node[T]) (*node[T], *node[T]) {
	if len(children) <= nodeMax {
		return inner(children), nil
	}
	h := len(children) / 2
	return inner(children[:h:h]), inner(children[h:])
}

// merged is two neighbouring nodes of the same depth as one.
func merged[T comparable](a, b *node[T]) *node[T] {
	if a.children == nil {
		return leaf(append(append(make([]T, 0, len(a.values)+len(b.values)), a.values...), b.values...))
	}
	return inner(append(append(make([]*node[T], 0, len(a.children)+len(b.children)), a.children...), b.children...))
}

// inserted is a new slice: values with v at i.
func inserted[T any](values []T, i int, v T) []T {
	out := make([]T, 0, len(values)+1)
	out = append(out, values[:i]...)
	out = append(out, v)
	return append(out, values[i:]...)
}

// replacedValues is a new slice: values without the one at i.
func replacedValues[T any](values []T, i int) []T {
	out := make([]T, 0, len(values)-1)
	out = append(out, values[:i]...)
	return append(out, values[i+1:]...)
}

// replaced is a new slice: children with the count at i replaced by a and
// b, those that are not nil.
func replaced[T comparable](children []*node[T], i, count int, a, b *node[T]) []*node[T] {
	out := make([]*node[T], 0, len(children)-count+2)
	out = append(out, children[:i]...)
	for _, c := range []*node[T]{a, b} {
		if c != nil {
			out = append(out, c)
		}
	}
	return append(out, children[i+count:]...)
}
