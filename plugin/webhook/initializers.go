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

package webhook

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"

	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
	"github.com/admitkit/admitkit/plugin/initializer"
)

// Clients are what the plugins reach the cluster's state through: a
// kube-apiserver's (NewClients), or fakes holding the state a host without
// a cluster was given (an offline admit).
type Clients struct {
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	Settings settingsclient.Interface
	// Authorizer answers the plugins' authorization checks.
	Authorizer authorizer.Authorizer
	// RESTMapper maps the kinds the plugins meet to their resources.
	RESTMapper meta.RESTMapper
}

// NewClients builds the clients of the kube-apiserver config reaches, as
// the webhook's service account: protobuf for the built-in APIs, JSON for
// settings.k8s.io (which speaks nothing else), an authorizer asking the
// API server through SubjectAccessReviews, and a REST mapper over its
// discovery.
func NewClients(config *rest.Config) (*Clients, error) {
	kubeConfig := rest.CopyConfig(config)
	kubeConfig.ContentType = runtime.ContentTypeProtobuf
	kubeConfig.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(kubeConfig)
	if err != nil {
		return nil, fmt.Errorf("kube client: %w", err)
	}
	dynamicClient, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	settingsConfig := rest.CopyConfig(config)
	settingsConfig.ContentType = runtime.ContentTypeJSON
	settingsConfig.AcceptContentTypes = runtime.ContentTypeJSON
	settings, err := settingsclient.NewForConfig(settingsConfig)
	if err != nil {
		return nil, fmt.Errorf("settings.k8s.io client: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kube.AuthorizationV1(),
		AllowCacheTTL:             10 * time.Second,
		DenyCacheTTL:              10 * time.Second,
		WebhookRetryBackoff:       &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
	}.New()
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &Clients{
		Kube:       kube,
		Dynamic:    dynamicClient,
		Settings:   settings,
		Authorizer: authz,
		RESTMapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discoveryClient)),
	}, nil
}

// InitializerConfig is what the plugins' initializers are built from.
type InitializerConfig struct {
	// Clients reach the cluster state the plugins admit against (see
	// NewClients).
	Clients *Clients
	// Identity is the server identity the plugins key their status by
	// (a pod name: each replica writes its own entry).
	Identity string
	// FeatureGates are the gates the plugins inspect, with theirs added
	// (noderestriction.AddFeatureGates).
	FeatureGates featuregate.FeatureGate
	// EffectiveVersion is the version the plugins inspect.
	EffectiveVersion compatibility.EffectiveVersion
	// Stop closes when the server shuts down: the plugins' drained
	// notification, which stops their watches and Event recorders.
	Stop <-chan struct{}
}

// Initializers are the plugin initializers of a webhook server and the
// informer factories they hand out.
type Initializers struct {
	Initializers []admission.PluginInitializer
	Informers    []InformerFactory
}

// informerResync is the resync period of kube-apiserver's own informers,
// and of its settings.k8s.io informers.
const informerResync = 10 * time.Minute

// NewInitializers builds what the plugins get in kube-apiserver, over
// cfg.Clients: the generic initializer (kube client, dynamic client, shared
// informers, the authorizer, feature gates, effective version, drained
// notification, REST mapper), the settings.k8s.io informer factory and the
// server identity. Host.Start starts the informer factories. Every host
// builds its initializers here, over live clients or fakes alike, so that
// the plugins get the same things wherever they run.
func NewInitializers(cfg InitializerConfig) (*Initializers, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := cfg.Clients
	kubeInformers := informers.NewSharedInformerFactory(c.Kube, informerResync)
	settings := settingsinformers.NewSharedInformerFactory(c.Settings, informerResync)
	return &Initializers{
		Initializers: []admission.PluginInitializer{
			genericadmissioninitializer.New(c.Kube, c.Dynamic, kubeInformers, c.Authorizer, cfg.FeatureGates, cfg.EffectiveVersion, cfg.Stop, c.RESTMapper),
			initializer.New(settings),
			initializer.NewServerIdentity(cfg.Identity),
		},
		Informers: []InformerFactory{kubeInformers, settings},
	}, nil
}

func (cfg InitializerConfig) validate() error {
	switch {
	case cfg.Clients == nil:
		return errors.New("webhook: InitializerConfig.Clients is nil")
	case cfg.Clients.Kube == nil || cfg.Clients.Dynamic == nil || cfg.Clients.Settings == nil:
		return errors.New("webhook: InitializerConfig.Clients lacks the kube, dynamic or settings.k8s.io client")
	case cfg.Clients.Authorizer == nil || cfg.Clients.RESTMapper == nil:
		return errors.New("webhook: InitializerConfig.Clients lacks the authorizer or the REST mapper")
	case cfg.FeatureGates == nil:
		return errors.New("webhook: InitializerConfig.FeatureGates is nil")
	case cfg.EffectiveVersion == nil:
		return errors.New("webhook: InitializerConfig.EffectiveVersion is nil")
	case cfg.Stop == nil:
		return errors.New("webhook: InitializerConfig.Stop is nil")
	}
	return nil
}
