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
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/admitkit/admitkit/registry/settings/registrytest"
)

func TestNewAPIGroupInfo(t *testing.T) {
	codecs := serializer.NewCodecFactory(registrytest.Scheme)
	info, err := NewAPIGroupInfo(registrytest.Scheme, runtime.NewParameterCodec(registrytest.Scheme), codecs, registrytest.NewRESTOptionsGetter(t))
	if err != nil {
		t.Fatal(err)
	}
	storage := info.VersionedResourcesStorageMap["v1alpha1"]
	for resource, namespaced := range map[string]bool{"podpresets": true, "clusterpodpresets": false} {
		s, ok := storage[resource].(rest.Scoper)
		if !ok {
			t.Fatalf("v1alpha1 does not serve %s", resource)
		}
		if s.NamespaceScoped() != namespaced {
			t.Errorf("%s namespaced = %v, want %v", resource, s.NamespaceScoped(), namespaced)
		}
		storage[resource].Destroy()
	}
	if got := info.PrioritizedVersions; len(got) != 1 || got[0].Version != "v1alpha1" {
		t.Errorf("prioritized versions = %v, want [settings.k8s.io/v1alpha1]", got)
	}
}
