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

package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
)

// commandsModule is the module whose commands BuildCommand builds.
const commandsModule = "github.com/admitkit/admitkit/test/cmd/"

// productCommands are admitkit's own commands, in the root module (this
// module reaches it by its replace), which BuildCommand builds by name.
var productCommands = map[string]string{
	"admitkit": "github.com/admitkit/admitkit/plugin/cmd/admitkit",
}

// upstreamCommands are the commands BuildCommand takes from Kubernetes
// itself, as hack/local-up.sh builds them, rather than from test/cmd.
var upstreamCommands = map[string]string{
	"kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
	"kubectl":                 "k8s.io/kubernetes/cmd/kubectl",
}

// clients are the commands built without the race detector even when
// the test binary has it. Tests run kubectl many times, each run a
// process start, and with the race detector each start initialises its
// whole package graph instrumented: TestKubectlExplain took 11 s instead
// of 1.3, TestHostsAgree 87 instead of 17.
var clients = map[string]bool{"kubectl": true}

var (
	buildsMu sync.Mutex
	builds   = map[string]*build{}
)

type build struct {
	once sync.Once
	path string
	err  error
}

// BuildCommand builds test/cmd/<name>, or admitkit's or the upstream
// command of that name, once per test binary and returns the executable's path. A server
// is built with the race detector exactly when the test binary is, so that
// the build cache the test binary filled serves every package and only the
// link is new; a client (clients) never is.
func BuildCommand(name string) (string, error) {
	buildsMu.Lock()
	b, ok := builds[name]
	if !ok {
		b = &build{}
		builds[name] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() { b.path, b.err = goBuild(name) })
	return b.path, b.err
}

// PrebuildCommands starts building the named commands at once, each in
// a go command of its own, and returns without waiting: BuildCommand
// returns each one's result when it is asked for it. A test binary that
// starts servers while the first build links keeps both cores busy, where
// building each command when its first user asks for it left one idle
// for minutes on a cold build cache.
func PrebuildCommands(names ...string) {
	for _, name := range names {
		go func() { _, _ = BuildCommand(name) }()
	}
}

func goBuild(name string) (string, error) {
	dir, err := os.MkdirTemp("", "admitkit-cmd-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	args := []string{"build", "-o", out, "-ldflags=" + versionFlags()}
	if raceEnabled && !clients[name] {
		args = append(args, "-race")
	}
	pkg := commandsModule + name
	if upstream, ok := upstreamCommands[name]; ok {
		pkg = upstream
	}
	if product, ok := productCommands[name]; ok {
		pkg = product
	}
	args = append(args, pkg)
	// The go command on PATH, as hack/test.sh and every Go user runs it.
	cmd := exec.Command("go", args...)
	if output, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go %v: %w\n%s", args, err, output)
	}
	return out, nil
}

// versionFlags stamp the commands with the k8s.io/kubernetes release this
// module requires, as a release build is stamped, so that the stock server
// reports v1.37.2 to kubectl version and discovery rather than a
// development version.
func versionFlags() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, dep := range info.Deps {
		if dep.Path != "k8s.io/kubernetes" {
			continue
		}
		major, minor, _ := strings.Cut(strings.TrimPrefix(dep.Version, "v"), ".")
		minor, _, _ = strings.Cut(minor, ".")
		const pkg = "k8s.io/component-base/version."
		return strings.Join([]string{
			"-X " + pkg + "gitVersion=" + dep.Version,
			"-X " + pkg + "gitMajor=" + major,
			"-X " + pkg + "gitMinor=" + minor,
			"-X " + pkg + "gitTreeState=clean",
		}, " ")
	}
	return ""
}

// RemoveCommands deletes what BuildCommand built; TestMain calls it last.
func RemoveCommands() {
	buildsMu.Lock()
	defer buildsMu.Unlock()
	for name, b := range builds {
		if b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
		delete(builds, name)
	}
}
