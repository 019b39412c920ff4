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

// Command admitkit-webhook serves admitkit's admission plugins to a stock
// kube-apiserver as admission webhooks (package plugin/webhook): POST
// /mutate/<plugin> and /validate/<plugin> over TLS (or a chain of plugins
// in one review, /mutate/<plugin>/<plugin>...), with /healthz, /readyz and
// /metrics. It reaches the API server with --kubeconfig, or in a pod
// with its service account.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	genericapiserver "k8s.io/apiserver/pkg/server"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
)

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
	o, err := newOptions()
	if err != nil {
		return nil, err
	}
	cmd := &cobra.Command{
		Use:          "admitkit-webhook",
		Short:        "admitkit's admission plugins as admission webhooks for a stock kube-apiserver",
		SilenceUsage: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := logsapi.ValidateAndApply(o.Logs, o.FeatureGate); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.SetContext(genericapiserver.SetupSignalContext())
	cmd.AddCommand(newAdmitCommand())

	fss := o.Flags()
	verflag.AddFlags(fss.FlagSet("global"))
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	return cmd, nil
}
