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
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:          "version",
		Short:        "Print the module version and the commit admitkit was built from",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVersion(cmd.OutOrStdout())
		},
	}
}

// runVersion prints this binary's version: `admitkit version`, and
// `admitkit --version`, the flag every Kubernetes command has.
func runVersion(w io.Writer) error {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("the binary carries no build information")
	}
	printVersion(w, info)
	return nil
}

// pseudoVersion matches a pseudo-version's end (vX.Y.Z-<base>.<yyyymmddhhmmss>-<commit>,
// or vX.0.0-<yyyymmddhhmmss>-<commit>), capturing the commit's first 12
// hex digits.
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-([0-9a-f]{12})(\+incompatible)?$`)

// printVersion writes the main module's version (a release tag, or for
// `go install ...@<commit>` the pseudo-version naming the commit; "(devel)"
// for a build in a checkout) and the commit and time the go command
// stamped from the checkout's version control, or else the commit the
// pseudo-version names.
func printVersion(w io.Writer, info *debug.BuildInfo) {
	fmt.Fprintf(w, "admitkit %s\n", info.Main.Version)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	revision := settings["vcs.revision"]
	if m := pseudoVersion.FindStringSubmatch(info.Main.Version); revision == "" && m != nil {
		revision = m[1]
	}
	if revision != "" {
		fmt.Fprintf(w, "commit %s", revision)
		if settings["vcs.modified"] == "true" {
			fmt.Fprint(w, " (modified)")
		}
		fmt.Fprintln(w)
	}
	if t := settings["vcs.time"]; t != "" {
		fmt.Fprintf(w, "committed %s\n", t)
	}
	fmt.Fprintf(w, "built with %s\n", info.GoVersion)
}
