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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of PodPreset and ClusterPodPreset.
const GroupName = "settings.k8s.io"

// SchemeGroupVersion is settings.k8s.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// SchemeBuilder collects the functions that add the v1alpha1 types, their
	// conversions and their defaulters to a scheme.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds the v1alpha1 types to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// The generated conversion and defaulting files register themselves with
	// localSchemeBuilder; only the hand-written parts are added here.
	localSchemeBuilder.Register(addKnownTypes, RegisterDefaults)
}

// Resource qualifies a resource name with the group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&PodPreset{},
		&PodPresetList{},
		&ClusterPodPreset{},
		&ClusterPodPresetList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
