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
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	// kube-apiserver's defaults for the kinds admitted (pods and workloads).
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"

	"github.com/admitkit/admitkit/plugin"
	"github.com/admitkit/admitkit/plugin/webhook/offline"
	settingsadmission "github.com/admitkit/admitkit/registry/settings/admission"
	"github.com/admitkit/admitkit/test/podfields"
)

// Exit codes of admit: every object admitted, something refused, bad input.
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

func (o *admitOptions) addStateFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringArrayVarP(&o.State, "state", "s", nil, "Cluster state the objects are admitted against: files, directories or - of PodPresets, ClusterPodPresets, Namespaces and mutators (mutations.gatekeeper.sh). Repeatable.")
	fs.StringVar(&o.MutatorConfig, "mutator-config", "", "The LocationMutator's configuration: its Configuration, or an AdmissionConfiguration with its entry.")
	fs.StringVarP(&o.Namespace, "namespace", "n", "default", "The namespace of namespaced objects and presets that name none.")
	fs.StringVar(&o.User, "user", "", "The user creating the objects, for rules that read it.")
	fs.StringSliceVar(&o.Groups, "groups", nil, "The groups of --user.")
}

// newAdmitCommand is `admitkit-webhook admit`: the plugins run on
// manifests, with no cluster.
func newAdmitCommand() *cobra.Command {
	o := &admitOptions{Output: "yaml"}
	cmd := &cobra.Command{
		Use:   "admit [flags] FILE|DIR|- ...",
		Short: "Admit manifests offline, as creates, through the server's own plugins",
		Long: `Admit manifests offline, as creates, through the plugins the server runs,
against the presets, cluster presets, namespaces and mutators given with
--state, and print the admitted objects. Warnings go to stderr, and so does
each refusal with its message. Exit status: 0 all admitted, 1 something
refused, 2 bad input (a preset or mutator the server would refuse, named
with its field).`,
		Args:         cobra.MinimumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.addStateFlags(cmd)
	cmd.Flags().StringVarP(&o.Output, "output", "o", o.Output, "yaml or json.")
	cmd.Flags().BoolVar(&o.Diff, "diff", false, "Print a unified diff of each object against what was admitted.")
	cmd.Flags().BoolVar(&o.ExpandPods, "expand-pods", false, "Also admit the pod the controller of each Deployment, StatefulSet, DaemonSet, ReplicaSet, Job and CronJob would create.")
	cmd.AddCommand(newAdmitTestCommand())
	// The plugins' start-up logs are a server's; admit's output is its
	// objects, warnings and refusals.
	cmd.PersistentPreRun = func(*cobra.Command, []string) {
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	return cmd
}

func (o *admitOptions) run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if o.Output != "yaml" && o.Output != "json" {
		return &exitError{exitBadInput, fmt.Errorf("--output %q is neither yaml nor json", o.Output)}
	}
	docs, err := readObjects(args, stdin)
	if err != nil {
		return &exitError{exitBadInput, err}
	}
	admitter, err := o.newAdmitter(ctx, stdin)
	if err != nil {
		return err
	}
	defer admitter.Close()
	results, err := admitAll(ctx, admitter, docs, o.Namespace, o.requester(), o.ExpandPods)
	if err != nil {
		return err
	}
	refused := false
	for _, r := range results {
		refused = refused || r.result.Refusal != nil
		for _, w := range r.result.Warnings {
			fmt.Fprintf(stderr, "Warning: %s: %s\n", r.name, w)
		}
		if r.result.Refusal != nil {
			fmt.Fprintf(stderr, "%s refused: %s\n", r.name, r.result.Refusal.Message)
		}
	}
	if err := printResults(stdout, results, o.Output, o.Diff); err != nil {
		return err
	}
	if refused {
		return &exitError{exitRefused, errors.New("an object was refused")}
	}
	return nil
}

// newAdmitter builds the offline host over the state given.
func (o *admitOptions) newAdmitter(ctx context.Context, stdin io.Reader) (*offline.Admitter, error) {
	stateDocs, err := readObjects(o.State, stdin)
	if err != nil {
		return nil, &exitError{exitBadInput, err}
	}
	in, err := stateOf(stateDocs, o.Namespace)
	if err != nil {
		return nil, &exitError{exitBadInput, err}
	}
	if in.LocationMutatorConfig, err = locationMutatorConfig(o.MutatorConfig); err != nil {
		return nil, &exitError{exitBadInput, fmt.Errorf("--mutator-config: %w", err)}
	}
	opts, err := offlineOptions(in)
	if err != nil {
		return nil, err
	}
	a, err := offline.New(ctx, opts)
	var inputErr *offline.InputError
	if errors.As(err, &inputErr) {
		return nil, &exitError{exitBadInput, err}
	}
	return a, err
}

// offlineOptions are the server's: its registry (with kube-apiserver's
// pod validation for presets, as run.go registers it), its feature gates
// (newOptions added the plugins' to the default gate), and
// kube-apiserver's defaults.
func offlineOptions(in offline.Inputs) (offline.Options, error) {
	registry := admission.NewPlugins()
	plugin.RegisterAllAdmissionPlugins(registry)
	settingsadmission.Register(registry, podfields.Validate)
	return offline.Options{
		Inputs:           in,
		Plugins:          registry,
		FeatureGates:     utilfeature.DefaultFeatureGate,
		EffectiveVersion: utilcompatibility.DefaultBuildEffectiveVersion(),
		Defaulter:        legacyscheme.Scheme,
	}, nil
}

func (o *admitOptions) requester() user.Info {
	if o.User == "" && len(o.Groups) == 0 {
		return nil
	}
	return &user.DefaultInfo{Name: o.User, Groups: o.Groups}
}

// admitted is one object admitted, under the name it is reported by.
type admitted struct {
	name   string
	input  *unstructured.Unstructured
	result *offline.Result
}

// admitAll admits every object, and with expand each workload's pod after
// it.
func admitAll(ctx context.Context, a *offline.Admitter, docs []document, namespace string, requester user.Info, expand bool) ([]admitted, error) {
	var out []admitted
	for _, d := range docs {
		inNamespace(d.object, namespace)
		objects := []*unstructured.Unstructured{d.object}
		if expand {
			pod, err := podOf(d.object)
			if err != nil {
				return nil, &exitError{exitBadInput, fmt.Errorf("%s: %w", d.source, err)}
			}
			if pod != nil {
				objects = append(objects, pod)
			}
		}
		for _, obj := range objects {
			r, err := a.Admit(ctx, obj, requester)
			if err != nil {
				return nil, &exitError{exitBadInput, fmt.Errorf("%s: %w", d.source, err)}
			}
			out = append(out, admitted{name: nameOf(obj), input: obj, result: r})
		}
	}
	return out, nil
}

func nameOf(u *unstructured.Unstructured) string {
	name := u.GetName()
	if name == "" {
		name = u.GetGenerateName() + "*"
	}
	if u.GetNamespace() != "" {
		name = u.GetNamespace() + "/" + name
	}
	return u.GetKind() + " " + name
}
