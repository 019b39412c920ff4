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
