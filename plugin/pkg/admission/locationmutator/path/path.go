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

package path

import (
	"strconv"
	"strings"
)

// Node is one step of a Path: an Object or a List.
type Node interface {
	// isNode keeps the set of node types closed to this package.
	isNode()
}

// Object selects the field Reference of a map.
type Object struct {
	Reference string
}

// List selects elements of a list of maps by the value of one key field:
// every element when Glob is set, otherwise those whose KeyField equals
// KeyValue, which is a string or an int64 (the grammar keeps them apart:
// `[port: 80]` is an integer, `[port: "80"]` a string).
type List struct {
	KeyField string
	KeyValue any
	Glob     bool
}

func (Object) isNode() {}
func (List) isNode()   {}

// Path is a parsed location: the nodes from the root of the object down.
// The zero Path (no nodes) is what an empty string parses to.
type Path struct {
	Nodes []Node
}

// Equal reports whether p and o select the same locations. Quoting is gone
// after parsing, so `a[name: "b"]` equals `a[name: b]`.
func (p Path) Equal(o Path) bool {
	return len(p.Nodes) == len(o.Nodes) && HasPrefix(p, o)
}

// HasPrefix reports whether prefix is a node-wise prefix of p (a path is a
// prefix of itself). A glob only equals a glob on the same key field.
func HasPrefix(p, prefix Path) bool {
	if len(prefix.Nodes) > len(p.Nodes) {
		return false
	}
	for i, n := range prefix.Nodes {
		if n != p.Nodes[i] {
			return false
		}
	}
	return true
}

// String prints p canonically: names that are not bare identifiers are
// double-quoted, list selectors read `[key: value]`. Parse(p.String())
// gives p back for every p that Parse returned.
func (p Path) String() string {
	var b strings.Builder
	for i, n := range p.Nodes {
		switch n := n.(type) {
		case Object:
			if i > 0 {
				b.WriteByte('.')
			}
			writeName(&b, n.Reference)
		case List:
			b.WriteByte('[')
			writeName(&b, n.KeyField)
			b.WriteString(": ")
			switch {
			case n.Glob:
				b.WriteByte('*')
			default:
				switch v := n.KeyValue.(type) {
				case int64:
					b.WriteString(strconv.FormatInt(v, 10))
				case string:
					writeName(&b, v)
				}
			}
			b.WriteByte(']')
		}
	}
	return b.String()
}

// Quote returns s as the printer writes a name: bare when every character is
// an identifier character and it does not start with a digit, quoted
// otherwise.
func Quote(s string) string {
	var b strings.Builder
	writeName(&b, s)
	return b.String()
}

func needsQuotes(s string) bool {
	if s == "" || isDigit(rune(s[0])) {
		return true
	}
	for i := 0; i < len(s); i++ {
		// Bytes, not runes: any non-ASCII byte is outside the bare set,
		// which is exactly what makes non-ASCII names round-trip.
		if !isIdentChar(rune(s[i])) {
			return true
		}
	}
	return false
}

func writeName(b *strings.Builder, s string) {
	if !needsQuotes(s) {
		b.WriteString(s)
		return
	}
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
}
