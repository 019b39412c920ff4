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
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/crds"
	settingscrds "github.com/admitkit/admitkit/registry/settings/crds"
)

// Kinds knows which kinds are namespaced, as a cluster's discovery says:
// the built-in kinds from client-go's typed clients, and the kinds of the
// CustomResourceDefinitions admitkit serves and those given as state.
type Kinds struct {
	// namespaced is each known kind's scope.
	namespaced map[schema.GroupVersionKind]bool
	// builtinGroups are the groups of the built-in kinds: a kind of one
	// of them that is not known is not served by any cluster.
	builtinGroups map[string]bool
}

// NewKinds knows the built-in kinds, settings.k8s.io's and the mutators',
// and those of crds (CustomResourceDefinitions, as given to a cluster).
func NewKinds(crdObjects ...*unstructured.Unstructured) (*Kinds, error) {
	k := &Kinds{namespaced: builtinScopes(), builtinGroups: map[string]bool{}}
	for gvk := range k.namespaced {
		k.builtinGroups[gvk.Group] = true
	}
	settings, err := settingscrds.Manifests()
	if err != nil {
		return nil, fmt.Errorf("the settings.k8s.io CustomResourceDefinitions: %w", err)
	}
	mutators, err := crds.Manifests()
	if err != nil {
		return nil, fmt.Errorf("the mutator CustomResourceDefinitions: %w", err)
	}
	for _, crd := range append(append(settings, mutators...), crdObjects...) {
		if err := k.addCRD(crd); err != nil {
			return nil, &InputError{Object: "CustomResourceDefinition " + crd.GetName(), Err: err}
		}
	}
	return k, nil
}

// builtinScopes reads every kind client-go's typed clients create, with its
// scope, off kubernetes.Interface: a group-version client's resource
// getter takes the namespace for a namespaced resource (Pods(namespace))
// and nothing for a cluster-scoped one (Namespaces()); the resource
// client's Create takes the kind's Go type, which the scheme names.
func builtinScopes() map[schema.GroupVersionKind]bool {
	out := map[schema.GroupVersionKind]bool{}
	stringType := reflect.TypeFor[string]()
	clients := reflect.TypeFor[kubernetes.Interface]()
	for i := range clients.NumMethod() {
		groupVersion := clients.Method(i).Type
		if groupVersion.NumIn() != 0 || groupVersion.NumOut() != 1 || groupVersion.Out(0).Kind() != reflect.Interface {
			continue
		}
		getters := groupVersion.Out(0)
		for j := range getters.NumMethod() {
			getter := getters.Method(j).Type
			namespaced := getter.NumIn() == 1 && getter.In(0) == stringType
			if (getter.NumIn() != 0 && !namespaced) || getter.NumOut() != 1 || getter.Out(0).Kind() != reflect.Interface {
				continue
			}
			create, ok := getter.Out(0).MethodByName("Create")
			// Create(ctx, *T, metav1.CreateOptions): T is the kind's type.
			if !ok || create.Type.NumIn() < 2 || create.Type.In(1).Kind() != reflect.Pointer {
				continue
			}
			obj, ok := reflect.New(create.Type.In(1).Elem()).Interface().(runtime.Object)
			if !ok {
				continue
			}
			gvks, _, err := kubescheme.Scheme.ObjectKinds(obj)
			if err != nil {
				continue
			}
			for _, gvk := range gvks {
				out[gvk] = namespaced
			}
		}
	}
	return out
}

// addCRD adds the kinds of a CustomResourceDefinition, by every version it
// serves.
func (k *Kinds) addCRD(crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if group == "" || kind == "" || (scope != "Namespaced" && scope != "Cluster") {
		return fmt.Errorf("spec.group, spec.names.kind and spec.scope (Namespaced or Cluster) are required")
	}
	if k.builtinGroups[group] {
		return fmt.Errorf("spec.group: %q is a built-in group", group)
	}
	for _, v := range versions {
		version, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("spec.versions: a version is not an object")
		}
		name, _, _ := unstructured.NestedString(version, "name")
		k.namespaced[schema.GroupVersionKind{Group: group, Version: name, Kind: kind}] = scope == "Namespaced"
	}
	return nil
}

// Namespaced says whether objects of gvk live in a namespace. A kind of a
// built-in group that no cluster serves (apps/v1 Deploymnet) is an error,
// as kubectl refuses it; a kind of a group no CustomResourceDefinition
// given describes is taken as namespaced, since offline cannot know the
// cluster's other definitions.
func (k *Kinds) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	if namespaced, ok := k.namespaced[gvk]; ok {
		return namespaced, nil
	}
	if k.builtinGroups[gvk.Group] {
		return false, fmt.Errorf("no kind %q is served in version %q", gvk.Kind, gvk.GroupVersion())
	}
	for known := range k.namespaced {
		if known.Group == gvk.Group {
			return false, fmt.Errorf("no kind %q is served in version %q", gvk.Kind, gvk.GroupVersion())
		}
	}
	return true, nil
}

// inNamespace gives an object the namespace its scope asks for: a
// namespaced object without one gets namespace, as kubectl's --namespace
// gives it, and a cluster-scoped one none, as kube-apiserver stores it.
func (k *Kinds) inNamespace(u *unstructured.Unstructured, namespace string) error {
	namespaced, err := k.Namespaced(u.GroupVersionKind())
	switch {
	case err != nil:
		return err
	case !namespaced:
		u.SetNamespace("")
	case u.GetNamespace() == "":
		u.SetNamespace(namespace)
	}
	return nil
}
