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
)

// What each kind of mutator writes at the end of its location, in CEL. Each
// writes only where the value is not already the one it would write, as
// the plugin's kinds do (mutation/assign.go, modify_set.go,
// assign_image.go), so that a run on its own output changes nothing.

// assignLeaf is an Assign's or AssignMetadata's value: a literal, or the
// object's name or namespace.
type assignLeaf struct {
	value string // a CEL expression
	null  bool   // the literal null
}

func (a assignLeaf) write(g *pathGen, o, name, exists string, ptr pointer) string {
	if a.null {
		// null where a value is: the typed object drops the field, as it
		// drops a null (only built-in kinds compile).
		return choose(exists, "["+g.patch("remove", ptr, "")+"]", none)
	}
	add := "[" + g.patch("add", ptr, a.value) + "]"
	switch exists {
	case "false":
		return add
	case "true":
		return fmt.Sprintf("(%s == %s ? [] : %s)", member(o, name), a.value, add)
	}
	return fmt.Sprintf("((%s && %s == %s) ? [] : %s)", exists, member(o, name), a.value, add)
}

func (a assignLeaf) create(*pathGen) (string, bool) { return a.value, !a.null }

func (a assignLeaf) writeElement(g *pathGen, l, first string, ptr pointer) string {
	j := g.name("j")
	return bind(j, first, fmt.Sprintf("(%s[%s] == %s ? [] : [%s])", l, j, a.value, g.patch("replace", ptr.index(j), a.value)))
}

// setLeaf is a ModifySet's values, distinct, merged into or pruned from the
// list.
type setLeaf struct {
	values string // a CEL list literal
	empty  bool
	prune  bool
}

func (s setLeaf) write(g *pathGen, o, name, exists string, ptr pointer) string {
	cur, v := member(o, name), g.name("v")
	if s.prune {
		if s.empty || exists == "false" {
			return none
		}
		return fmt.Sprintf("((%s && %s.exists(%s, %s in %s)) ? [%s] : [])", exists, cur, v, v, s.values,
			g.patch("add", ptr, fmt.Sprintf("%s.filter(%s, !(%s in %s))", cur, v, v, s.values)))
	}
	if s.empty {
		return none
	}
	add := g.name("add")
	return choose(exists,
		bind(add, fmt.Sprintf("%s.filter(%s, !(%s in %s))", s.values, v, v, cur), fmt.Sprintf("(size(%s) == 0 ? [] : [%s])", add, g.patch("add", ptr, cur+" + "+add))),
		"["+g.patch("add", ptr, s.values)+"]")
}

func (s setLeaf) create(*pathGen) (string, bool) { return s.values, !s.prune && !s.empty }

func (setLeaf) writeElement(*pathGen, string, string, pointer) string { return none }

// imageLeaf is an AssignImage's parts ("" for a part kept).
type imageLeaf struct {
	domain, path, tag string
}

func (im imageLeaf) write(g *pathGen, o, name, exists string, ptr pointer) string {
	if exists == "false" {
		v, _ := im.create(g)
		return "[" + g.patch("add", ptr, v) + "]"
	}
	n := g.name("img")
	cur := fmt.Sprintf("(%s ? %s : %q)", exists, member(o, name), "")
	return bind(n, im.image(g, cur), fmt.Sprintf("((%s && %s == %s) ? [] : [%s])", exists, n, member(o, name), g.patch("add", ptr, n)))
}

func (im imageLeaf) create(g *pathGen) (string, bool) { return im.image(g, `""`), true }

func (imageLeaf) writeElement(*pathGen, string, string, pointer) string { return none }

// image is the CEL expression of the image cur (a CEL string) with the
// assigned parts. It reads cur as the plugin does (mutation/image.go): the
// domain is the part before the first `/` when that part has a `.` or a
// `:` or is localhost; the tag starts at the first `:` or `@` after it.
func (im imageLeaf) image(g *pathGen, cur string) string {
	r, s, d, rest, c, a, t := g.name("r"), g.name("s"), g.name("d"), g.name("rest"), g.name("c"), g.name("a"), g.name("t")
	first := fmt.Sprintf("%s.substring(0, %s)", r, s)
	domain, path, tag := d, fmt.Sprintf("(%s < 0 ? %s : %s.substring(0, %s))", t, rest, rest, t), fmt.Sprintf("(%s < 0 ? \"\" : %s.substring(%s))", t, rest, t)
	if im.domain != "" {
		domain = celString(im.domain)
	}
	if im.path != "" {
		path = celString(im.path)
	}
	if im.tag != "" {
		tag = celString(im.tag)
	}
	var compose string
	if im.domain != "" {
		compose = fmt.Sprintf("%s + \"/\" + %s + %s", domain, path, tag)
	} else {
		compose = fmt.Sprintf("(%s == \"\" ? %s + %s : %s + \"/\" + %s + %s)", domain, path, tag, domain, path, tag)
	}
	return bind(r, "string("+cur+")",
		bind(s, r+`.indexOf("/")`,
			bind(d, fmt.Sprintf(`((%s >= 0 && (%s.contains(".") || %s.contains(":") || %s == "localhost")) ? %s : "")`, s, first, first, first, first),
				bind(rest, fmt.Sprintf(`(%s == "" ? %s : %s.substring(%s + 1))`, d, r, r, s),
					bind(c, rest+`.indexOf(":")`,
						bind(a, rest+`.indexOf("@")`,
							bind(t, fmt.Sprintf("(%s < 0 ? %s : ((%s >= 0 && %s < %s) ? %s : %s))", c, a, a, a, c, a, c), compose)))))))
}

// bind is body with name bound to value: CEL's cel.bind, which
// kube-apiserver's environment lacks, as a one-element map.
func bind(name, value, body string) string {
	return fmt.Sprintf("[%s].map(%s, %s)[0]", value, name, body)
}
