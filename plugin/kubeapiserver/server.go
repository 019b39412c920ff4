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

package kubeapiserver

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	openapicommon "k8s.io/kube-openapi/pkg/common"

	"github.com/admitkit/admitkit/apis/settings"
	settingsinstall "github.com/admitkit/admitkit/apis/settings/install"
	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/apis/settings/validation"
	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
	settingsopenapi "github.com/admitkit/admitkit/generated/openapi"
	"github.com/admitkit/admitkit/plugin/initializer"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
	settingsrest "github.com/admitkit/admitkit/registry/settings/rest"
)

// settingsResync is how often the settings informers resync: the period
// kube-apiserver's own informers use.
const settingsResync = 10 * time.Minute

// Options are what a kube-apiserver build hands admitkit. The struct grows
// with new fields rather than New with new parameters, so a fork's call
// keeps compiling.
type Options struct {
	// Scheme is the scheme kube-apiserver builds its OpenAPI names and
	// storage codecs from (legacyscheme.Scheme), with settings.k8s.io in it
	// (AddToScheme).
	Scheme *runtime.Scheme
	// Codecs is the codec factory of Scheme (legacyscheme.Codecs).
	Codecs serializer.CodecFactory
	// ParameterCodec decodes query parameters (legacyscheme.ParameterCodec).
	ParameterCodec runtime.ParameterCodec
	// PodFields checks the env, envFrom, volumes and volumeMounts of
	// presets as kube-apiserver's pod validation would check them in a
	// pod, so that a preset that would make every pod it selects invalid
	// is refused when it is written. Pod validation lives in
	// k8s.io/kubernetes, so the build supplies it; nil means admitkit's
	// built-in rules, which look at less (see validation.BuiltinPodFields).
	PodFields validation.PodFieldsValidator
}

// Server carries admitkit's part of one kube-apiserver from its config
// (Configure) to its server chain (Install).
type Server struct {
	opts            Options
	settingsFactory settingsinformers.SharedInformerFactory
}

// AddToScheme installs settings.k8s.io, internal and v1alpha1, into
// kube-apiserver's scheme (legacyscheme.Scheme). Call it before the server's
// options are validated, from an init function: --runtime-config names only
// groups the scheme holds, the OpenAPI namer gives a definition the
// x-kubernetes-group-version-kind server-side apply needs only for kinds in
// the scheme, and the storage codecs decode only those kinds. Installing
// into the same scheme again is harmless.
func AddToScheme(scheme *runtime.Scheme) {
	settingsinstall.Install(scheme)
}

// New returns the Server a build configures (Configure) and installs
// (Install). A missing option is reported by Configure, the first step that
// can fail, so that New fits in an expression.
func New(opts Options) *Server {
	return &Server{opts: opts}
}

// ResourceConfig enters settings.k8s.io/v1alpha1 into kube-apiserver's
// default resource config (controlplane.DefaultAPIResourceConfigSource()),
// turned off as every alpha version is: --runtime-config turns it on. It
// returns resources, for use as BuildGenericConfig's argument.
func ResourceConfig(resources *serverstorage.ResourceConfig) *serverstorage.ResourceConfig {
	settingsrest.AddToDefaultResourceConfig(resources)
	return resources
}

// OpenAPIDefinitions returns kube's definitions plus settings.k8s.io's, for
// BuildGenericConfig, which feeds both the OpenAPI V2 and V3 configs (and
// their precomputed models) from it. Our generated definitions repeat the
// core/v1 and meta/v1 models they reference; kube's own copies win.
func OpenAPIDefinitions(kube openapicommon.GetOpenAPIDefinitions) openapicommon.GetOpenAPIDefinitions {
	return func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		defs := kube(ref)
		for name, def := range settingsopenapi.GetOpenAPIDefinitions(ref) {
			if _, ok := defs[name]; !ok {
				defs[name] = def
			}
		}
		return defs
	}
}

// Configure builds the settings informer factory on config's loopback
// client and returns the admission plugin initializers that hand it, and
// config.APIServerID as the server's identity, to admitkit's plugins. Call
// it after BuildGenericConfig (and after anything that sets APIServerID),
// and pass the initializers to the admission chain with kube-apiserver's
// own (CreateKubeAPIServerConfig's).
func (s *Server) Configure(config *genericapiserver.Config) ([]admission.PluginInitializer, error) {
	if err := s.opts.validate(); err != nil {
		return nil, err
	}
	if config.LoopbackClientConfig == nil {
		return nil, errors.New("admitkit: the server config has no LoopbackClientConfig; call Configure after BuildGenericConfig")
	}
	client, err := newSettingsClient(config.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	s.settingsFactory = settingsinformers.NewSharedInformerFactory(client, settingsResync)
	return []admission.PluginInitializer{
		initializer.New(s.settingsFactory),
		initializer.NewServerIdentity(config.APIServerID),
	}, nil
}

func (o Options) validate() error {
	var missing []string
	if o.Scheme == nil {
		missing = append(missing, "Scheme")
	}
	if len(o.Codecs.SupportedMediaTypes()) == 0 {
		missing = append(missing, "Codecs")
	}
	if o.ParameterCodec == nil {
		missing = append(missing, "ParameterCodec")
	}
	if len(missing) > 0 {
		return fmt.Errorf("admitkit: kubeapiserver.Options needs %v (kube-apiserver's legacyscheme)", missing)
	}
	return nil
}

// newSettingsClient returns a settings.k8s.io client for loopback, a
// kube-apiserver's loopback config. That config asks for protobuf, which
// settings.k8s.io does not speak, so the client sends and accepts JSON.
func newSettingsClient(loopback *rest.Config) (settingsclient.Interface, error) {
	config := rest.CopyConfig(loopback)
	config.ContentType = runtime.ContentTypeJSON
	config.AcceptContentTypes = runtime.ContentTypeJSON
	client, err := settingsclient.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("settings.k8s.io loopback client: %w", err)
	}
	return client, nil
}

// Install completes kube-apiserver's APIs server (the kube-apiserver's
// GenericAPIServer, built from config) with admitkit's parts:
//   - it refuses to start when PodPreset is among enabledPlugins but its
//     resources are not served;
//   - it serves the settings.k8s.io/v1alpha1 resources --runtime-config
//     turns on, stored in etcd as JSON, and starts the settings informers
//     once the server runs;
//   - it adds the post-start hooks that reconcile the PodPreset
//     ClusterRoles (PostStartHookBootstrapRoles) and, when the server chain
//     serves customresourcedefinitions, install the mutator CRDs
//     (PostStartHookMutatorCRDs).
//
// Pass kube-apiserver's final list of enabled admission plugins
// (options.Admission.GenericAdmission.EnablePlugins: building the admission
// chain folds --admission-control into it). server must already delegate to
// the apiextensions server, as CreateServerChain builds it. Call Configure
// first.
func (s *Server) Install(server *genericapiserver.GenericAPIServer, config genericapiserver.CompletedConfig, enabledPlugins []string) error {
	if s.settingsFactory == nil {
		return errors.New("admitkit: Server.Install needs Server.Configure to have run in NewConfig")
	}
	if err := checkPodPresetServed(enabledPlugins, config.MergedResourceConfig); err != nil {
		return err
	}
	if err := s.installSettingsAPI(server, config); err != nil {
		return err
	}
	if err := addBootstrapRolesHook(server); err != nil {
		return err
	}
	if servesCRDs(server) {
		return addMutatorCRDsHook(server)
	}
	return nil
}

// crdVersionPath is where the apiextensions server serves
// customresourcedefinitions, the only resource of its group version.
const crdVersionPath = "/apis/apiextensions.k8s.io/v1"

// servesCRDs says whether server's chain serves customresourcedefinitions.
// kube-apiserver's APIs server delegates to the apiextensions server, which
// installs apiextensions.k8s.io/v1 only when --runtime-config leaves the
// resource on (a version without resources is not installed), and a
// server's listed paths include its delegates'. The kube APIs' own resource
// config does not know the group: the apiextensions server merges
// --runtime-config into a config of its own.
func servesCRDs(server *genericapiserver.GenericAPIServer) bool {
	return slices.Contains(server.ListedPaths(), crdVersionPath)
}

// installSettingsAPI serves what --runtime-config enables of
// settings.k8s.io/v1alpha1 and starts its informers after the server is up.
func (s *Server) installSettingsAPI(server *genericapiserver.GenericAPIServer, config genericapiserver.CompletedConfig) error {
	storage := storeAsJSON(config.RESTOptionsGetter, s.opts.Codecs)
	info, err := settingsrest.NewAPIGroupInfo(s.opts.Scheme, s.opts.ParameterCodec, s.opts.Codecs, storage, config.MergedResourceConfig, s.opts.PodFields)
	if err != nil {
		return fmt.Errorf("settings.k8s.io storage: %w", err)
	}
	if len(info.VersionedResourcesStorageMap) == 0 {
		klog.InfoS("Not serving settings.k8s.io/v1alpha1: --runtime-config leaves it off")
		return nil
	}
	if err := server.InstallAPIGroup(info); err != nil {
		return fmt.Errorf("installing settings.k8s.io: %w", err)
	}
	// The plugins asked the factory for their informers while the admission
	// chain was built, so starting it here starts exactly those.
	factory := s.settingsFactory
	return server.AddPostStartHook(PostStartHookSettingsInformers, func(ctx genericapiserver.PostStartHookContext) error {
		factory.Start(ctx.Done())
		klog.V(2).InfoS("Started settings.k8s.io informers")
		return nil
	})
}

// PostStartHookSettingsInformers starts the settings informer factory.
const PostStartHookSettingsInformers = "admitkit-start-settings-informers"

// checkPodPresetServed refuses to start a server whose PodPreset plugin
// could never fill its cache because the resources it watches are not
// served: it would answer every pod create with 503. The error names both
// flags involved.
func checkPodPresetServed(enabledPlugins []string, resources serverstorage.APIResourceConfigSource) error {
	if !slices.Contains(enabledPlugins, podpreset.PluginName) {
		return nil
	}
	for _, gvr := range []schema.GroupVersionResource{settingsrest.PodPresets, settingsrest.ClusterPodPresets} {
		if !resources.ResourceEnabled(gvr) {
			return fmt.Errorf("admission plugin %s (--enable-admission-plugins) needs %s served, which --runtime-config leaves off: add --runtime-config=%s=true (with no %s=false), or leave %s out of --enable-admission-plugins",
				podpreset.PluginName, gvr.GroupResource(), gvr.GroupVersion(), gvr.GroupVersion().String()+"/"+gvr.Resource, podpreset.PluginName)
		}
	}
	return nil
}

// storeAsJSON wraps a server's RESTOptionsGetter so that settings.k8s.io is
// stored in etcd as JSON (storage version v1alpha1), encoded with codecs.
// kube-apiserver's storage factory encodes everything as protobuf, which our
// types do not implement; every other group passes through unchanged.
func storeAsJSON(getter generic.RESTOptionsGetter, codecs serializer.CodecFactory) generic.RESTOptionsGetter {
	return jsonStorage{RESTOptionsGetter: getter, codecs: codecs}
}

type jsonStorage struct {
	generic.RESTOptionsGetter
	codecs serializer.CodecFactory
}

func (j jsonStorage) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := j.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil || resource.Group != settings.GroupName {
		return opts, err
	}
	storageConfig := *opts.StorageConfig
	codec, versioner, err := serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType:  runtime.ContentTypeJSON,
		StorageSerializer: j.codecs,
		StorageVersion:    settingsv1alpha1.SchemeGroupVersion,
		MemoryVersion:     schema.GroupVersion{Group: settings.GroupName, Version: runtime.APIVersionInternal},
		Config:            storageConfig.Config,
	})
	if err != nil {
		return opts, fmt.Errorf("JSON storage codec for %s: %w", resource, err)
	}
	storageConfig.Config.Codec = codec
	storageConfig.Config.EncodeVersioner = versioner
	opts.StorageConfig = &storageConfig
	return opts, nil
}

// The aggregator orders the groups in discovery by these numbers, and leaves
// out of discovery a group that has none. A fork enters
// SettingsGroupVersion into kube-apiserver's apiVersionPriorities with them.
// The old in-tree settings.k8s.io sat lowest (15600 was the next free slot
// below lifecycle.k8s.io's 15700); 9 leaves room for later versions.
var SettingsGroupVersion = settingsv1alpha1.SchemeGroupVersion

const (
	SettingsGroupPriority   int32 = 15600
	SettingsVersionPriority int32 = 9
)
