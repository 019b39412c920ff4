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

package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Group is the API group of the Provider.
const Group = "externaldata.gatekeeper.sh"

// Kind and Resource name the Provider in that group.
const (
	Kind     = "Provider"
	Resource = "providers"
)

// Provider is an HTTPS endpoint that answers keys with values: an Assign or
// AssignMetadata whose value is externalData names one. Creating one lets
// its author make kube-apiserver send requests to any address, so the
// default roles grant it to cluster administrators only.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=providers,scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
type Provider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderSpec   `json:"spec,omitempty"`
	Status ProviderStatus `json:"status,omitempty"`
}

// ProviderSpec says where the provider is and how long to wait for it.
type ProviderSpec struct {
	// URL is the provider's endpoint; only https is accepted.
	//
	// +kubebuilder:validation:Pattern=`^https://`
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url,omitempty"`
	// Timeout is how long, in seconds, a call may take. Zero means the
	// default, five seconds; the request's own deadline bounds it too.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=30
	Timeout int `json:"timeout,omitempty"`
	// CABundle is the base64-encoded PEM bundle of the certificate
	// authorities that sign the provider's serving certificate.
	CABundle string `json:"caBundle,omitempty"`
}

// ProviderStatus is what each server reports about the provider.
type ProviderStatus struct {
	ByPod []ProviderPodStatus `json:"byPod,omitempty"`
}

// ProviderPodStatus is what one server (a Gatekeeper pod, or a
// kube-apiserver) reports about a provider.
type ProviderPodStatus struct {
	// ID identifies the reporting server.
	ID string `json:"id,omitempty"`
	// ProviderUID is the UID of the provider object the entry is about.
	ProviderUID types.UID `json:"providerUID,omitempty"`
	// Operations the reporting server performs.
	Operations []string `json:"operations,omitempty"`
	// Active says whether the server calls the provider.
	Active bool `json:"active,omitempty"`
	// Errors say why it does not.
	Errors []ProviderError `json:"errors,omitempty"`
	// ObservedGeneration is the generation of the provider the entry
	// describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastTransitionTime is when Active last changed.
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// LastCacheUpdateTime is when the server last read the provider.
	LastCacheUpdateTime *metav1.Time `json:"lastCacheUpdateTime,omitempty"`
}

// ProviderError is one reason a server does not call a provider.
type ProviderError struct {
	// Type classifies the error.
	Type string `json:"type,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
	// Retryable says whether the server will try again by itself.
	Retryable bool `json:"retryable,omitempty"`
	// ErrorTimestamp is when the error happened.
	ErrorTimestamp *metav1.Time `json:"errorTimestamp,omitempty"`
}
