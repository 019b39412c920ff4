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
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

func TestPrintVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{
			name: "go install at a commit: the pseudo-version names it",
			info: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261206013239-5e1e0f525ad8"}},
			want: "admitkit v0.0.0-20261206013239-5e1e0f525ad8\ncommit 5e1e0f525ad8\nbuilt with go1.26.8\n",
		},
		{
			name: "a pseudo-version after a tag",
			info: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.1-0.20261206013239-5e1e0f525ad8"}},
			want: "admitkit v0.3.1-0.20261206013239-5e1e0f525ad8\ncommit 5e1e0f525ad8\nbuilt with go1.26.8\n",
		},
		{
			name: "a release",
			info: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}},
			want: "admitkit v0.3.0\nbuilt with go1.26.8\n",
		},
		{
			name: "a build in a checkout, stamped by git",
			info: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "5e1e0f525ad8f0f86e49378392b72767bcf091c4"},
				{Key: "vcs.time", Value: "2026-12-06T01:32:39Z"},
				{Key: "vcs.modified", Value: "true"},
			}},
			want: "admitkit (devel)\ncommit 5e1e0f525ad8f0f86e49378392b72767bcf091c4 (modified)\ncommitted 2026-12-06T01:32:39Z\nbuilt with go1.26.8\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printVersion(&b, &tc.info)
			if b.String() != tc.want {
				t.Errorf("printed:\n%s\nwant:\n%s", b.String(), tc.want)
			}
		})
	}
}

// --version, on the command and on its server, prints what admitkit
// version prints, not component-base's Kubernetes version.
func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"webhook", "--version"}} {
		var out strings.Builder
		if err := execute(t, args, &out, io.Discard); err != nil {
			t.Fatalf("admitkit %s: %v", strings.Join(args, " "), err)
		}
		if !strings.HasPrefix(out.String(), "admitkit ") || !strings.Contains(out.String(), "built with go") {
			t.Errorf("admitkit %s printed %q", strings.Join(args, " "), out.String())
		}
	}
}

// rootCommand is the command the tests run, built once: its flags register
// the plugins' feature gates in the default gate, which takes them once
// in a process, as in the binary.
var rootCommand = sync.OnceValues(newCommand)

// execute runs admitkit with args, its output into stdout and stderr.
func execute(t *testing.T, args []string, stdout, stderr io.Writer) error {
	t.Helper()
	cmd, err := rootCommand()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	return cmd.Execute()
}
