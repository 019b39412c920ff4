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

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin"
	"github.com/admitkit/admitkit/plugin/webhook/offline"
	"github.com/admitkit/admitkit/plugin/webhook/offline/defaults"
	settingsadmission "github.com/admitkit/admitkit/registry/settings/admission"
)

// admitOptions are admit's flags.
type admitOptions struct {
	State         []string
	MutatorConfig string
	Namespace     string
	User          string
	Groups        []string
	Output        string
	Diff          bool
	ExpandPods    bool
}

// newAdmitCommand is `admitkit admit`: the plugins run on manifests, with
// no cluster.
func newAdmitCommand() *cobra.Command {
	o := &admitOptions{Output: "yaml"}
	cmd := &cobra.Command{
		Use:   "admit [flags] FILE|DIR|- ...",
		Short: "Admit manifests offline, as creates, through the server's own plugins",
		Long: `Admit manifests offline, as creates, through the plugins the server runs,
against the presets, cluster presets, namespaces and mutators given with
--state, and print the admitted objects. Warnings go to stderr, and so does
each refusal with its message. Exit status: 0 all admitted, 1 something
refused, 2 bad input (no objects, a kind no cluster serves, a preset or
mutator the server would refuse, named with its field).`,
		Args:         cobra.MinimumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&o.State, "state", "s", nil, "Cluster state the objects are admitted against: files, directories or - of PodPresets, ClusterPodPresets, Namespaces, mutators (mutations.gatekeeper.sh) and CustomResourceDefinitions, as the cluster stores them. Repeatable.")
	fs.StringVar(&o.MutatorConfig, "mutator-config", "", "The LocationMutator's configuration: its Configuration, or an AdmissionConfiguration with its entry.")
	fs.StringVarP(&o.Namespace, "namespace", "n", "default", "The namespace of namespaced objects and presets that name none.")
	fs.StringVar(&o.User, "user", "", "The user creating the objects, for rules that read it.")
	fs.StringSliceVar(&o.Groups, "groups", nil, "The groups of --user.")
	fs.StringVarP(&o.Output, "output", "o", o.Output, "yaml or json.")
	fs.BoolVar(&o.Diff, "diff", false, "Print a unified diff of each object against what was admitted.")
	fs.BoolVar(&o.ExpandPods, "expand-pods", false, "Also admit the pod the controller of each admitted Deployment, StatefulSet, DaemonSet, ReplicaSet, Job and CronJob would create.")
	cmd.AddCommand(newAdmitTestCommand())
	// The plugins' start-up logs are a server's; admit's output is its
	// objects, warnings and refusals.
	cmd.PersistentPreRun = func(*cobra.Command, []string) {
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	return cmd
}

func (o *admitOptions) run(cmd *cobra.Command, args []string) error {
	if o.Output != "yaml" && o.Output != "json" {
		return &exitError{exitBadInput, fmt.Errorf("--output %q is neither yaml nor json", o.Output)}
	}
	cfg := offline.Config{State: o.State, AdmissionConfigFile: o.MutatorConfig, Namespace: o.Namespace, ExpandPods: o.ExpandPods}
	if o.User != "" || len(o.Groups) > 0 {
		cfg.Requester = &user.DefaultInfo{Name: o.User, Groups: o.Groups}
	}
	results, err := offline.Run(cmd.Context(), baseOptions(), cfg, args, cmd.InOrStdin())
	if err != nil {
		return asExitError(err)
	}
	stderr := cmd.ErrOrStderr()
	refused := false
	for _, r := range results {
		refused = refused || r.Result.Refusal != nil
		for _, w := range r.Result.Warnings {
			fmt.Fprintf(stderr, "Warning: %s: %s\n", r.Name, w)
		}
		if r.Result.Refusal != nil {
			fmt.Fprintf(stderr, "%s refused: %s\n", r.Name, r.Result.Refusal.Message)
		}
	}
	if err := offline.Print(cmd.OutOrStdout(), results, o.Output, o.Diff); err != nil {
		return err
	}
	if refused {
		return &exitError{exitRefused, errors.New("an object was refused")}
	}
	return nil
}

func newAdmitTestCommand() *cobra.Command {
	return &cobra.Command{
		Use:          "test DIR|FILE ...",
		Short:        "Run admit test cases: a line per case, a diff per failure, then N passed, N failed",
		Args:         cobra.MinimumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			failed, err := offline.RunTests(cmd.Context(), baseOptions(), args, cmd.OutOrStdout())
			if err != nil {
				return asExitError(err)
			}
			if failed > 0 {
				return &exitError{exitRefused, fmt.Errorf("%d failed", failed)}
			}
			return nil
		},
	}
}

// asExitError gives a bad input its exit code.
func asExitError(err error) error {
	var inputErr *offline.InputError
	if errors.As(err, &inputErr) {
		return &exitError{exitBadInput, err}
	}
	return err
}

// baseOptions are the server's: its registry, its feature gates
// (newWebhookOptions added the plugins' to the default gate) and
// kube-apiserver's defaults. Presets' pod fields are checked with
// admitkit's built-in rules: the server asks its cluster's kube-apiserver
// (podfields.DryRun), which offline has not.
func baseOptions() offline.Options {
	registry := admission.NewPlugins()
	plugin.RegisterAllAdmissionPlugins(registry)
	settingsadmission.Register(registry, nil)
	return offline.Options{
		Plugins:          registry,
		FeatureGates:     utilfeature.DefaultFeatureGate,
		EffectiveVersion: utilcompatibility.DefaultBuildEffectiveVersion(),
		Defaulter:        defaults.NewScheme(),
	}
}
