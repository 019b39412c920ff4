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

// Command admitkit-apiserver is kube-apiserver 1.37 with admitkit's
// admission plugins (PodPreset, NodeRestriction, LocationMutator) and the
// settings.k8s.io/v1alpha1 API, and an embedded etcd unless --etcd-servers
// is given. It takes every kube-apiserver flag plus --data-dir.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"

	"github.com/admitkit/admitkit/test/apiserver"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	o := apiserver.NewOptions()
	featureGate := o.Server.GenericServerRunOptions.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	cmd := &cobra.Command{
		Use:          "admitkit-apiserver",
		Short:        "kube-apiserver with admitkit's admission plugins and settings.k8s.io",
		SilenceUsage: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := logsapi.ValidateAndApply(o.Server.Logs, featureGate); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())
			// The server's own loopback requests would otherwise log the
			// warnings it issues to itself.
			rest.SetDefaultWarningHandler(rest.NoWarnings{})
			return o.Run(cmd.Context())
		},
	}
	cmd.SetContext(genericapiserver.SetupSignalContext())

	fss := o.Flags()
	verflag.AddFlags(fss.FlagSet("global"))
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	return cmd
}
