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

package apiserver

import (
	"fmt"
	"net/url"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/egressselector"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/util/notfoundhandler"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/apiserver/pkg/util/webhook"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/capabilities"
	"k8s.io/kubernetes/pkg/controlplane"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	"k8s.io/kubernetes/pkg/controlplane/reconcilers"
	kubeapiserveradmission "k8s.io/kubernetes/pkg/kubeapiserver/admission"

	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
	settingsinitializer "github.com/admitkit/admitkit/plugin/initializer"
	settingsrest "github.com/admitkit/admitkit/registry/settings/rest"
)

// settingsResync is how often the settings informers resync; the same as
// kube-apiserver's own informers.
const settingsResync = 10 * time.Minute

// newConfig is this build's app.NewConfig. It differs from upstream in
// four places, none reachable from outside app.NewConfig:
//   - the OpenAPI definitions include settings.k8s.io, so that both the V2
//     and the V3 config (and their precomputed models) know our types;
//   - the admission chain gets admitkit's settings informer initializer,
//     which kube-apiserver has no hook for;
//   - it returns the settings informer factory, which the server chain
//     starts once the plugins have asked for their informers;
//   - identity, when not empty, replaces the hostname-derived APIServerID
//     (see Options.Identity).
func newConfig(opts options.CompletedOptions, identity string) (*app.Config, settingsinformers.SharedInformerFactory, error) {
	resources := controlplane.DefaultAPIResourceConfigSource()
	settingsrest.AddToDefaultResourceConfig(resources)
	genericConfig, versionedInformers, storageFactory, err := controlplaneapiserver.BuildGenericConfig(
		opts.CompletedOptions,
		[]*runtime.Scheme{legacyscheme.Scheme, apiextensionsapiserver.Scheme, aggregatorscheme.Scheme},
		resources,
		openAPIDefinitions,
		opts.InformerName,
	)
	if err != nil {
		return nil, nil, err
	}
	// Set after BuildGenericConfig, so authentication and authorization
	// metrics keep the hostname-derived value; everything that tells
	// apiservers apart (the identity lease, storage version records,
	// admission status) is built from here on.
	if identity != "" {
		genericConfig.APIServerID = identity
	}

	// The loopback config asks for protobuf, which settings.k8s.io does not
	// speak: the settings client talks JSON.
	settingsConfig := rest.CopyConfig(genericConfig.LoopbackClientConfig)
	settingsConfig.ContentType = runtime.ContentTypeJSON
	settingsConfig.AcceptContentTypes = runtime.ContentTypeJSON
	client, err := settingsclient.NewForConfig(settingsConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("settings.k8s.io loopback client: %w", err)
	}
	settingsFactory := settingsinformers.NewSharedInformerFactory(client, settingsResync)

	kubeAPIs, serviceResolver, initializers, err := newKubeAPIsConfig(opts, genericConfig, versionedInformers, storageFactory,
		settingsinitializer.New(settingsFactory), settingsinitializer.NewServerIdentity(genericConfig.APIServerID))
	if err != nil {
		return nil, nil, err
	}
	// Building the admission chain has folded --admission-control into
	// EnablePlugins, so the list is final here.
	if err := checkPodPresetServed(opts.Admission.GenericAdmission.EnablePlugins, genericConfig.MergedResourceConfig); err != nil {
		return nil, nil, err
	}
	generic := kubeAPIs.ControlPlane.Generic

	apiExtensions, err := controlplaneapiserver.CreateAPIExtensionsConfig(*generic, kubeAPIs.ControlPlane.VersionedInformers, initializers, opts.CompletedOptions, opts.MasterCount,
		serviceResolver, webhook.NewDefaultAuthenticationInfoResolverWrapper(kubeAPIs.ControlPlane.ProxyTransport, generic.EgressSelector, generic.LoopbackClientConfig, generic.TracerProvider))
	if err != nil {
		return nil, nil, err
	}
	aggregator, err := controlplaneapiserver.CreateAggregatorConfig(*generic, opts.CompletedOptions, kubeAPIs.ControlPlane.VersionedInformers, serviceResolver, kubeAPIs.ControlPlane.ProxyTransport, kubeAPIs.ControlPlane.Extra.PeerProxy, initializers)
	if err != nil {
		return nil, nil, err
	}
	return &app.Config{Options: opts, KubeAPIs: kubeAPIs, ApiExtensions: apiExtensions, Aggregator: aggregator}, settingsFactory, nil
}

// newKubeAPIsConfig is this build's app.CreateKubeAPIServerConfig with
// extra admission initializers, which the upstream function does not take.
func newKubeAPIsConfig(
	opts options.CompletedOptions,
	genericConfig *genericapiserver.Config,
	versionedInformers clientgoinformers.SharedInformerFactory,
	storageFactory *serverstorage.DefaultStorageFactory,
	extraInitializers ...admission.PluginInitializer,
) (*controlplane.Config, aggregatorapiserver.ServiceResolver, []admission.PluginInitializer, error) {
	capabilities.Setup(opts.AllowPrivileged, opts.MaxConnectionBytesPerSec)

	kubeInitializers, err := (&kubeapiserveradmission.Config{}).New()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("kube-apiserver admission initializers: %w", err)
	}
	endpointSlices, err := proxy.NewEndpointSliceIndexerGetter(versionedInformers.Discovery().V1().EndpointSlices())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("endpoint slice getter: %w", err)
	}
	serviceResolver := newServiceResolver(opts.EnableAggregatorRouting, genericConfig.LoopbackClientConfig.Host, versionedInformers, endpointSlices)

	controlPlane, initializers, err := controlplaneapiserver.CreateConfig(opts.CompletedOptions, genericConfig, versionedInformers, endpointSlices, storageFactory, serviceResolver,
		append(kubeInitializers, extraInitializers...))
	if err != nil {
		return nil, nil, nil, err
	}

	config := &controlplane.Config{
		ControlPlane: *controlPlane,
		Extra: controlplane.Extra{
			KubeletClientConfig:       opts.KubeletConfig,
			ServiceIPRange:            opts.PrimaryServiceClusterIPRange,
			APIServerServiceIP:        opts.APIServerServiceIP,
			SecondaryServiceIPRange:   opts.SecondaryServiceClusterIPRange,
			APIServerServicePort:      443,
			ServiceNodePortRange:      opts.ServiceNodePortRange,
			KubernetesServiceNodePort: opts.KubernetesServiceNodePort,
			EndpointReconcilerType:    reconcilers.Type(opts.EndpointReconcilerType),
			MasterCount:               opts.MasterCount,
		},
	}

	// With --egress-selector-config-file, kubelet and proxy traffic go
	// through the cluster egress dialer, as in upstream.
	if egress := config.ControlPlane.Generic.EgressSelector; egress != nil {
		config.Extra.KubeletClientConfig.Lookup = egress.Lookup
		dialer, err := egress.Lookup(egressselector.Cluster.AsNetworkContext())
		if err != nil {
			return nil, nil, nil, fmt.Errorf("egress selector for the cluster network: %w", err)
		}
		transport := config.ControlPlane.Extra.ProxyTransport.Clone()
		transport.DialContext = dialer
		config.ControlPlane.ProxyTransport = transport
	}
	return config, serviceResolver, initializers, nil
}

// newServiceResolver resolves webhook and aggregated API services the way
// kube-apiserver does: by cluster IP, or by endpoint with
// --enable-aggregator-routing, and kubernetes.default.svc to this server.
func newServiceResolver(byEndpoint bool, loopbackHost string, informers clientgoinformers.SharedInformerFactory, endpointSlices proxy.EndpointSliceGetter) webhook.ServiceResolver {
	var resolver webhook.ServiceResolver
	if byEndpoint {
		resolver = aggregatorapiserver.NewEndpointServiceResolver(informers.Core().V1().Services().Lister(), endpointSlices)
	} else {
		resolver = aggregatorapiserver.NewClusterIPServiceResolver(informers.Core().V1().Services().Lister())
	}
	if local, err := url.Parse(loopbackHost); err == nil {
		resolver = aggregatorapiserver.NewLoopbackServiceResolver(resolver, local)
	}
	return resolver
}

// createServerChain is this build's app.CreateServerChain: the
// apiextensions server, kube-apiserver's APIs with settings.k8s.io
// installed beside them, and the aggregator in front, told about
// settings.k8s.io so that discovery lists it.
func createServerChain(c app.CompletedConfig, settingsFactory settingsinformers.SharedInformerFactory) (*aggregatorapiserver.APIAggregator, error) {
	notFound := notfoundhandler.New(c.KubeAPIs.ControlPlane.Generic.Serializer, genericapifilters.NoMuxAndDiscoveryIncompleteKey)
	apiExtensions, err := c.ApiExtensions.New(genericapiserver.NewEmptyDelegateWithCustomHandler(notFound))
	if err != nil {
		return nil, fmt.Errorf("apiextensions server: %w", err)
	}
	crdAPIEnabled := c.ApiExtensions.GenericConfig.MergedResourceConfig.ResourceEnabled(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))

	kubeAPIs, err := c.KubeAPIs.New(apiExtensions.GenericAPIServer)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver APIs: %w", err)
	}
	generic := kubeAPIs.ControlPlane.GenericAPIServer
	if err := installSettingsAPI(generic, c.KubeAPIs.ControlPlane.Generic.RESTOptionsGetter, c.KubeAPIs.ControlPlane.Generic.MergedResourceConfig, settingsFactory); err != nil {
		return nil, err
	}
	if err := addBootstrapRolesHook(generic); err != nil {
		return nil, err
	}
	if err := addMutatorCRDsHook(generic, crdAPIEnabled); err != nil {
		return nil, err
	}

	aggregator, err := controlplaneapiserver.CreateAggregatorServer(c.Aggregator, generic,
		apiExtensions.Informers.Apiextensions().V1().CustomResourceDefinitions(), crdAPIEnabled, apiServicePriorities())
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	return aggregator, nil
}
