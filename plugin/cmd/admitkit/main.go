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

// Command admitkit serves admitkit's admission plugins to a stock
// kube-apiserver as admission webhooks (admitkit webhook), admits
// manifests through the same plugins with no cluster (admitkit admit,
// admitkit admit test), compiles presets and mutators into
// MutatingAdmissionPolicies (admitkit compile), and prints its version
// (admitkit version).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	genericapiserver "k8s.io/apiserver/pkg/server"
)

// Exit codes: 0 done (every object admitted, every case passed), 1
// something refused or failed, 2 bad input.
const (
	exitRefused  = 1
	exitBadInput = 2
)

// exitError ends the command with its code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

func main() {
	cmd, err := newCommand()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := cmd.Execute(); err != nil {
		var exit *exitError
		if errors.As(err, &exit) {
			os.Exit(exit.code)
		}
		os.Exit(1)
	}
}

func newCommand() (*cobra.Command, error) {
	webhook, err := newWebhookCommand()
	if err != nil {
		return nil, err
	}
	cmd := &cobra.Command{
		Use:          "admitkit",
		Short:        "admitkit's admission plugins: a webhook server for stock kube-apiservers, and offline admission",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
	}
	// --version, which component-base registers for every Kubernetes
	// command, prints what `admitkit version` prints; otherwise the
	// command alone prints its help.
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if f := cmd.Flags().Lookup("version"); f != nil && f.Changed {
			return runVersion(cmd.OutOrStdout())
		}
		return cmd.Help()
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetContext(genericapiserver.SetupSignalContext())
	cmd.AddCommand(webhook, newAdmitCommand(), newCompileCommand(), newVersionCommand())
	return cmd, nil
}
