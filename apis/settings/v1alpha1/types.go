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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodPreset is a policy resource that defines additional runtime
// requirements for a Pod.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=podpresets,scope=Namespaced,shortName=pp
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=unapproved, settings.k8s.io was removed from Kubernetes in 1.20 and is served again by admitkit: https://github.com/admitkit/admitkit"
// +kubebuilder:printcolumn:name="Selector",type=string,JSONPath=".spec.selector",description="The pods it applies to."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp",description="Time since the preset was created."
type PodPreset struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the selector and the data a preset injects.
	// +optional
	Spec PodPresetSpec `json:"spec,omitempty"`
}

// PodPresetSpec is a description of a pod preset.
type PodPresetSpec struct {
	// Selector is a label query over the pods the preset applies to, in the
	// preset's namespace. An empty selector selects every pod.
	// +optional
	Selector metav1.LabelSelector `json:"selector,omitempty"`

	// env, volumes and volumeMounts are atomic lists, not maps keyed by
	// name or mountPath: as maps, a CustomResourceDefinition's schema
	// refuses a repeated key itself (`spec.volumes[1]: Duplicate value`)
	// before SettingsValidation sees the preset, where in-process the
	// registry's validation names the field (`spec.volumes[1].name`), and
	// it refuses a repeated env name that pods, and in-process presets,
	// accept. Atomic, the registry's validation is the one judge on both
	// hosts.

	// Env defines the collection of EnvVar to inject into containers.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// EnvFrom defines the collection of EnvFromSource to inject into containers.
	// +optional
	// +listType=atomic
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// Volumes defines the collection of Volume to inject into the pod.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +listType=atomic
	Volumes []corev1.Volume `json:"volumes,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// VolumeMounts defines the collection of VolumeMount to inject into containers.
	// +optional
	// +patchMergeKey=mountPath
	// +patchStrategy=merge
	// +listType=atomic
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty" patchStrategy:"merge" patchMergeKey:"mountPath"`

	// Containers picks the containers (spec.containers) that get env, envFrom
	// and volumeMounts. Unset: every container, as presets have always done.
	// +optional
	Containers *ContainerSelector `json:"containers,omitempty"`

	// InitContainers picks the init containers (spec.initContainers),
	// restartable sidecars included, that get env, envFrom and volumeMounts.
	// Unset: every init container.
	// +optional
	InitContainers *ContainerSelector `json:"initContainers,omitempty"`

	// ConflictPolicy is what happens when an item of this preset conflicts
	// with the pod's own (same env name, envFrom source, volume name, mount
	// name or mount path, different value) or with another preset's:
	// SkipAll (unset means SkipAll) admits the pod without any of its
	// presets, with a warning and a PodPresetConflict Event; PodWins keeps
	// the value already there and applies the rest; PresetWins replaces the
	// pod's own value with this preset's; Reject refuses the pod.
	// +optional
	ConflictPolicy ConflictPolicy `json:"conflictPolicy,omitempty"`
	// Mode is whether the preset changes the pods it selects. Enforce
	// (unset means Enforce) changes them. Warn and Audit never change a
	// pod: the plugin works out what the preset would change if it were
	// enforced, with the enforced presets as they are, and records it in
	// the request's audit annotation; Warn also returns it to the client
	// as an admission warning, which kubectl prints. A preset can so be
	// tried on real traffic before it is enforced.
	// +optional
	Mode Mode `json:"mode,omitempty"`
}

// ContainerSelector picks containers by name. Names are matched exactly:
// container names are DNS labels, so no name can be mistaken for a pattern.
type ContainerSelector struct {
	// Names are the containers picked, or with exclude, the ones left out.
	// An empty list with exclude unset picks no container.
	// +optional
	// +listType=atomic
	Names []string `json:"names,omitempty"`

	// Exclude picks every container except those in names.
	// +optional
	Exclude bool `json:"exclude,omitempty"`
}

// ConflictPolicy says what a preset's conflict does to the pod.
// +enum
type ConflictPolicy string

const (
	// ConflictPolicySkipAll admits the pod without any of its presets, with
	// a warning and a PodPresetConflict Event: the behaviour of every preset
	// that does not set a policy.
	ConflictPolicySkipAll ConflictPolicy = "SkipAll"
	// ConflictPolicyPodWins keeps the value already in the pod and applies
	// the preset's other items.
	ConflictPolicyPodWins ConflictPolicy = "PodWins"
	// ConflictPolicyPresetWins replaces the pod's own value with the
	// preset's.
	ConflictPolicyPresetWins ConflictPolicy = "PresetWins"
	// ConflictPolicyReject refuses the pod.
	ConflictPolicyReject ConflictPolicy = "Reject"
)

// Mode says whether a preset changes the pods it selects.
// +enum
type Mode string

const (
	// ModeEnforce applies the preset: the behaviour of every preset that
	// does not set a mode.
	ModeEnforce Mode = "Enforce"
	// ModeWarn leaves the pod as it is and tells the client, in an
	// admission warning, and the audit log what the preset would change.
	ModeWarn Mode = "Warn"
	// ModeAudit leaves the pod as it is and records in the audit log
	// what the preset would change.
	ModeAudit Mode = "Audit"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodPresetList is a list of PodPreset objects.
//
// +kubebuilder:object:root=true
type PodPresetList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is a list of pod presets.
	Items []PodPreset `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterPodPreset is a PodPreset for every namespace its namespaceSelector
// selects: it injects the same data, under the same rules, into the pods
// its selector matches there.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=clusterpodpresets,scope=Cluster,shortName=cpp
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=unapproved, settings.k8s.io was removed from Kubernetes in 1.20 and is served again by admitkit: https://github.com/admitkit/admitkit"
// +kubebuilder:printcolumn:name="Namespace Selector",type=string,JSONPath=".spec.namespaceSelector",description="The namespaces it applies in."
// +kubebuilder:printcolumn:name="Selector",type=string,JSONPath=".spec.selector",description="The pods it applies to."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp",description="Time since the preset was created."
type ClusterPodPreset struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the selectors and the data a cluster preset injects.
	// +optional
	Spec ClusterPodPresetSpec `json:"spec,omitempty"`
}

// ClusterPodPresetSpec is a PodPresetSpec that also selects namespaces.
type ClusterPodPresetSpec struct {
	// NamespaceSelector is a label query over namespaces. An empty selector
	// selects every namespace.
	// +optional
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	PodPresetSpec `json:",inline"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterPodPresetList is a list of ClusterPodPreset objects.
//
// +kubebuilder:object:root=true
type ClusterPodPresetList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is a list of cluster pod presets.
	Items []ClusterPodPreset `json:"items"`
}
