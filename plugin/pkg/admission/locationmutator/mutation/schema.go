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
	"sort"
	"strings"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// Each mutator with an applyTo implies a schema for the kinds it binds to:
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

func (m *Mutator) terminalType() impliedType {
	switch m.id.Kind {
	case mutationsv1.KindModifySet:
		return impliedType{kind: "set"}
	case mutationsv1.KindAssignImage:
		// A string, and nothing may be written below it.
		return impliedType{kind: "string"}
	}
	return impliedType{}
}

type schemaUse struct {
	m *Mutator
	t impliedType
}

// checkSchemas returns one error per pair of conflicting mutators, naming
// both, the location and the first binding where they disagree.
func checkSchemas(ms []*Mutator) []error {
	type slot struct {
		b   Binding
		loc string
	}
	uses := map[slot][]schemaUse{}
	var order []slot
	for _, m := range ms {
		if m.bindings == nil {
			continue
		}
		var key strings.Builder
		for i, n := range m.nodes {
			switch n := n.(type) {
			case path.Object:
				if i > 0 {
					key.WriteByte('.')
				}
				key.WriteString(path.Quote(n.Reference))
			case path.List:
				// Globs and key values share the element schema.
				key.WriteString("[" + path.Quote(n.KeyField) + "]")
			}
			t := m.terminalType()
			if i+1 < len(m.nodes) {
				switch next := m.nodes[i+1].(type) {
				case path.Object:
					t = impliedType{kind: "object"}
				case path.List:
					t = impliedType{kind: "list", key: next.KeyField}
				}
			}
			if t.kind == "" {
				continue
			}
			for _, b := range m.bindings {
				s := slot{b: b, loc: key.String()}
				if _, ok := uses[s]; !ok {
					order = append(order, s)
				}
				uses[s] = append(uses[s], schemaUse{m: m, t: t})
			}
		}
	}
	type pair struct{ a, b ID }
	seen := map[pair]bool{}
	var errs []error
	for _, s := range order {
		for _, ij := range differingPairs(uses[s]) {
			a, b := uses[s][ij[0]], uses[s][ij[1]]
			if a.m == b.m {
				continue
			}
			if b.m.id.less(a.m.id) {
				a, b = b, a
			}
			p := pair{a.m.id, b.m.id}
			if seen[p] {
				continue
			}
			seen[p] = true
			errs = append(errs, &ConflictError{
				Mutators: [2]ID{a.m.id, b.m.id},
				msg: fmt.Sprintf("%s %q and %s %q conflict: for %s %s, %s is used as %s by the first and as %s by the second",
					a.m.id.Kind, a.m.id.Name, b.m.id.Kind, b.m.id.Name,
					bindingString(s.b), s.b.Operation, s.loc, a.t, b.t),
			})
		}
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

// differingPairs returns the index pairs i < j of the uses whose types
// differ, ordered by i then j. Uses are grouped by type first, so that many
// mutators agreeing on a slot cost time linear in their number, not in the
// number of pairs.
func differingPairs(us []schemaUse) [][2]int {
	var types []impliedType
	byType := map[impliedType][]int{}
	for i, u := range us {
		if _, ok := byType[u.t]; !ok {
			types = append(types, u.t)
		}
		byType[u.t] = append(byType[u.t], i)
	}
	if len(types) < 2 {
		return nil
	}
	var pairs [][2]int
	for ti := range types {
		for _, tj := range types[ti+1:] {
			for _, i := range byType[types[ti]] {
				for _, j := range byType[tj] {
					pairs = append(pairs, [2]int{min(i, j), max(i, j)})
				}
			}
		}
	}
	slices.SortFunc(pairs, func(x, y [2]int) int {
		if c := cmp.Compare(x[0], y[0]); c != 0 {
			return c
		}
		return cmp.Compare(x[1], y[1])
	})
	return pairs
}

func bindingString(b Binding) string {
	if b.GVK.Group == "" {
		return b.GVK.Version + "/" + b.GVK.Kind
	}
	return b.GVK.Group + "/" + b.GVK.Version + "/" + b.GVK.Kind
}
