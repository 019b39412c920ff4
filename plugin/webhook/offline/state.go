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
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// crdKind is the kind of a CustomResourceDefinition given as state: it
// adds its kinds' scope, and is no input of the plugins.
const crdKind = "CustomResourceDefinition"

// State is the cluster state read from the state documents: the plugins'
// inputs, and the kinds the documents' CustomResourceDefinitions add.
//
// State objects are taken as the cluster stores them, as `kubectl get -o
// yaml` prints them: they do not go through the plugins. A namespace a
// mutator labels on the server is given with that label.
type State struct {
	Inputs
	Kinds *Kinds
}

// ReadState sorts the state documents into the plugins' inputs; a
// namespaced document without a namespace is in namespace. A namespace
// gets the kubernetes.io/metadata.name label kube-apiserver gives every
// namespace. An error is an *InputError.
func ReadState(docs []Document, namespace string) (*State, error) {
	var definitions []*unstructured.Unstructured
	for _, d := range docs {
		if d.Object.GroupVersionKind().GroupKind() == crdGroupKind {
			definitions = append(definitions, d.Object)
		}
	}
	kinds, err := NewKinds(definitions...)
	if err != nil {
		return nil, err
	}
	s := &State{Kinds: kinds}
	for _, d := range docs {
		if err := s.add(d, namespace); err != nil {
			return nil, &InputError{Object: d.Source, Err: err}
		}
	}
	return s, nil
}

var crdGroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: crdKind}

func (s *State) add(d Document, namespace string) error {
	if d.Object.GroupVersionKind().GroupKind() == crdGroupKind {
		return nil
	}
	if err := s.Kinds.inNamespace(d.Object, namespace); err != nil {
		return err
	}
	switch gvk := d.Object.GroupVersionKind(); {
	case gvk == settingsv1alpha1.SchemeGroupVersion.WithKind("PodPreset"):
		p := &settingsv1alpha1.PodPreset{}
		if err := fromUnstructured(d.Object, p); err != nil {
			return err
		}
		s.Presets = append(s.Presets, p)
	case gvk == settingsv1alpha1.SchemeGroupVersion.WithKind("ClusterPodPreset"):
		p := &settingsv1alpha1.ClusterPodPreset{}
		if err := fromUnstructured(d.Object, p); err != nil {
			return err
		}
		s.ClusterPresets = append(s.ClusterPresets, p)
	case gvk == corev1.SchemeGroupVersion.WithKind("Namespace"):
		ns := &corev1.Namespace{}
		if err := fromUnstructured(d.Object, ns); err != nil {
			return err
		}
		// kube-apiserver sets it on every namespace, whatever was given,
		// so selectors may read it.
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
		s.Namespaces = append(s.Namespaces, ns)
	case strings.HasSuffix(gvk.Group, ".gatekeeper.sh"):
		s.Mutators = append(s.Mutators, d.Object)
	default:
		return fmt.Errorf("%v is not cluster state (a PodPreset, ClusterPodPreset, Namespace, mutator or CustomResourceDefinition)", gvk)
	}
	return nil
}
