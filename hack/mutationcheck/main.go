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

// Command mutationcheck checks that every plugin's tests can fail for the
// reason they exist. For each entry point listed in entryPoints it makes
// mutants: the function's body made a no-op (it returns its results' zero
// values at once) and, when it returns an error, made an early error. It
// runs the tests of the entry point's package on each mutant, fuzz seed
// corpora included (go test runs them as plain tests), and requires them
// to fail. A mutant they pass, one that survives, is a test to mend.
//
// The tree is never changed: each mutant is a copy of the file, handed to
// go test through -overlay. Run it from the module root:
//
//	go run ./hack/mutationcheck                # every mutant
//	go run ./hack/mutationcheck -run podpreset # mutants whose name matches
//	go run ./hack/mutationcheck -race          # build as hack/test.sh does
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// entryPoint is a function whose body the check replaces: a method when
// recv (the receiver's type name) is set, else a function of the package
// in dir (relative to the module root). fuzz, when set, is the fuzz
// target written to check it, whose seed corpus alone must also fail:
// the rest of the package's tests catching a mutant must not hide a fuzz
// oracle that checks too little.
type entryPoint struct {
	dir, recv, name, fuzz string
}

// entryPoints are the plugins' entry points, the mutation engine's and
// the parts every rule goes through: the one list to update when one is
// renamed or added.
var entryPoints = []entryPoint{
	{"plugin/pkg/admission/podpreset", "Plugin", "Admit", "FuzzAdmit"},
	{"plugin/pkg/admission/podpreset", "", "applyPresets", "FuzzAdmit"},
	{"plugin/pkg/admission/podpreset", "", "mergeList", "FuzzMergeList"},
	{"plugin/pkg/admission/noderestriction", "Plugin", "Validate", "FuzzValidate"},
	{"plugin/pkg/admission/locationmutator", "Plugin", "Admit", ""},
	{"plugin/pkg/admission/locationmutator", "Plugin", "Validate", ""},
	{"plugin/pkg/admission/locationmutator/mutation", "", "Mutate", "FuzzSystem"},
	{"plugin/pkg/admission/locationmutator/mutation", "", "mutateJSON", "FuzzSystem"},
	{"plugin/pkg/admission/locationmutator/mutation", "", "mutateTyped", "FuzzTypedDifferential"},
	{"plugin/pkg/admission/locationmutator/path", "", "Parse", "FuzzParse"},
}

func (e entryPoint) String() string {
	if e.recv != "" {
		return fmt.Sprintf("%s.(*%s).%s", filepath.Base(e.dir), e.recv, e.name)
	}
	return filepath.Base(e.dir) + "." + e.name
}

// mutant is one changed copy of the file that holds an entry point.
type mutant struct {
	name string
	dir  string
	fuzz string // the entry point's fuzz target, if any
	file string // the file's path, which the overlay replaces
	src  []byte // the mutant's source
}

// errorType is appended to a file whose entry point gets an early error,
// so that the mutant needs no import the file may lack.
const errorType = `

type mutationcheckError struct{}

func (mutationcheckError) Error() string { return "mutationcheck: early error" }
`

func main() {
	os.Exit(check())
}

// check runs the mutants and returns the exit code: 1 when one survived
// or did not build, 2 when the check itself could not run.
func check() int {
	run := flag.String("run", "", "only the mutants whose name matches this regular expression")
	race := flag.Bool("race", false, "build the tests with the race detector, as hack/test.sh does, to share its build cache")
	timeout := flag.Duration("timeout", 10*time.Minute, "go test's -timeout for each mutant")
	flag.Parse()
	filter, err := regexp.Compile(*run)
	if err != nil {
		return fail("-run: %v", err)
	}
	if _, err := os.Stat("go.mod"); err != nil {
		return fail("run from the module root: %v", err)
	}
	work, err := os.MkdirTemp("", "mutationcheck")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(work)

	var mutants []mutant
	for _, e := range entryPoints {
		ms, err := mutantsOf(e)
		if err != nil {
			return fail("%s: %v", e, err)
		}
		for _, m := range ms {
			if filter.MatchString(m.name) {
				mutants = append(mutants, m)
			}
		}
	}
	start := time.Now()
	// Each package's tests must pass as the tree is first: a mutant that
	// tests already failing "kill" proves nothing.
	var dirs []string
	for _, m := range mutants {
		if !slices.Contains(dirs, m.dir) {
			dirs = append(dirs, m.dir)
		}
	}
	for _, dir := range dirs {
		out, err := exec.Command("go", goTest(dir, "", "", *race, *timeout)...).CombinedOutput()
		if err != nil {
			os.Stdout.Write(out)
			return fail("the tests of %s fail without a mutant: %v", dir, err)
		}
	}
	fmt.Printf("the tests of %d packages pass, in %.0fs\n", len(dirs), time.Since(start).Seconds())
	var survived, broken []string
	for i, m := range mutants {
		verdict, took, out, err := test(work, i, m, *race, *timeout)
		if err != nil {
			return fail("%s: %v", m.name, err)
		}
		fmt.Printf("%-60s %-30s %5.1fs\n", m.name, verdict, took.Seconds())
		switch {
		case strings.HasPrefix(verdict, "SURVIVED"):
			survived = append(survived, m.name)
		case verdict == "BROKEN":
			broken = append(broken, m.name)
			os.Stdout.Write(out)
		}
	}
	fmt.Printf("%d mutants, %d killed, %d survived, %d did not build, in %.0fs\n",
		len(mutants), len(mutants)-len(survived)-len(broken), len(survived), len(broken), time.Since(start).Seconds())
	if len(survived) > 0 || len(broken) > 0 {
		return 1
	}
	return 0
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "mutationcheck: "+format+"\n", args...)
	return 2
}

// mutantsOf finds e in its package's non-test files and returns its
// mutants: a no-op, and an early error when its last result is an error.
// The body is not removed but made unreachable by a return put before it,
// so that every import and declaration it uses stays used and the mutant
// builds.
func mutantsOf(e entryPoint) ([]mutant, error) {
	files, err := filepath.Glob(filepath.Join(e.dir, "*.go"))
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name != e.name || receiverName(fn) != e.recv || fn.Body == nil {
				continue
			}
			abs, err := filepath.Abs(file)
			if err != nil {
				return nil, err
			}
			return mutate(e, abs, src, fset, fn), nil
		}
	}
	return nil, errors.New("not found: update entryPoints")
}

// receiverName is the name of fn's receiver type, without its pointer or
// type parameters; "" for a function.
func receiverName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func mutate(e entryPoint, file string, src []byte, fset *token.FileSet, fn *ast.FuncDecl) []mutant {
	// One variable per result, typed as the source spells the result.
	var decls, names []string
	lastIsError := false
	if fn.Type.Results != nil {
		for _, field := range fn.Type.Results.List {
			typ := string(src[fset.Position(field.Type.Pos()).Offset:fset.Position(field.Type.End()).Offset])
			for range max(1, len(field.Names)) {
				name := fmt.Sprintf("mutationcheck%d", len(names))
				decls = append(decls, "var "+name+" "+typ)
				names = append(names, name)
				id, ok := field.Type.(*ast.Ident)
				lastIsError = ok && id.Name == "error"
			}
		}
	}
	body := fset.Position(fn.Body.Lbrace).Offset + 1
	splice := func(stmts string, tail string) []byte {
		var b bytes.Buffer
		b.Write(src[:body])
		b.WriteString("\n{\n" + stmts + "\n}\n")
		b.Write(src[body:])
		b.WriteString(tail)
		return b.Bytes()
	}
	ret := "return " + strings.Join(names, ", ")
	out := []mutant{{name: e.String() + " no-op", dir: e.dir, fuzz: e.fuzz, file: file,
		src: splice(strings.Join(append(decls, ret), "\n"), "")}}
	if lastIsError {
		last := names[len(names)-1]
		stmts := append(append([]string(nil), decls...), last+" = mutationcheckError{}", ret)
		out = append(out, mutant{name: e.String() + " early error", dir: e.dir, fuzz: e.fuzz, file: file,
			src: splice(strings.Join(stmts, "\n"), errorType)})
	}
	return out
}

// test runs the tests of m's package on m and says whether they killed it
// (failed), let it survive (passed), or could not build it.
func test(work string, i int, m mutant, race bool, timeout time.Duration) (verdict string, took time.Duration, out []byte, err error) {
	copyPath := filepath.Join(work, fmt.Sprintf("mutant%d.go", i))
	if err := os.WriteFile(copyPath, m.src, 0o644); err != nil {
		return "", 0, nil, err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {m.file: copyPath}})
	if err != nil {
		return "", 0, nil, err
	}
	overlayPath := filepath.Join(work, fmt.Sprintf("overlay%d.json", i))
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return "", 0, nil, err
	}
	start := time.Now()
	verdict, out, err = run(goTest(m.dir, overlayPath, "", race, timeout))
	if verdict == "killed" && m.fuzz != "" {
		// The same build, cached: only the fuzz target runs again.
		verdict, out, err = run(goTest(m.dir, overlayPath, "^"+m.fuzz+"$", race, timeout))
		if verdict == "SURVIVED" {
			verdict = "SURVIVED " + m.fuzz
		}
	}
	return verdict, time.Since(start), out, err
}

// run runs the go command with args and says whether the tests failed
// ("killed"), passed ("SURVIVED") or did not build ("BROKEN").
func run(args []string) (verdict string, out []byte, err error) {
	out, runErr := exec.Command("go", args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case runErr == nil:
		return "SURVIVED", out, nil
	case !errors.As(runErr, &exit):
		return "", out, runErr
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		return "BROKEN", out, nil
	}
	return "killed", out, nil
}

// goTest is the go command that runs the tests of the package in dir
// (those tests matches picks, when set), with overlay when it is set; it
// stops at the first failing test.
func goTest(dir, overlay, matches string, race bool, timeout time.Duration) []string {
	args := []string{"test", "-count=1", "-failfast", "-timeout=" + timeout.String()}
	if overlay != "" {
		args = append(args, "-overlay="+overlay)
	}
	if matches != "" {
		args = append(args, "-run="+matches)
	}
	if race {
		args = append(args, "-race")
	}
	return append(args, "./"+dir)
}
