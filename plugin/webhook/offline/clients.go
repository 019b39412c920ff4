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

package offline

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	settingsfake "github.com/admitkit/admitkit/generated/clientset/versioned/fake"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/crds"
	"github.com/admitkit/admitkit/plugin/webhook"
)

// newClients holds the inputs' namespaces and mutators in fakes; presets
// are added by checkPresets once the server's defaults are on them.
//
// Offline there is no one to ask about authorization: the authorizer allows
// everything, as for a cluster admin. The REST mapper knows the kinds of
// the scheme; no plugin of admitkit maps kinds through it.
func newClients(scheme *runtime.Scheme, listKinds map[schema.GroupVersionResource]string, namespaces []runtime.Object, mutators []*unstructured.Unstructured) (*webhook.Clients, *settingsfake.Clientset, error) {
	dynamic := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	for _, m := range mutators {
		if _, ok := mutatorResource(listKinds, m.GroupVersionKind()); !ok {
			return nil, nil, &InputError{Object: describe(m), Err: fmt.Errorf("%v is not a mutator kind the LocationMutator reads", m.GroupVersionKind())}
		}
		// A server serves a mutator at every version of its
		// CustomResourceDefinition (their conversion is None), and the
		// plugin watches one: the mutator is there at each.
		for resource, listKind := range listKinds {
			if resource.Group != m.GroupVersionKind().Group || listKind != m.GetKind()+"List" {
				continue
			}
			stored := asStored(m.DeepCopy())
			stored.SetAPIVersion(resource.GroupVersion().String())
			if err := dynamic.Tracker().Create(resource, stored, ""); err != nil {
				return nil, nil, &InputError{Object: describe(m), Err: err}
			}
		}
	}
	settings := settingsfake.NewSimpleClientset()
	return &webhook.Clients{
		Kube:       kubefake.NewClientset(namespaces...),
		Dynamic:    dynamic,
		Settings:   settings,
		Authorizer: authorizerfactory.NewAlwaysAllowAuthorizer(),
		RESTMapper: schemeMapper(scheme),
	}, settings, nil
}

// mutatorListKinds are the list kinds of the resources the LocationMutator
// watches, read from the CustomResourceDefinitions it ships.
func mutatorListKinds() (map[schema.GroupVersionResource]string, error) {
	manifests, err := crds.Manifests()
	if err != nil {
		return nil, fmt.Errorf("the mutator CustomResourceDefinitions: %w", err)
	}
	out := map[schema.GroupVersionResource]string{}
	for _, crd := range manifests {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		listKind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "listKind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			name, _, _ := unstructured.NestedString(v.(map[string]any), "name")
			out[schema.GroupVersionResource{Group: group, Version: name, Resource: plural}] = listKind
		}
	}
	return out, nil
}

// mutatorResource is the resource of a mutator kind, whose list kind is
// the kind's own with "List".
func mutatorResource(listKinds map[schema.GroupVersionResource]string, gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool) {
	for resource, listKind := range listKinds {
		if resource.Group == gvk.Group && resource.Version == gvk.Version && listKind == gvk.Kind+"List" {
			return resource, true
		}
	}
	return schema.GroupVersionResource{}, false
}

// asStored gives a mutator what the API server sets on a created object
// and the LocationMutator reads (its uid, generation and creation time).
func asStored(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u.GetUID() == "" {
		u.SetUID(types.UID(fmt.Sprintf("offline-%s-%s", u.GetKind(), u.GetName())))
	}
	if u.GetGeneration() == 0 {
		u.SetGeneration(1)
	}
	if created := u.GetCreationTimestamp(); created.IsZero() {
		u.SetCreationTimestamp(metav1.Now())
	}
	return u
}

// schemeMapper maps every kind of the scheme to its guessed resource.
func schemeMapper(scheme *runtime.Scheme) meta.RESTMapper {
	mapper := meta.NewDefaultRESTMapper(scheme.PrioritizedVersionsAllGroups())
	for gvk := range scheme.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	return mapper
}
