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
	"unique"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// A pass that changed the object is followed by another, which either
// changes nothing (the object converged) or changes it again. settles
// proves, from what a pass did, that the next one would change nothing,
// so that Mutate need not run it: on a fresh object the mutators change,
// that pass is a whole walk over the object that finds every value
// already written.
//
// The argument. In the next pass mutator i sees the object as this pass
// left it. Compared with what i itself left behind in this pass, only the
// writes of the mutators after i that changed the object differ: those
// before i ran before it in this pass too, and change nothing in the next
// one (by induction over i). A mutator run on its own output changes
// nothing: Assign writes a value only where it is not there (its value
// or the request's name or namespace, the same on every pass),
// AssignMetadata only where nothing is, ModifySet merges only the values
// missing and prunes only those present, and AssignImage's parts are
// validated to read back as themselves (image.go). So when no later
// writer touches anything i reads, i changes nothing in the next pass,
// and when that holds for every i, neither does the pass.
//
// What it cannot prove it leaves to the pass: a mutator with external
// data (a provider need not answer its own answer with itself), labels
// added where a selector may read them, and a write the walker could not
// find again as written (effect.unsure: a typed field that drops a key or
// a merged value).
func settles(candidates []*Mutator, p *pass) bool {
	if p.unsure {
		return false
	}
	for _, i := range p.matched {
		if candidates[i].UsesExternalData() {
			return false
		}
	}
	// Each pair compared costs a few nodes' comparisons; a pass costs a
	// walk per mutator that matched. Past a few pairs per walk, the pass
	// is the cheaper proof: many mutators that all change the object
	// would otherwise cost the square of their number.
	budget := 64 + 4*len(p.matched)
	for _, j := range p.changed {
		w := candidates[j]
		if w.AddsLabel() && anyReadsLabels(candidates) {
			// Matching reads the labels at the start of a pass, so a
			// label added anywhere in the pass may change any match.
			return false
		}
		// Only the mutators that matched can change anything: with the
		// labels as they were (Mutate's target has the object's), the
		// others do not match next time either.
		for _, i := range p.matched {
			if i >= j {
				break
			}
			if budget--; budget < 0 || mayAffect(w.places, candidates[i].readPlaces) {
				return false
			}
		}
	}
	return true
}

// anyReadsLabels reports whether a match of the candidates reads the
// object's labels.
func anyReadsLabels(candidates []*Mutator) bool {
	for _, m := range candidates {
		if m.matcher.ReadsObjectLabels() {
			return true
		}
	}
	return false
}

// place is a node of a location as mayAffect compares it, names interned
// so that comparing two is comparing two pointers: settles compares a few
// nodes of many pairs of mutators per request, and the nodes themselves
// are interfaces holding strings. A mutator makes its places when it is
// built (placesOf).
type place struct {
	// name is an object node's field, or a list node's key field.
	name unique.Handle[string]
	// keyValue is a keyed list node's selector value.
	keyValue any
	kind     placeKind
}

type placeKind uint8

const (
	fieldPlace placeKind = iota // an object's field
	globPlace                   // every element of a list
	keyedPlace                  // the elements of a list with one key value
)

func placesOf(nodes []path.Node) []place {
	out := make([]place, len(nodes))
	for k, n := range nodes {
		switch n := n.(type) {
		case path.Object:
			out[k] = place{name: unique.Make(n.Reference), kind: fieldPlace}
		case path.List:
			out[k] = place{name: unique.Make(n.KeyField), keyValue: n.KeyValue, kind: keyedPlace}
			if n.Glob {
				out[k].kind, out[k].keyValue = globPlace, nil
			}
		}
	}
	return out
}

// readPlacesOf are the places of the location whose contents decide what
// the mutator does. That is the whole location (the value at its end
// included), or only down to its shallowest MustExist pathTest: a writer
// that creates that node makes the mutator write where it did not, and
// one that may affect the shorter path is reported for every longer one
// too (see mayAffect).
func readPlacesOf(places []place, conds []mutationsv1.Condition) []place {
	for d, c := range conds {
		if c == mutationsv1.MustExist {
			return places[:d+1]
		}
	}
	return places
}

// mayAffect reports whether a mutator writing at the location w may
// change what one reading the places r finds (see partAt).
func mayAffect(w, r []place) bool {
	return partAt(w, r) < 0
}

// partAt is the depth at which a mutator writing at the location w and
// one reading the places r part, or -1 where nothing shows that they do.
// A writer changes the subtree at its location and creates the parents
// on its way that are missing: a field, or a list element with the key
// its selector names. The two paths are followed together, node by node:
// different fields, or one key field with different values, are
// different places, and nothing w writes is read by r; a path that runs
// out while the two agree is at or above the other, so the writes and the
// reads meet. Where it cannot tell, it says they meet.
func partAt(w, r []place) int {
	for k := 0; k < len(w) && k < len(r); k++ {
		rn, wn := &r[k], &w[k]
		if rn.kind == fieldPlace {
			if wn.kind == fieldPlace && wn.name != rn.name {
				return k
			}
			continue
		}
		switch {
		case wn.kind == fieldPlace:
			// A list where the other expects an object: the schema
			// check refuses most such pairs; assume they meet.
		case rn.kind == keyedPlace && k+1 < len(w) && w[k+1].kind == fieldPlace && w[k+1].name == rn.name:
			// w writes the field r selects elements by.
			return -1
		case wn.kind == globPlace:
			// w creates no element, and writes in those r reads only
			// where the rest of the paths agree.
		case rn.kind == globPlace || rn.name != wn.name:
			// w may create an element, which r walks into (a glob) or
			// whose other fields w may set to what r selects.
			return -1
		case differentKeys(rn.keyValue, wn.keyValue):
			// w creates or writes in another element than those r
			// selects.
			return k
		}
	}
	return -1
}

// differentKeys reports two key values no element can hold both of: of
// the same type, and not equal. A string and an integer are never equal
// to the walker, but "80" and 80 are close enough not to bet on.
func differentKeys(a, b any) bool {
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		return ok && a != b
	case int64:
		b, ok := b.(int64)
		return ok && a != b
	}
	return false
}
