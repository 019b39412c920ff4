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
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
	"github.com/admitkit/admitkit/plugin/webhook/podfields"
	"github.com/admitkit/admitkit/plugin/webhook/policysync"
	"github.com/admitkit/admitkit/plugin/webhook/servingcert"
	settingsadmission "github.com/admitkit/admitkit/registry/settings/admission"
)

// newWebhookCommand is `admitkit webhook`: admitkit's admission plugins
// served to a stock kube-apiserver as admission webhooks (package
// plugin/webhook): POST /mutate/<plugin> and /validate/<plugin> over TLS
// (or a chain of plugins in one review, /mutate/<plugin>/<plugin>...), with
// /healthz, /readyz and /metrics. It reaches the API server with
// --kubeconfig, or in a pod with its service account.
func newWebhookCommand() (*cobra.Command, error) {
	o, err := newOptions()
	if err != nil {
		return nil, err
	}
	cmd := &cobra.Command{
		Use:          "webhook",
		Short:        "Serve admitkit's admission plugins as admission webhooks for a stock kube-apiserver",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --version, as on every Kubernetes server, but admitkit's.
			if f := cmd.Flags().Lookup("version"); f != nil && f.Changed {
				return runVersion(cmd.OutOrStdout())
			}
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

// options are the webhook command's flags.
type options struct {
	Kubeconfig    string
	BindAddress   net.IP
	SecurePort    int
	TLSCertFile   string
	TLSKeyFile    string
	ConfigFile    string
	Plugins       []string
	Identity      string
	ShutdownDelay time.Duration
	// DryRunNamespace and DryRunServiceAccount are where and as whom
	// presets' pod fields are checked.
	DryRunNamespace      string
	DryRunServiceAccount string
	// Cert is the self-managed certificate's flags, or a given one's CA.
	Cert servingcert.Flags
	// CompilePolicies turns on the compiled-policies mode (package
	// plugin/webhook/policysync); CompiledHandover is how long a source
	// newly carried by the policies stays with the webhook too.
	CompilePolicies  bool
	CompiledHandover time.Duration

	FeatureGate featuregate.MutableVersionedFeatureGate
	Logs        *logsapi.LoggingConfiguration
}

// defaultPlugins are the plugins served unless --plugins says otherwise.
var defaultPlugins = []string{podpreset.PluginName, noderestriction.PluginName, locationmutator.PluginName,
	settingsadmission.DefaultsPluginName, settingsadmission.ValidationPluginName}

func newOptions() (*options, error) {
	gate := utilfeature.DefaultMutableFeatureGate
	// The logging gates and NodeRestriction's, settable with
	// --feature-gates as in kube-apiserver.
	if err := logsapi.AddFeatureGates(gate); err != nil {
		return nil, err
	}
	if err := noderestriction.AddFeatureGates(gate); err != nil {
		return nil, err
	}
	return &options{
		// A pod's address: the Service sends kube-apiserver's calls to
		// it. Outside a cluster (hack/local-up.sh, tests) pass 127.0.0.1.
		BindAddress:   net.IPv4zero,
		SecurePort:    9443,
		Plugins:       defaultPlugins,
		Identity:      defaultIdentity(),
		ShutdownDelay: 5 * time.Second,
		// The server's own namespace, which its webhooks leave out.
		DryRunNamespace:      podfields.DefaultNamespace,
		DryRunServiceAccount: podfields.DefaultServiceAccount,
		CompiledHandover:     policysync.DefaultHandover,
		FeatureGate:          gate,
		Logs:                 logsapi.NewLoggingConfiguration(),
	}, nil
}

// defaultIdentity is the pod's name (POD_NAME from the downward API, else
// the hostname, which is the pod's name in a pod): each replica writes its
// own status entries.
func defaultIdentity() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	name, err := os.Hostname()
	if err != nil {
		return "admitkit-webhook"
	}
	return name
}

func (o *options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("webhook")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "The kubeconfig of the kube-apiserver whose requests are admitted. Empty: the pod's service account (in-cluster config).")
	fs.IPVar(&o.BindAddress, "bind-address", o.BindAddress, "The address to serve on.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "The port to serve HTTPS on.")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "The serving certificate (PEM), with its intermediates, read again every minute. Unset: the server makes its own (--cert-secret).")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", o.TLSKeyFile, "The serving certificate's private key (PEM).")
	fs.StringVar(&o.ConfigFile, "admission-control-config-file", o.ConfigFile, "An AdmissionConfiguration (kube-apiserver's format) with the plugins' configuration.")
	fs.StringSliceVar(&o.Plugins, "plugins", o.Plugins, "The admission plugins to serve, each at /mutate/<name> and/or /validate/<name>, and in chains at /mutate/<name>/<name>...")
	fs.StringVar(&o.Identity, "identity", o.Identity, "The identity the plugins write their status entries under; unique per replica.")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay-duration", o.ShutdownDelay, "On SIGTERM, how long /readyz fails while requests are still served, so that the Service stops sending new ones before the server stops.")
	fs.StringVar(&o.DryRunNamespace, "dry-run-namespace", o.DryRunNamespace, "The namespace where a preset's env, envFrom, volumes and volumeMounts are checked by a server-side dry-run create of a pod holding them: the server's own, which its webhooks leave out, where it may create pods.")
	fs.StringVar(&o.DryRunServiceAccount, "dry-run-service-account", o.DryRunServiceAccount, "The service account of that pod, one that exists in --dry-run-namespace: the server's own.")
	compiled := fss.FlagSet("compiled policies")
	compiled.BoolVar(&o.CompilePolicies, "compile-policies", o.CompilePolicies, "Compile PodPresets, ClusterPodPresets and Gatekeeper mutators into MutatingAdmissionPolicies (and ValidatingAdmissionPolicies) kept in step with them, which kube-apiserver (1.36 and later) applies in-process; the webhook plugins keep only what did not compile. Each source says which in its policies.admitkit.io/compiled annotation.")
	compiled.DurationVar(&o.CompiledHandover, "compiled-handover-delay", o.CompiledHandover, "With --compile-policies: how long the webhook keeps applying a source after it first observes the whole policy set carrying it, while kube-apiserver's own policy informers catch up. A source is applied twice meanwhile, which changes nothing.")
	o.Cert.AddFlags(fss.FlagSet("serving certificate"))
	o.FeatureGate.AddFlag(fss.FlagSet("feature gates"))
	logsapi.AddFlags(o.Logs, fss.FlagSet("logs"))
	return fss
}

// Validate checks the flags that need no I/O.
func (o *options) Validate() error {
	var errs []error
	if o.SecurePort < 1 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not a port", o.SecurePort))
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together"))
	}
	if len(o.Plugins) == 0 {
		errs = append(errs, errors.New("--plugins names no plugin"))
	}
	if strings.TrimSpace(o.Identity) == "" {
		errs = append(errs, errors.New("--identity is empty"))
	}
	if o.DryRunNamespace == "" || o.DryRunServiceAccount == "" {
		errs = append(errs, errors.New("--dry-run-namespace and --dry-run-service-account must not be empty"))
	}
	if o.CompiledHandover < 0 {
		errs = append(errs, fmt.Errorf("--compiled-handover-delay %v is negative", o.CompiledHandover))
	}
	if o.ShutdownDelay < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-delay-duration %v is negative", o.ShutdownDelay))
	}
	return errors.Join(errs...)
}
