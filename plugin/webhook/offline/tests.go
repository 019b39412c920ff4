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

package offline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"
)

// testFile is a file of admit test cases (see the README's "Testing
// presets and mutators"). Paths are relative to the file.
type testFile struct {
	Cases []testCase `json:"cases"`
}

type testCase struct {
	Name          string   `json:"name"`
	Namespace     string   `json:"namespace,omitempty"`
	State         []string `json:"state,omitempty"`
	MutatorConfig string   `json:"mutatorConfig,omitempty"`
	Input         []string `json:"input"`
	User          string   `json:"user,omitempty"`
	Groups        []string `json:"groups,omitempty"`
	ExpandPods    bool     `json:"expandPods,omitempty"`
	Expect        expected `json:"expect"`
}

// expected is what a case must give. Each of Objects must be contained in
// the admitted object at its position (every field it sets has the same
// value; a list has the same length, element by element); Refusal, each of
// Warnings and BadInput are texts the refusal, some warning, and the bad
// input error must contain.
type expected struct {
	Objects  []map[string]any `json:"objects,omitempty"`
	Refusal  string           `json:"refusal,omitempty"`
	Warnings []string         `json:"warnings,omitempty"`
	BadInput string           `json:"badInput,omitempty"`
}

// RunTests runs the admit test cases of the files and directories given,
// with the plugins, gates and defaults of base, and writes a line per
// case, what differs for each failure, and then "N passed, N failed". It
// returns how many failed; an error is an *InputError for a file that
// cannot be read.
func RunTests(ctx context.Context, base Options, paths []string, w io.Writer) (int, error) {
	var passed, failed int
	for _, p := range paths {
		files, err := ExpandPath(p)
		if err != nil {
			return failed, &InputError{Object: p, Err: err}
		}
		for _, f := range files {
			cases, err := readCases(f)
			if err != nil {
				return failed, &InputError{Object: f, Err: err}
			}
			for _, c := range cases {
				if problem := runCase(ctx, base, filepath.Dir(f), c); problem != "" {
					failed++
					fmt.Fprintf(w, "FAIL %s: %s\n%s\n", f, c.Name, problem)
				} else {
					passed++
					fmt.Fprintf(w, "ok   %s: %s\n", f, c.Name)
				}
			}
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	return failed, nil
}

func readCases(name string) ([]testCase, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var f testFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	return f.Cases, nil
}

// runCase admits the case's input and returns what differs from its
// expectation, or "".
func runCase(ctx context.Context, base Options, dir string, c testCase) string {
	cfg := Config{Namespace: c.Namespace, ExpandPods: c.ExpandPods, State: relativeTo(dir, c.State)}
	if cfg.Namespace == "" {
		cfg.Namespace = metav1.NamespaceDefault
	}
	if c.User != "" || len(c.Groups) > 0 {
		cfg.Requester = &user.DefaultInfo{Name: c.User, Groups: c.Groups}
	}
	if c.MutatorConfig != "" {
		cfg.AdmissionConfigFile = filepath.Join(dir, c.MutatorConfig)
	}
	results, err := Run(ctx, base, cfg, relativeTo(dir, c.Input), strings.NewReader(""))
	var inputErr *InputError
	switch {
	case errors.As(err, &inputErr):
		if c.Expect.BadInput == "" || !strings.Contains(err.Error(), c.Expect.BadInput) {
			return fmt.Sprintf("  bad input: %v\n  want bad input containing %q", err, c.Expect.BadInput)
		}
		return ""
	case err != nil:
		return "  " + err.Error()
	case c.Expect.BadInput != "":
		return fmt.Sprintf("  the input was accepted; want bad input containing %q", c.Expect.BadInput)
	}
	return compareResults(results, c.Expect)
}

func compareResults(results []Admitted, want expected) string {
	var problems []string
	var refusals, warnings []string
	for _, r := range results {
		warnings = append(warnings, r.Result.Warnings...)
		if r.Result.Refusal != nil {
			refusals = append(refusals, r.Name+": "+r.Result.Refusal.Message)
		}
	}
	refusal := strings.Join(refusals, "\n")
	if (want.Refusal == "") != (refusal == "") || !strings.Contains(refusal, want.Refusal) {
		problems = append(problems, fmt.Sprintf("  refusal: %q\n  want: %q", refusal, want.Refusal))
	}
	for _, w := range want.Warnings {
		if !strings.Contains(strings.Join(warnings, "\n"), w) {
			problems = append(problems, fmt.Sprintf("  warnings %q\n  want one containing %q", warnings, w))
		}
	}
	if len(want.Warnings) == 0 && len(warnings) > 0 {
		problems = append(problems, fmt.Sprintf("  warnings %q, want none", warnings))
	}
	for i, obj := range want.Objects {
		if i >= len(results) || results[i].Result.Object == nil {
			problems = append(problems, fmt.Sprintf("  object %d was not admitted", i+1))
			continue
		}
		got := results[i].Result.Object
		if !contains(got.Object, obj) {
			text, _ := unifiedDiff("want", "admitted", &unstructured.Unstructured{Object: obj}, &unstructured.Unstructured{Object: within(got.Object, obj)})
			problems = append(problems, "  "+results[i].Name+" differs:\n"+text)
		}
	}
	return strings.Join(problems, "\n")
}

// contains reports whether want's every field is in got with its value.
func contains(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !contains(g[k], v) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !contains(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(normalize(got), normalize(want))
}

// within is got cut to the fields want names, for a readable diff.
func within(got, want map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range want {
		gv, ok := got[k]
		if !ok {
			continue
		}
		if wm, ok := v.(map[string]any); ok {
			if gm, ok := gv.(map[string]any); ok {
				out[k] = within(gm, wm)
				continue
			}
		}
		out[k] = gv
	}
	return out
}

// normalize makes numbers comparable across YAML and JSON decoding.
func normalize(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	}
	return v
}

func relativeTo(dir string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p
		if p != "-" && !filepath.IsAbs(p) {
			out[i] = filepath.Join(dir, p)
		}
	}
	return out
}
