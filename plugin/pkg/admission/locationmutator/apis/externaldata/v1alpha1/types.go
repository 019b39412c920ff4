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

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/externaldata/v1beta1"
)

// Provider is an HTTPS endpoint that answers keys with values. At v1alpha1
// it has the same fields as at v1beta1.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=providers,scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="externaldata.gatekeeper.sh/v1alpha1 is deprecated. Use externaldata.gatekeeper.sh/v1beta1 instead."
type Provider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1beta1.ProviderSpec   `json:"spec,omitempty"`
	Status v1beta1.ProviderStatus `json:"status,omitempty"`
}
