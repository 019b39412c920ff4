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
	"fmt"
	"net"
	"slices"
	"strconv"

	"k8s.io/apiserver/pkg/admission"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/plugin/webhook"
	"github.com/admitkit/admitkit/plugin/webhook/podfields"
	"github.com/admitkit/admitkit/plugin/webhook/policysync"
	settingsadmission "github.com/admitkit/admitkit/registry/settings/admission"
)

// Run builds the plugins, starts their informers and serves until ctx
// ends; then it stops serving, waits for the reviews in flight, and only
// then stops the plugins' watches.
func (o *options) Run(ctx context.Context) error {
	config, err := clientConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	cert, err := o.Cert.New(client, o.TLSCertFile, o.TLSKeyFile)
	if err != nil {
		return err
	}
	// The certificate is current before the server listens; it is kept
	// current (renewed, or read again) until ctx ends.
	if err := cert.Start(ctx); err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	// The plugins' drained notification: closed once the server has
	// answered its last review.
	drained := make(chan struct{})
	defer close(drained)
	clients, err := webhook.NewClients(config)
	if err != nil {
		return err
	}
	// The plugins' clients: in the compiled-policies mode, without the
	// presets and mutators the policies carry.
	pluginClients := clients
	var informers []webhook.InformerFactory
	if o.CompilePolicies {
		if pluginClients, informers, err = o.startCompiling(ctx, clients); err != nil {
			return err
		}
	}
	initializers, err := webhook.NewInitializers(webhook.InitializerConfig{
		Clients:          pluginClients,
		Identity:         o.Identity,
		FeatureGates:     o.FeatureGate,
		EffectiveVersion: utilcompatibility.DefaultBuildEffectiveVersion(),
		Stop:             drained,
	})
	if err != nil {
		return err
	}
	registry := admission.NewPlugins()
	plugin.RegisterAllAdmissionPlugins(registry)
	// Presets' pod fields are checked by the cluster's own kube-apiserver.
	settingsadmission.Register(registry, podfields.DryRun(client, o.DryRunNamespace, o.DryRunServiceAccount))
	host, err := webhook.New(webhook.Options{
		Plugins:      registry,
		Enabled:      o.Plugins,
		ConfigFile:   o.ConfigFile,
		Initializers: initializers.Initializers,
		Informers:    append(initializers.Informers, informers...),
		Scheme:       webhook.NewScheme(),
	})
	if err != nil {
		return err
	}
	host.Start(drained)
	klog.InfoS("Serving admission webhooks", "plugins", host.Plugins(), "identity", o.Identity)
	addr := net.JoinHostPort(o.BindAddress.String(), strconv.Itoa(o.SecurePort))
	return webhook.Serve(ctx, addr, host.Handler(), cert.GetCertificate, o.ShutdownDelay)
}

// startCompiling runs the compiled-policies controller until ctx ends and
// returns the plugins' clients, which leave out what the policies carry,
// with the informer factory of the policies, which the host starts and
// waits for before it is ready: a replica that has not yet seen the
// policies would hand nothing over, which applies sources twice, never
// misses one, but a ready replica should know.
func (o *options) startCompiling(ctx context.Context, clients *webhook.Clients) (*webhook.Clients, []webhook.InformerFactory, error) {
	// The LocationMutator configuration's own mutators run on the webhook
	// whatever compiles: the compiler keeps apart from them what it
	// compiles.
	static, err := o.configuredMutators()
	if err != nil {
		return nil, nil, err
	}
	policies := policysync.NewPolicyInformers(clients.Kube)
	carried, err := policysync.NewCarried(policies, o.CompiledHandover)
	if err != nil {
		return nil, nil, err
	}
	controller, err := policysync.New(policysync.Options{
		Kube:     clients.Kube,
		Settings: clients.Settings,
		Dynamic:  clients.Dynamic,
		Policies: policies,
		Compile: func(src compiler.Sources) compiler.Result {
			src.Held = static
			return compiler.Compile(src)
		},
	})
	if err != nil {
		return nil, nil, err
	}
	go controller.Run(ctx)
	filtered := *clients
	filtered.Settings = policysync.FilterSettings(clients.Settings, carried)
	filtered.Dynamic = policysync.FilterDynamic(clients.Dynamic, carried)
	return &filtered, []webhook.InformerFactory{carried}, nil
}

// configuredMutators are the mutators of the LocationMutator's own
// configuration, when it is served.
func (o *options) configuredMutators() ([]*mutation.Mutator, error) {
	if o.ConfigFile == "" || !slices.Contains(o.Plugins, locationmutator.PluginName) {
		return nil, nil
	}
	configs, err := webhook.ReadAdmissionConfiguration(o.Plugins, o.ConfigFile)
	if err != nil {
		return nil, err
	}
	r, err := configs.ConfigFor(locationmutator.PluginName)
	if err != nil {
		return nil, err
	}
	return locationmutator.ConfiguredMutators(r)
}

// clientConfig is kubeconfig's, or the pod's service account's when
// kubeconfig is empty.
func clientConfig(kubeconfig string) (*rest.Config, error) {
	var (
		config *rest.Config
		err    error
	)
	if kubeconfig == "" {
		config, err = rest.InClusterConfig()
	} else {
		config, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("the kube-apiserver to admit for (--kubeconfig %q): %w", kubeconfig, err)
	}
	config.UserAgent = "admitkit-webhook"
	// The plugins read through informers; the client writes Events and
	// status, and asks SubjectAccessReviews: kube-apiserver's loopback
	// client's limits suit it.
	config.QPS, config.Burst = 50, 100
	return config, nil
}
