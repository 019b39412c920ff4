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

package apiserver_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copies maps each file of this package that copies upstream declarations
// to the file of k8s.io/kubernetes's cmd/kube-apiserver/app it copies from.
var copies = map[string]string{
	"app_config.go":     "config.go",
	"app_server.go":     "server.go",
	"app_aggregator.go": "aggregator.go",
}

// Markers that allow a line to differ from upstream: the lines a fork adds
// (the README's diff), and this build's own.
var markers = []string{"// admitkit", "// test build"}

// TestUpstreamCopiesDrift keeps every declaration in the copied files equal
// to the declaration of the same name in the k8s.io/kubernetes version
// test/go.mod requires, except for marked lines. How the two compare:
//
//   - Both files are parsed with go/parser; each top-level declaration is
//     keyed by name (methods by receiver type and name) and taken from its
//     first to its last token, doc comment excluded.
//   - Each source line of a declaration becomes the Go tokens on it,
//     without comments or the semicolons the scanner inserts at line ends:
//     whitespace, gofmt's alignment and comments never count, anything else
//     on a line does. Empty lines are dropped.
//   - The two line lists are diffed (longest common subsequence). A line
//     only in our copy must carry a marker; an upstream line missing from
//     our copy is allowed only where marked lines replace it. A marked line
//     never matches an upstream line, so a marker cannot hide a copied one.
//
// A declaration of ours that upstream lacks fails too, so a copy cannot
// outlive upstream's removal of it.
func TestUpstreamCopiesDrift(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("locating k8s.io/kubernetes in the module cache: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("k8s.io/kubernetes has no directory in the module cache: run go mod download k8s.io/kubernetes")
	}
	for ours, theirs := range copies {
		t.Run(ours, func(t *testing.T) {
			oursSrc, err := os.ReadFile(ours)
			if err != nil {
				t.Fatal(err)
			}
			theirsPath := filepath.Join(dir, "cmd", "kube-apiserver", "app", theirs)
			theirsSrc, err := os.ReadFile(theirsPath)
			if err != nil {
				t.Fatal(err)
			}
			for _, problem := range compareCopies(ours, oursSrc, theirsPath, theirsSrc) {
				t.Error(problem)
			}
		})
	}
}

// compareCopies returns what differs between the declarations of ours and
// the same declarations in theirs, beyond what the markers allow.
func compareCopies(oursName string, ours []byte, theirsName string, theirs []byte) []string {
	oursDecls, err := declarationLines(oursName, ours)
	if err != nil {
		return []string{err.Error()}
	}
	theirsDecls, err := declarationLines(theirsName, theirs)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, name := range oursDecls.order {
		upstream, ok := theirsDecls.lines[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %s is not in %s any more", oursName, name, theirsName))
			continue
		}
		for _, p := range diffLines(upstream, oursDecls.lines[name]) {
			problems = append(problems, fmt.Sprintf("%s: %s: %s", oursName, name, p))
		}
	}
	return problems
}

// line is one source line reduced to its tokens.
type line struct {
	number int
	tokens string
	marked bool
}

type declarations struct {
	order []string
	lines map[string][]line
}

func declarationLines(name string, src []byte) (declarations, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return declarations{}, err
	}
	tokens, marked := tokenLines(fset, name, src)
	decls := declarations{lines: map[string][]line{}}
	add := func(key string, from, to token.Pos) {
		var lines []line
		for n := fset.Position(from).Line; n <= fset.Position(to).Line; n++ {
			if tokens[n] == "" {
				continue
			}
			lines = append(lines, line{number: n, tokens: tokens[n], marked: marked[n]})
		}
		decls.order = append(decls.order, key)
		decls.lines[key] = lines
	}
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			key := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				key = receiverName(d.Recv.List[0].Type) + "." + key
			}
			add(key, d.Pos(), d.End())
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					add(s.Name.Name, s.Pos(), s.End())
				case *ast.ValueSpec:
					add(s.Names[0].Name, s.Pos(), s.End())
				}
			}
		}
	}
	return decls, nil
}

func receiverName(expr ast.Expr) string {
	if star, ok := expr.(*ast.StarExpr); ok {
		return "*" + receiverName(star.X)
	}
	if ident, ok := expr.(*ast.Ident); ok {
		return ident.Name
	}
	return fmt.Sprintf("%T", expr)
}

// tokenLines returns each line's tokens, space-separated, and which lines
// carry a marker comment.
func tokenLines(fset *token.FileSet, name string, src []byte) (map[int]string, map[int]bool) {
	var s scanner.Scanner
	file := fset.AddFile(name+"#tokens", -1, len(src))
	s.Init(file, src, nil, scanner.ScanComments)
	words := map[int][]string{}
	marked := map[int]bool{}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		n := file.Line(pos)
		switch {
		case tok == token.COMMENT:
			for _, m := range markers {
				if strings.HasPrefix(lit, m) {
					marked[n] = true
				}
			}
		case tok == token.SEMICOLON && lit == "\n":
		case lit != "":
			words[n] = append(words[n], lit)
		default:
			words[n] = append(words[n], tok.String())
		}
	}
	lines := map[int]string{}
	for n, w := range words {
		lines[n] = strings.Join(w, " ")
	}
	return lines, marked
}

// diffLines compares upstream's lines of a declaration with ours.
func diffLines(upstream, ours []line) []string {
	key := func(l line) string {
		if l.marked {
			return "\x00marked\x00" + l.tokens
		}
		return l.tokens
	}
	// lcs[i][j]: the longest common subsequence of upstream[i:] and ours[j:].
	lcs := make([][]int, len(upstream)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(ours)+1)
	}
	for i := len(upstream) - 1; i >= 0; i-- {
		for j := len(ours) - 1; j >= 0; j-- {
			if key(upstream[i]) == key(ours[j]) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var problems []string
	// A hunk is a run of lines between two common ones; its upstream lines
	// may go only if marked lines of ours take their place.
	var removed []line
	added := 0
	flush := func() {
		if len(removed) > 0 && added == 0 {
			for _, l := range removed {
				problems = append(problems, fmt.Sprintf("upstream line %d is missing here: %s", l.number, l.tokens))
			}
		}
		removed, added = nil, 0
	}
	i, j := 0, 0
	for i < len(upstream) || j < len(ours) {
		switch {
		case i < len(upstream) && j < len(ours) && key(upstream[i]) == key(ours[j]):
			flush()
			i, j = i+1, j+1
		case j < len(ours) && (i == len(upstream) || lcs[i][j+1] >= lcs[i+1][j]):
			if ours[j].marked {
				added++
			} else {
				problems = append(problems, fmt.Sprintf("line %d is not upstream's and has no marker (%s): %s", ours[j].number, strings.Join(markers, ", "), ours[j].tokens))
			}
			j++
		default:
			removed = append(removed, upstream[i])
			i++
		}
	}
	flush()
	return problems
}

// TestCompareCopies proves that the drift test fails when either side
// drifts, and passes only what the markers allow.
func TestCompareCopies(t *testing.T) {
	const upstream = `package app

func NewConfig(opts Options) (*Config, error) {
	c := &Config{Options: opts}
	generic, err := build(opts,
		defaults(),
		definitions,
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

var priorities = map[string]int{
	"":     18000,
	"apps": 17800,
}
`
	for _, tc := range []struct {
		name  string
		ours  string
		fails []string // substrings of the expected problems, in order
	}{
		{name: "identical", ours: upstream},
		{
			name: "comments, blank lines and alignment do not count",
			ours: strings.NewReplacer("\tif err", "\n\t// built\n\tif err", `"":     18000`, `"": 18000`).Replace(upstream),
		},
		{
			name: "marked lines added and replacing upstream's",
			ours: strings.NewReplacer(
				"\t\tdefaults(),\n", "\t\twrap(defaults()), // admitkit\n",
				"\treturn c, nil\n", "\tc.Extra = extra(generic) // admitkit\n\tif identity != \"\" { // test build\n\t} // test build\n\treturn c, nil\n",
				"\t\"apps\": 17800,\n", "\t\"apps\": 17800,\n\t\"settings.k8s.io\": 15600, // admitkit\n",
			).Replace(upstream),
		},
		{
			name:  "an unmarked line of ours",
			ours:  strings.Replace(upstream, "\treturn c, nil\n", "\tc.Extra = extra(generic)\n\treturn c, nil\n", 1),
			fails: []string{"NewConfig: line 12 is not upstream's and has no marker"},
		},
		{
			name:  "upstream changed a line we copied",
			ours:  strings.Replace(upstream, "definitions,", "oldDefinitions,", 1),
			fails: []string{"line 7 is not upstream's", "upstream line 7 is missing here: definitions ,"},
		},
		{
			name:  "an upstream line dropped from the copy",
			ours:  strings.Replace(upstream, "\t\"apps\": 17800,\n", "", 1),
			fails: []string{`priorities: upstream line 17 is missing here: "apps" : 17800 ,`},
		},
		{
			name:  "a declaration upstream no longer has",
			ours:  upstream + "\nfunc merge() {}\n",
			fails: []string{"merge is not in upstream.go any more"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := compareCopies("ours.go", []byte(tc.ours), "upstream.go", []byte(upstream))
			if len(problems) != len(tc.fails) {
				t.Fatalf("problems = %q, want %d matching %q", problems, len(tc.fails), tc.fails)
			}
			for i, want := range tc.fails {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], want)
				}
			}
		})
	}
}

// TestReadmeForkDiff keeps the README's fork diff and this build equal: the
// lines the diff adds to upstream's declarations are exactly the lines
// marked "// admitkit" here. Imports are left out (ours are not copied), and
// so is the diff's call of registerAdmissionPlugins: this build swaps the
// registry in NewOptions.
func TestReadmeForkDiff(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", forkRecipe))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "\n```diff\n")
	if !ok {
		t.Fatalf("%s has no ```diff block", forkRecipe)
	}
	block, _, _ = strings.Cut(block, "\n```\n")
	readmeLines := map[string]int{}
	for _, l := range strings.Split(block, "\n") {
		if !strings.HasPrefix(l, "+") || strings.HasPrefix(l, "+++") {
			continue
		}
		tokens := lineTokens(t, strings.TrimPrefix(l, "+"))
		if tokens == "" || strings.HasPrefix(tokens, `"`) || strings.HasPrefix(tokens, "admitkitserver \"") || strings.HasPrefix(tokens, "registerAdmissionPlugins (") {
			continue
		}
		readmeLines[tokens]++
	}
	oursLines := map[string]int{}
	for ours := range copies {
		src, err := os.ReadFile(ours)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		tokens, _ := tokenLines(fset, ours, src)
		for n, l := range strings.Split(string(src), "\n") {
			if strings.Contains(l, "// admitkit") && tokens[n+1] != "" {
				oursLines[tokens[n+1]]++
			}
		}
	}
	for l, n := range readmeLines {
		if oursLines[l] != n {
			t.Errorf("README's fork diff adds %q %d times, this build's copies mark it %d times", l, n, oursLines[l])
		}
	}
	for l, n := range oursLines {
		if _, ok := readmeLines[l]; !ok {
			t.Errorf("this build adds %q (%d times), the README's fork diff does not", l, n)
		}
	}
}

// lineTokens reduces one line of Go to its tokens, as tokenLines does.
func lineTokens(t *testing.T, src string) string {
	t.Helper()
	tokens, _ := tokenLines(token.NewFileSet(), "README.md", []byte(src))
	return tokens[1]
}
