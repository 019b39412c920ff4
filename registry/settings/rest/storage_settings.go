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

// Package rest builds the settings.k8s.io API group a server installs:
// podpresets and clusterpodpresets at v1alpha1.
package rest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/apis/settings/validation"
	clusterpodpresetstorage "github.com/admitkit/admitkit/registry/settings/clusterpodpreset/storage"
	podpresetstorage "github.com/admitkit/admitkit/registry/settings/podpreset/storage"
)

// GroupName is the group the APIGroupInfo serves.
const GroupName = settings.GroupName

// Resources are the resources of settings.k8s.io/v1alpha1, each of which
// --runtime-config can turn off on its own.
var (
	PodPresets        = v1alpha1.SchemeGroupVersion.WithResource("podpresets")
	ClusterPodPresets = v1alpha1.SchemeGroupVersion.WithResource("clusterpodpresets")
)

// AddToDefaultResourceConfig registers settings.k8s.io/v1alpha1 in a
// server's default resource config, turned off as kube-apiserver turns off
// every alpha version: --runtime-config=settings.k8s.io/v1alpha1=true (or
// api/alpha=true, api/all=true) turns it on. Without the entry, the group
// matchers (api/alpha, api/all) would not know the version.
func AddToDefaultResourceConfig(c *serverstorage.ResourceConfig) {
	c.DisableVersions(v1alpha1.SchemeGroupVersion)
}

// NewAPIGroupInfo returns settings.k8s.io for InstallAPIGroup, with storage
// for the resources that resources enables and for no other. When it
// enables none, VersionedResourcesStorageMap is empty and the group must
// not be installed. The scheme must hold the group (apis/settings/install)
// and be the one codecs was built from; optsGetter gives each resource its
// storage.
//
// podFields checks what presets put into pods. A server that has
// kube-apiserver's pod validation passes a validator built on it; nil
// means admitkit's built-in rules (validation.BuiltinPodFields), which is
// logged, since those let through some presets that make every pod they
// select invalid.
//
// The group is served without protobuf, which its types do not implement:
// see withoutProtobuf.
func NewAPIGroupInfo(scheme *runtime.Scheme, parameterCodec runtime.ParameterCodec, codecs serializer.CodecFactory, optsGetter generic.RESTOptionsGetter, resources serverstorage.APIResourceConfigSource, podFields validation.PodFieldsValidator) (*genericapiserver.APIGroupInfo, error) {
	info := genericapiserver.NewDefaultAPIGroupInfo(GroupName, scheme, parameterCodec, codecs)
	info.NegotiatedSerializer = withoutProtobuf{codecs}
	storage := map[string]rest.Storage{}
	if podFields == nil && (resources.ResourceEnabled(PodPresets) || resources.ResourceEnabled(ClusterPodPresets)) {
		klog.InfoS("settings.k8s.io checks the pod fields of presets with admitkit's built-in rules: no pod validation was handed to the registry, so a preset whose volume sources, env sources or downward API items are invalid is accepted and then makes the pods it selects invalid")
	}
	if resources.ResourceEnabled(PodPresets) {
		podPresets, err := podpresetstorage.NewREST(scheme, optsGetter, podFields)
		if err != nil {
			return nil, fmt.Errorf("podpresets storage: %w", err)
		}
		storage[PodPresets.Resource] = podPresets
	}
	if resources.ResourceEnabled(ClusterPodPresets) {
		clusterPodPresets, err := clusterpodpresetstorage.NewREST(scheme, optsGetter, podFields)
		if err != nil {
			return nil, fmt.Errorf("clusterpodpresets storage: %w", err)
		}
		storage[ClusterPodPresets.Resource] = clusterPodPresets
	}
	if len(storage) > 0 {
		info.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = storage
	}
	return &info, nil
}
