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

package btree

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkTree fails unless t holds exactly want, in order, with every node
// within its bounds and every last right.
func checkTree(t *testing.T, tr Tree[int], want []int) {
	t.Helper()
	if got := slices.Collect(tr.All()); !slices.Equal(got, want) {
		t.Fatalf("tree holds %v, want %v", got, want)
	}
	if tr.Len() != len(want) {
		t.Fatalf("Len %d, want %d", tr.Len(), len(want))
	}
	var walk func(n *node[int], depth int) int
	leafDepth := -1
	walk = func(n *node[int], depth int) int {
		if n.size() == 0 || n.size() > nodeMax {
			t.Fatalf("a node of %d entries", n.size())
		}
		if n.children == nil {
			if leafDepth >= 0 && depth != leafDepth {
				t.Fatalf("leaves at depths %d and %d", leafDepth, depth)
			}
			leafDepth = depth
			if n.last != n.values[len(n.values)-1] {
				t.Fatalf("leaf last %d, want %d", n.last, n.values[len(n.values)-1])
			}
			return n.last
		}
		var last int
		for _, c := range n.children {
			last = walk(c, depth+1)
		}
		if n.last != last {
			t.Fatalf("inner last %d, want %d", n.last, last)
		}
		return last
	}
	if tr.root != nil {
		walk(tr.root, 0)
	}
}

// TestTree changes a tree at random, each step checked against a sorted
// slice, and checks that every tree taken along the way still holds what it
// held then.
func TestTree(t *testing.T) {
	for _, size := range []int{10, 100, 3000} {
		rng := rand.New(rand.NewPCG(1, uint64(size)))
		var (
			tr        Tree[int]
			want      []int
			snapshots []Tree[int]
			held      [][]int
		)
		for step := 0; step < 4*size; step++ {
			// Grow to about size values, then churn.
			if len(want) > 0 && (len(want) >= size || rng.IntN(3) == 0) {
				v := want[rng.IntN(len(want))]
				var ok bool
				if tr, ok = tr.Remove(v, cmp.Compare[int]); !ok {
					t.Fatalf("%d not removed", v)
				}
				i, _ := slices.BinarySearch(want, v)
				want = slices.Delete(want, i, i+1)
			} else {
				v := rng.IntN(10 * size)
				if _, found := slices.BinarySearch(want, v); found {
					continue
				}
				tr = tr.Insert(v, cmp.Compare[int])
				i, _ := slices.BinarySearch(want, v)
				want = slices.Insert(want, i, v)
			}
			checkTree(t, tr, want)
			if step%(size/10+1) == 0 {
				snapshots = append(snapshots, tr)
				held = append(held, slices.Clone(want))
			}
		}
		if _, ok := tr.Remove(-1, cmp.Compare[int]); ok {
			t.Fatal("removed a value that is not there")
		}
		for i, s := range snapshots {
			checkTree(t, s, held[i])
		}
		for len(want) > 0 {
			tr, _ = tr.Remove(want[0], cmp.Compare[int])
			want = want[1:]
			checkTree(t, tr, want)
		}
		if tr.root != nil {
			t.Fatal("an empty tree keeps a root")
		}
	}
}

func TestTreeAscend(t *testing.T) {
	var tr Tree[int]
	var all []int
	for v := 0; v < 2000; v += 2 {
		tr = tr.Insert(v, cmp.Compare[int])
		all = append(all, v)
	}
	for _, from := range []int{-5, 0, 1, 777, 1998, 1999, 5000} {
		for _, limit := range []int{1, 10, 100, 10000} {
			var got []int
			for v := range tr.From(func(v int) bool { return v >= from }) {
				got = append(got, v)
				if len(got) == limit {
					break
				}
			}
			i, _ := slices.BinarySearch(all, from)
			want := all[i:min(len(all), i+limit)]
			if !slices.Equal(got, want) {
				t.Errorf("from %d, limit %d: got %v, want %v", from, limit, got, want)
			}
		}
	}
}

// All stops where its caller does, at any depth of the tree.
func TestTreeAllStops(t *testing.T) {
	var tr Tree[int]
	for v := range 2000 {
		tr = tr.Insert(v, cmp.Compare[int])
	}
	for _, limit := range []int{1, 31, 32, 33, 1024, 1999} {
		var got []int
		for v := range tr.All() {
			got = append(got, v)
			if len(got) == limit {
				break
			}
		}
		if len(got) != limit || got[limit-1] != limit-1 {
			t.Errorf("break after %d: got %d values, ending in %d", limit, len(got), got[len(got)-1])
		}
	}
}

// Equal values keep the order they were put in.
func TestTreeEqualValues(t *testing.T) {
	type pair struct{ key, seq int }
	byKey := func(a, b pair) int { return cmp.Compare(a.key, b.key) }
	var tr Tree[pair]
	for seq := range 200 {
		tr = tr.Insert(pair{seq % 3, seq}, byKey)
	}
	got := slices.Collect(tr.All())
	if !slices.IsSortedFunc(got, func(a, b pair) int {
		if c := byKey(a, b); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	}) {
		t.Fatalf("equal values out of insertion order: %v", got)
	}
}

// FuzzTree reads ops as inserts (even bytes) and removals (odd bytes) of
// small values, checking the tree against a sorted slice after each and
// every earlier tree at the end.
func FuzzTree(f *testing.F) {
	f.Add([]byte{0, 2, 4, 6, 3, 5, 1})
	seed := make([]byte, 600)
	for i := range seed {
		seed[i] = byte(i*37) &^ 1
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, ops []byte) {
		var (
			tr        Tree[int]
			want      []int
			snapshots []Tree[int]
			held      [][]int
		)
		for _, op := range ops {
			v := int(op >> 1)
			i, found := slices.BinarySearch(want, v)
			if op&1 == 0 {
				if found {
					continue
				}
				tr = tr.Insert(v, cmp.Compare[int])
				want = slices.Insert(want, i, v)
			} else {
				var removed bool
				tr, removed = tr.Remove(v, cmp.Compare[int])
				if removed != found {
					t.Fatalf("remove %d: %v, want %v", v, removed, found)
				}
				if found {
					want = slices.Delete(want, i, i+1)
				}
			}
			checkTree(t, tr, want)
			snapshots = append(snapshots, tr)
			held = append(held, slices.Clone(want))
		}
		for i, s := range snapshots {
			checkTree(t, s, held[i])
		}
	})
}
