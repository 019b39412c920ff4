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
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/klog/v2"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	kubeopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	"github.com/admitkit/admitkit/apis/settings"
	settingsinstall "github.com/admitkit/admitkit/apis/settings/install"
	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
	settingsopenapi "github.com/admitkit/admitkit/generated/openapi"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
	settingsrest "github.com/admitkit/admitkit/registry/settings/rest"
)

// settings.k8s.io goes into kube-apiserver's scheme before anything reads
// it: the OpenAPI namer built in BuildGenericConfig gives a definition its
// x-kubernetes-group-version-kind (which server-side apply needs) only for
// kinds in that scheme, and the storage codecs decode only those kinds.
func init() {
	settingsinstall.Install(legacyscheme.Scheme)
}

// PostStartHookSettingsInformers starts the settings informer factory.
const PostStartHookSettingsInformers = "admitkit-start-settings-informers"

// openAPIDefinitions is kube-apiserver's definitions plus settings.k8s.io.
// Our generated file repeats the core/v1 and meta/v1 models it references;
// kube-apiserver's own copies win.
func openAPIDefinitions(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
	defs := kubeopenapi.GetOpenAPIDefinitions(ref)
	for name, def := range settingsopenapi.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[name]; !ok {
			defs[name] = def
		}
	}
	return defs
}

// installSettingsAPI serves the settings.k8s.io/v1alpha1 resources that
// --runtime-config turns on from server, stored through optsGetter with a
// JSON codec, and starts the settings informers after the server is up.
func installSettingsAPI(server *genericapiserver.GenericAPIServer, optsGetter generic.RESTOptionsGetter, resources serverstorage.APIResourceConfigSource, settingsFactory settingsinformers.SharedInformerFactory) error {
	info, err := settingsrest.NewAPIGroupInfo(legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs, jsonStorage{optsGetter}, resources, podFields)
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
	return server.AddPostStartHook(PostStartHookSettingsInformers, func(ctx genericapiserver.PostStartHookContext) error {
		settingsFactory.Start(ctx.Done())
		klog.V(2).InfoS("Started settings.k8s.io informers")
		return nil
	})
}

// checkPodPresetServed refuses to start a server whose PodPreset plugin
// could never fill its cache because the resources it watches are not
// served: it would answer every pod create with 503.
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

// jsonStorage stores settings.k8s.io in JSON. kube-apiserver's storage
// factory encodes everything as protobuf, which our types do not implement;
// every other group passes through unchanged.
type jsonStorage struct {
	generic.RESTOptionsGetter
}

func (j jsonStorage) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := j.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil || resource.Group != settings.GroupName {
		return opts, err
	}
	storageConfig := *opts.StorageConfig
	codec, versioner, err := serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType:  runtime.ContentTypeJSON,
		StorageSerializer: legacyscheme.Codecs,
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

// apiServicePriorities orders the groups in discovery: the generic
// control-plane groups, kube-apiserver's own (the table its unexported
// apiVersionPriorities holds), and settings.k8s.io after them all.
func apiServicePriorities() map[schema.GroupVersion]controlplaneapiserver.APIServicePriority {
	priorities := controlplaneapiserver.DefaultGenericAPIServicePriorities()
	for _, p := range []struct {
		group, version string
		groupPriority  int32
		versionPrio    int32
	}{
		{"", "v1", 18000, 1},
		{"apps", "v1", 17800, 15},
		{"autoscaling", "v1", 17500, 15},
		{"autoscaling", "v2", 17500, 30},
		{"autoscaling", "v2beta1", 17500, 9},
		{"autoscaling", "v2beta2", 17500, 1},
		{"batch", "v1", 17400, 15},
		{"batch", "v1beta1", 17400, 9},
		{"batch", "v2alpha1", 17400, 9},
		{"networking.k8s.io", "v1", 17200, 15},
		{"networking.k8s.io", "v1beta1", 17200, 9},
		{"policy", "v1", 17100, 15},
		{"policy", "v1beta1", 17100, 9},
		{"storage.k8s.io", "v1", 16800, 15},
		{"storage.k8s.io", "v1beta1", 16800, 9},
		{"storage.k8s.io", "v1alpha1", 16800, 1},
		{"scheduling.k8s.io", "v1", 16600, 15},
		{"scheduling.k8s.io", "v1beta1", 16600, 9},
		{"scheduling.k8s.io", "v1alpha3", 16600, 3},
		{"node.k8s.io", "v1", 16300, 15},
		{"node.k8s.io", "v1alpha1", 16300, 1},
		{"node.k8s.io", "v1beta1", 16300, 9},
		{"resource.k8s.io", "v1", 16200, 21},
		{"resource.k8s.io", "v1beta2", 16200, 15},
		{"resource.k8s.io", "v1beta1", 16200, 9},
		{"resource.k8s.io", "v1alpha3", 16200, 1},
		{"lifecycle.k8s.io", "v1alpha1", 15700, 1},
		// The old in-tree settings.k8s.io sat lowest; we take the next free slot.
		{settings.GroupName, settingsv1alpha1.SchemeGroupVersion.Version, 15600, 9},
	} {
		priorities[schema.GroupVersion{Group: p.group, Version: p.version}] = controlplaneapiserver.APIServicePriority{Group: p.groupPriority, Version: p.versionPrio}
	}
	return priorities
}
