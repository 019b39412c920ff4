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
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const modulePath = "github.com/admitkit/admitkit"

// TestGoInstall installs admitkit as a user would, `go install
// github.com/admitkit/admitkit/plugin/cmd/admitkit@<commit>`, from an empty
// directory with an empty module cache, against a module proxy made of
// this checkout's HEAD (a file:// GOPROXY, then the machine's for every
// dependency), and runs the installed binary's version.
func TestGoInstall(t *testing.T) {
	root := repoRoot(t)
	commit := git(t, root, "rev-parse", "HEAD")
	// The pseudo-version names the commit by its time in UTC.
	at, err := time.Parse(time.RFC3339, git(t, root, "show", "-s", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", "--format=%cd", "HEAD"))
	if err != nil {
		t.Fatalf("the commit's time: %v", err)
	}
	version := "v0.0.0-" + at.Format("20060102150405") + "-" + commit[:12]

	proxy := t.TempDir()
	writeModule(t, root, proxy, version, at, commit)

	machineProxy := goEnv(t, "GOPROXY")
	work := t.TempDir()
	start := time.Now()
	cmd := exec.Command("go", "install", modulePath+"/plugin/cmd/admitkit@"+commit)
	cmd.Dir = work
	modcache := filepath.Join(work, "modcache")
	cmd.Env = append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+machineProxy,
		"GOMODCACHE="+modcache,
		"GOBIN="+filepath.Join(work, "bin"),
		"GOFLAGS=-mod=mod",
		// The checksum database does not know this commit; every other
		// module is checked against the go.sum the proxy serves.
		"GONOSUMDB="+modulePath,
		"GOTOOLCHAIN=local",
	)
	// The module cache is read-only: the go command removes it, before
	// the directory it is in goes.
	t.Cleanup(func() {
		clean := exec.Command("go", "clean", "-modcache")
		clean.Env = append(os.Environ(), "GOMODCACHE="+modcache)
		if out, err := clean.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
	})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	t.Logf("go install took %v", time.Since(start).Round(time.Second))

	out, err = exec.Command(filepath.Join(work, "bin", "admitkit"), "version").CombinedOutput()
	if err != nil {
		t.Fatalf("admitkit version: %v\n%s", err, out)
	}
	for _, want := range []string{"admitkit " + version + "\n", "commit " + commit[:12] + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("admitkit version printed:\n%s\nwant a line %q", out, strings.TrimSpace(want))
		}
	}
}

// writeModule writes the root module at commit into proxy as the module
// proxy protocol serves it: the version's .info, .mod and .zip, the
// commit's .info naming the version, which the go command asks for first,
// and the module's list (no releases) and @latest (this version), which it
// reads for the module's deprecation.
func writeModule(t *testing.T, root, proxy, version string, at time.Time, commit string) {
	t.Helper()
	dir := filepath.Join(proxy, modulePath, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, at})
	if err != nil {
		t.Fatal(err)
	}
	gomod := gitBytes(t, root, "show", commit+":go.mod")
	files := map[string][]byte{
		version + ".info": info,
		commit + ".info":  info,
		version + ".mod":  gomod,
		version + ".zip":  moduleZip(t, root, version, commit),
	}
	files["list"] = nil
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(proxy, modulePath, "@latest"), info, 0o644); err != nil {
		t.Fatal(err)
	}
}

// moduleZip is the module zip of the root module at commit: every file
// git holds there, but those of the modules nested in it (any directory
// with a go.mod of its own), under <module>@<version>/.
func moduleZip(t *testing.T, root, version, commit string) []byte {
	t.Helper()
	archive := gitBytes(t, root, "archive", "--format=tar", commit)
	type file struct {
		name string
		data []byte
	}
	var files []file
	nested := map[string]bool{}
	r := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if path.Base(h.Name) == "go.mod" && h.Name != "go.mod" {
			nested[path.Dir(h.Name)] = true
		}
		files = append(files, file{h.Name, data})
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range files {
		if inNested(f.name, nested) {
			continue
		}
		zf, err := w.Create(modulePath + "@" + version + "/" + f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zf.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// inNested reports whether name is in one of the nested modules' trees.
func inNested(name string, nested map[string]bool) bool {
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if nested[dir] {
			return true
		}
	}
	return false
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(string(gitBytes(t, dir, args...)))
}

func gitBytes(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TZ=UTC")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return out
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
