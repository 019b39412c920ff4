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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
)

// Assign sets the value at spec.location of the objects it matches. At
// v1alpha1 it has the same fields as at v1.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=assign,scope=Cluster
// +kubebuilder:subresource:status
type Assign struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.AssignSpec    `json:"spec,omitempty"`
	Status v1.MutatorStatus `json:"status,omitempty"`
}

// AssignMetadata adds a label or an annotation when the object does not
// have it yet. At v1alpha1 it has the same fields as at v1.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=assignmetadata,scope=Cluster
// +kubebuilder:subresource:status
type AssignMetadata struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.AssignMetadataSpec `json:"spec,omitempty"`
	Status v1.MutatorStatus      `json:"status,omitempty"`
}

// ModifySet merges values into, or prunes them from, a list treated as a
// set. At v1alpha1 it has the same fields as at v1.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=modifyset,scope=Cluster
// +kubebuilder:subresource:status
type ModifySet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.ModifySetSpec `json:"spec,omitempty"`
	Status v1.MutatorStatus `json:"status,omitempty"`
}

// AssignImage replaces the domain, path or tag of an image reference. It
// exists at v1alpha1 only, as in Gatekeeper.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=assignimage,scope=Cluster
// +kubebuilder:subresource:status
type AssignImage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.AssignImageSpec `json:"spec,omitempty"`
	Status v1.MutatorStatus   `json:"status,omitempty"`
}
