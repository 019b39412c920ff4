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

package main

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"
)

// The mutants of functions of every result shape type-check, and return
// before the body runs.
func TestMutantsBuild(t *testing.T) {
	const src = `package p

import "strings"

type T struct{ n int }

func (t *T) Admit(s string) error { return nil }

func Parse(s string) (out []string, err error) { return strings.Fields(s), nil }

func merge[E any](a, b []E) ([]E, map[string]E) { return append(a, b...), nil }

func touch(t *T) { t.n++ }
`
	for _, c := range []struct {
		recv, name string
		mutants    int
	}{{"T", "Admit", 2}, {"", "Parse", 2}, {"", "merge", 1}, {"", "touch", 1}} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "p.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		var fn *ast.FuncDecl
		for _, d := range f.Decls {
			if d, ok := d.(*ast.FuncDecl); ok && d.Name.Name == c.name && receiverName(d) == c.recv {
				fn = d
			}
		}
		if fn == nil {
			t.Fatalf("%s not found", c.name)
		}
		ms := mutate(entryPoint{dir: "p", recv: c.recv, name: c.name}, "p.go", []byte(src), fset, fn)
		if len(ms) != c.mutants {
			t.Fatalf("%s: %d mutants, want %d", c.name, len(ms), c.mutants)
		}
		for _, m := range ms {
			mset := token.NewFileSet()
			mf, err := parser.ParseFile(mset, "p.go", m.src, 0)
			if err != nil {
				t.Fatalf("%s: %v\n%s", m.name, err, m.src)
			}
			if _, err := (&types.Config{Importer: importer.Default()}).Check("p", mset, []*ast.File{mf}, nil); err != nil {
				t.Fatalf("%s does not type-check: %v\n%s", m.name, err, m.src)
			}
			body := string(m.src[fset.Position(fn.Body.Lbrace).Offset+1:])
			first, _, _ := strings.Cut(body, "\n}\n")
			if !strings.HasPrefix(first, "\n{\n") || !strings.Contains(first, "return") {
				t.Fatalf("%s: the body does not open with a return:\n%s", m.name, m.src)
			}
		}
	}
}
