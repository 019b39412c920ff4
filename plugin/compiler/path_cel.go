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

package compiler

import (
	"fmt"
	"strconv"
	"strings"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// A mutator's location becomes one CEL expression of type list(JSONPatch):
// the patches one run of the mutator makes on the object it is given,
// empty when it changes nothing. It restates the plugin's walker
// (mutation/walk.go) node by node:
//
//   - a field that holds null is missing;
//   - a glob `[k: *]` walks every element, and creates none;
//   - a keyed selector walks every element whose key holds its value, and
//     when there is none, appends `{k: v}` with what the rest of the
//     location writes into it, if it writes anything;
//   - a missing parent is created only when something is written below it;
//   - a pathTest at a depth keeps the walk from going on there.
//
// A JSONPatch "add" must find the parent it adds into. Where the object
// stops at a field, the field is first added empty (see creation) and the
// rest of the location is then written into it, the generator knowing at
// compile time that it holds nothing (emptyValue); an element a keyed
// selector appends is written whole, one value built at compile time
// (createElement). List elements are addressed by the index CEL computes
// (transformList). Values are plain CEL maps and lists, never Object{}
// literals (kubernetes#142181), each member wrapped in dyn() so that a
// literal mixing types type-checks.

// leaf is what a kind of mutator writes at the end of its location.
type leaf interface {
	// write is the patches for the field name of the object o (a CEL
	// expression) at pointer ptr; exists is a CEL boolean saying whether
	// the field holds a value that is not null.
	write(g *pathGen, o, name, exists string, ptr pointer) string
	// create is the value written where nothing is, and false when the
	// mutator writes nothing there.
	create(g *pathGen) (string, bool)
	// writeElement is the patches that make the element of the list l at
	// index first (a CEL integer) the mutator's value, for a location
	// ending in a keyed selector, which only an Assign may have.
	writeElement(g *pathGen, l, first string, ptr pointer) string
}

// pathGen writes the expression for one location.
type pathGen struct {
	nodes []path.Node
	conds []mutationsv1.Condition
	leaf  leaf
	// emit builds one patch: in a policy, a map its mutation makes a
	// JSONPatch of (jsonPatch); in a check that only asks whether there is
	// one, anything countable. phase is the depth of the node for a patch
	// that creates an empty parent (see creation), and 0 for the others.
	emit func(op string, ptr pointer, value string, phase int) string
	// names counts the CEL variables made, so that nested ones differ.
	names int
}

// patch is a patch that writes (every patch but a parent's creation).
func (g *pathGen) patch(op string, ptr pointer, value string) string {
	return g.emit(op, ptr, value, 0)
}

// cond is the pathTest at depth i.
func (g *pathGen) cond(i int) mutationsv1.Condition {
	if g.conds == nil {
		return ""
	}
	return g.conds[i]
}

func (g *pathGen) name(prefix string) string {
	g.names++
	return prefix + strconv.Itoa(g.names)
}

// pointer is a JSON pointer as CEL string expressions to concatenate:
// literal text and computed list indexes.
type pointer []string

// field appends an object member, escaped as RFC 6901 requires.
func (p pointer) field(name string) pointer {
	return p.text("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name))
}

// index appends the list index the CEL integer expression ix holds.
func (p pointer) index(ix string) pointer {
	return append(p.text("/"), "string("+ix+")")
}

func (p pointer) text(s string) pointer {
	out := append(pointer(nil), p...)
	if n := len(out); n > 0 && strings.HasPrefix(out[n-1], `"`) {
		prev, err := strconv.Unquote(out[n-1])
		if err == nil {
			out[n-1] = celString(prev + s)
			return out
		}
	}
	return append(out, celString(s))
}

// String is the CEL expression of the pointer.
func (p pointer) String() string {
	if len(p) == 0 {
		return `""`
	}
	return strings.Join(p, " + ")
}

// expression returns the patches of the whole location, from the object.
func (g *pathGen) expression() string {
	return g.object(0, "object", nil)
}

// exists is the CEL test of a field of o holding a value.
func exists(o, name string) string {
	if o == emptyObject {
		return "false"
	}
	return fmt.Sprintf("(%s in %s && %s != null)", celString(name), o, member(o, name))
}

// The values a creation adds: what the rest of a location is then written
// into, known to hold nothing.
const (
	emptyObject = "{}"
	emptyList   = "[]"
)

// emptyValue is the empty value of the field before node i.
func (g *pathGen) emptyValue(i int) string {
	if _, ok := g.nodes[i].(path.List); ok {
		return emptyList
	}
	return emptyObject
}

// member is the CEL expression of a field of o.
func member(o, name string) string {
	return fmt.Sprintf("%s[%s]", o, celString(name))
}

// choose is `c ? a : b`, short when a branch is empty or c is known.
func choose(c, a, b string) string {
	switch {
	case a == b, c == "true":
		return a
	case c == "false":
		return b
	}
	return fmt.Sprintf("(%s ? %s : %s)", c, a, b)
}

const none = "[]"

// object is the patches of nodes[i:], node i being a field of the object o
// (which exists) at ptr.
func (g *pathGen) object(i int, o string, ptr pointer) string {
	name := g.nodes[i].(path.Object).Reference
	ex := exists(o, name)
	fptr := ptr.field(name)
	var there, missing string
	switch {
	case i == len(g.nodes)-1:
		switch g.cond(i) {
		case mutationsv1.MustExist:
			return choose(ex, g.leaf.write(g, o, name, "true", fptr), none)
		case mutationsv1.MustNotExist:
			return choose(ex, none, g.leaf.write(g, o, name, "false", fptr))
		}
		return g.leaf.write(g, o, name, ex, fptr)
	default:
		there = g.below(i+1, member(o, name), fptr)
		missing = none
		if g.createsMember(i) {
			empty := g.emptyValue(i + 1)
			missing = fmt.Sprintf("[%s] + %s", g.emit("add", fptr, empty, creation(i)), g.below(i+1, empty, fptr))
		}
	}
	switch g.cond(i) {
	case mutationsv1.MustExist:
		missing = none
	case mutationsv1.MustNotExist:
		there = none
	}
	return choose(ex, there, missing)
}

// below is the patches of nodes[i:] inside v, the existing value of the
// field before node i.
func (g *pathGen) below(i int, v string, ptr pointer) string {
	if l, ok := g.nodes[i].(path.List); ok {
		return g.list(i, l, v, ptr)
	}
	return g.object(i, v, ptr)
}

// createBelow is the value of the field before node i when it is missing,
// and false when nothing would be written into it.
func (g *pathGen) createBelow(i int) (string, bool) {
	if l, ok := g.nodes[i].(path.List); ok {
		e, ok := g.createElement(i, l)
		if !ok {
			return "", false
		}
		return "[" + e + "]", true
	}
	return g.createField(i)
}

// creation is the phase of the patch that adds the field of node i empty:
// its depth, counted from 1. Patches computed from one object for several
// mutators (batches) are applied creations first, shallowest first, so
// that a field two of them create is added empty once, or twice before
// anything is written into it, and never replaces what either wrote.
func creation(i int) int { return i + 1 }

// createsMember reports whether a walk may create the field of node i,
// missing in the object it is given: whether anything would be written
// below it.
func (g pathGen) createsMember(i int) bool {
	if _, ok := g.nodes[i].(path.Object); !ok {
		return false
	}
	_, ok := g.createMember(i)
	return ok
}

// createsElement reports whether a walk may append an element at node i,
// a keyed selector finding none.
func (g pathGen) createsElement(i int) bool {
	l, ok := g.nodes[i].(path.List)
	if !ok {
		return false
	}
	_, ok = g.createElement(i, l)
	return ok
}

// createField is `{name: value}` for node i, a field of an object that is
// being created.
func (g *pathGen) createField(i int) (string, bool) {
	m, ok := g.createMember(i)
	return "{" + m + "}", ok
}

// createMember is the `name: value` member of createField.
func (g *pathGen) createMember(i int) (string, bool) {
	if g.cond(i) == mutationsv1.MustExist {
		return "", false
	}
	name := g.nodes[i].(path.Object).Reference
	var v string
	var ok bool
	if i == len(g.nodes)-1 {
		v, ok = g.leaf.create(g)
	} else {
		v, ok = g.createBelow(i + 1)
	}
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%s: dyn(%s)", celString(name), v), true
}

// createElement is the element a keyed selector at node i appends: its key,
// and what the rest of the location writes into it. A glob appends none.
func (g *pathGen) createElement(i int, l path.List) (string, bool) {
	if l.Glob || g.cond(i) == mutationsv1.MustExist {
		return "", false
	}
	if i == len(g.nodes)-1 {
		return g.leaf.create(g)
	}
	rest, ok := g.createMember(i + 1)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("{%s: dyn(%s), %s}", celString(l.KeyField), celLiteral(l.KeyValue), rest), true
}

// list is the patches of nodes[i:], node i selecting elements of the list
// l (which exists) at ptr.
func (g *pathGen) list(i int, sel path.List, l string, ptr pointer) string {
	ix, el := g.name("i"), g.name("e")
	last := i == len(g.nodes)-1
	if sel.Glob {
		if last || g.cond(i) == mutationsv1.MustNotExist || l == emptyList {
			return none
		}
		return fmt.Sprintf("%s.transformList(%s, %s, %s).flatten()", l, ix, el, g.object(i+1, el, ptr.index(ix)))
	}
	keyed := fmt.Sprintf("(%s in %s && %s == %s)", celString(sel.KeyField), el, member(el, sel.KeyField), celLiteral(sel.KeyValue))
	missing := none
	if g.cond(i) != mutationsv1.MustExist {
		if v, ok := g.createElement(i, sel); ok {
			missing = "[" + g.patch("add", ptr.text("/-"), v) + "]"
		}
	}
	switch {
	case l == emptyList:
		return missing
	case g.cond(i) == mutationsv1.MustNotExist:
		return choose(fmt.Sprintf("%s.exists(%s, %s)", l, el, keyed), none, missing)
	}
	// The list is walked once: what each element with the key gives, and
	// the element appended when there is none.
	m := g.name("m")
	if last {
		write := g.leaf.writeElement(g, l, m+"[0]", ptr)
		if write == none && missing == none {
			return none
		}
		return bind(m, fmt.Sprintf("%s.transformList(%s, %s, %s, %s)", l, ix, el, keyed, ix), fmt.Sprintf("(size(%s) == 0 ? %s : %s)", m, missing, write))
	}
	each := fmt.Sprintf("%s.transformList(%s, %s, %s, %s)", l, ix, el, keyed, g.object(i+1, el, ptr.index(ix)))
	if missing == none {
		return each + ".flatten()"
	}
	return bind(m, each, fmt.Sprintf("(size(%s) == 0 ? %s : %s.flatten())", m, missing, m))
}
