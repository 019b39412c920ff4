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

package rest

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/server/resourceconfig"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/admitkit/admitkit/registry/settings/internal/registrytest"
)

// TestNewAPIGroupInfo serves what --runtime-config turns on, merged into the
// default resource config the way kube-apiserver merges it.
func TestNewAPIGroupInfo(t *testing.T) {
	for _, tc := range []struct {
		name          string
		runtimeConfig cliflag.ConfigurationMap
		want          []string // served resources, sorted
	}{
		{name: "off by default", want: nil},
		{name: "version on", runtimeConfig: cliflag.ConfigurationMap{"settings.k8s.io/v1alpha1": "true"}, want: []string{"clusterpodpresets", "podpresets"}},
		{name: "version off", runtimeConfig: cliflag.ConfigurationMap{"settings.k8s.io/v1alpha1": "false"}, want: nil},
		{name: "all alpha versions on", runtimeConfig: cliflag.ConfigurationMap{"api/alpha": "true"}, want: []string{"clusterpodpresets", "podpresets"}},
		{name: "everything on", runtimeConfig: cliflag.ConfigurationMap{"api/all": "true"}, want: []string{"clusterpodpresets", "podpresets"}},
		{name: "all on, the version off", runtimeConfig: cliflag.ConfigurationMap{"api/all": "true", "settings.k8s.io/v1alpha1": "false"}, want: nil},
		{name: "one resource off", runtimeConfig: cliflag.ConfigurationMap{"settings.k8s.io/v1alpha1": "true", "settings.k8s.io/v1alpha1/clusterpodpresets": "false"}, want: []string{"podpresets"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defaults := serverstorage.NewResourceConfig()
			AddToDefaultResourceConfig(defaults)
			resources, err := resourceconfig.MergeAPIResourceConfigs(defaults, tc.runtimeConfig, registrytest.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			codecs := serializer.NewCodecFactory(registrytest.Scheme)
			info, err := NewAPIGroupInfo(registrytest.Scheme, runtime.NewParameterCodec(registrytest.Scheme), codecs, registrytest.NewRESTOptionsGetter(t), resources, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(info.VersionedResourcesStorageMap) != 0 {
					t.Fatalf("serves %v, want nothing", info.VersionedResourcesStorageMap)
				}
				return
			}
			storage := info.VersionedResourcesStorageMap["v1alpha1"]
			var served []string
			for resource, s := range storage {
				served = append(served, resource)
				defer s.Destroy()
			}
			slices.Sort(served)
			if !slices.Equal(served, tc.want) {
				t.Fatalf("serves %v, want %v", served, tc.want)
			}
			for resource, namespaced := range map[string]bool{"podpresets": true, "clusterpodpresets": false} {
				s, ok := storage[resource].(rest.Scoper)
				if ok && s.NamespaceScoped() != namespaced {
					t.Errorf("%s namespaced = %v, want %v", resource, s.NamespaceScoped(), namespaced)
				}
			}
			if got := info.PrioritizedVersions; len(got) != 1 || got[0].Version != "v1alpha1" {
				t.Errorf("prioritized versions = %v, want [settings.k8s.io/v1alpha1]", got)
			}
		})
	}
}
