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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// forkRecipe is where the fork recipe lives, from the repository's root:
// the README of plugin/kubeapiserver, the package a fork calls, which the
// front README links as "Building kube-apiserver with admitkit". The
// recipe test and the fork diff test (drift_test.go) both read it there.
const forkRecipe = "plugin/kubeapiserver/README.md"

// recipeStep finds the README's fork recipe steps: a fenced block preceded
// by <!-- fork-recipe: WHAT -->, where WHAT is "run" for shell commands
// or the path, in the new module, of the file the block is.
var recipeStep = regexp.MustCompile("(?ms)^<!-- fork-recipe: (\\S+) -->\n```[a-z]*\n(.*?)^```\n")

// TestReadmeForkRecipe follows "Building kube-apiserver with admitkit" as a
// reader would, in an empty module: it writes each file and runs each
// command of the README in order, then asks the binary for its admission
// plugins. Only two things differ from what a reader types: admitkit comes
// from this checkout (a replace, and v0.0.0 for the version), and the
// build is a race build, so that it reuses what test/'s own race builds put
// in the build cache.
func TestReadmeForkRecipe(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", forkRecipe))
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	steps := recipeStep.FindAllSubmatch(readme, -1)
	if len(steps) < 5 || string(steps[0][1]) != "go.mod" {
		t.Fatalf("%s has %d fork-recipe steps, want go.mod first and every step marked", forkRecipe, len(steps))
	}
	dir := t.TempDir()
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -race"))
	run := func(what, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		return string(out)
	}
	for i, step := range steps {
		what, body := string(step[1]), string(step[2])
		if what != "run" {
			file := filepath.Join(dir, filepath.FromSlash(what))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, step[2], 0o644); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				run("pointing admitkit at this checkout", "go", "mod", "edit", "-replace=github.com/admitkit/admitkit="+root)
			}
			continue
		}
		script := strings.ReplaceAll(body, "@<version or commit>", "@v0.0.0")
		t.Logf("step %d:\n%s", i, script)
		run(fmt.Sprintf("README fork-recipe block %d", i), "bash", "-euo", "pipefail", "-c", script)
	}
	help := run("kube-apiserver --help", filepath.Join(dir, "kube-apiserver"), "--help")
	_, plugins, ok := strings.Cut(help, "--enable-admission-plugins strings")
	if !ok {
		t.Fatalf("kube-apiserver --help has no --enable-admission-plugins:\n%s", help)
	}
	plugins, _, _ = strings.Cut(plugins, "\n      --")
	for _, name := range []string{"PodPreset", "NodeRestriction", "LocationMutator"} {
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(plugins) {
			t.Errorf("--enable-admission-plugins does not list %s:%s", name, plugins)
		}
	}
}
