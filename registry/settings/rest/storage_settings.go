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

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/v1alpha1"
	clusterpodpresetstorage "github.com/admitkit/admitkit/registry/settings/clusterpodpreset/storage"
	podpresetstorage "github.com/admitkit/admitkit/registry/settings/podpreset/storage"
)

// GroupName is the group the APIGroupInfo serves.
const GroupName = settings.GroupName

// NewAPIGroupInfo returns settings.k8s.io for InstallAPIGroup. The scheme
// must hold the group (apis/settings/install) and be the one codecs was
// built from; optsGetter gives each resource its storage.
func NewAPIGroupInfo(scheme *runtime.Scheme, parameterCodec runtime.ParameterCodec, codecs serializer.CodecFactory, optsGetter generic.RESTOptionsGetter) (*genericapiserver.APIGroupInfo, error) {
	podPresets, err := podpresetstorage.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, fmt.Errorf("podpresets storage: %w", err)
	}
	clusterPodPresets, err := clusterpodpresetstorage.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, fmt.Errorf("clusterpodpresets storage: %w", err)
	}
	info := genericapiserver.NewDefaultAPIGroupInfo(GroupName, scheme, parameterCodec, codecs)
	info.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"podpresets":        podPresets,
		"clusterpodpresets": clusterPodPresets,
	}
	return &info, nil
}
