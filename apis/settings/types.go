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

package settings

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodPreset injects environment variables, envFrom sources, volumes and
// volume mounts into the pods of its namespace that its selector matches,
// when they are created.
type PodPreset struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec PodPresetSpec
}

// PodPresetSpec is what a preset selects and what it injects.
type PodPresetSpec struct {
	// Selector chooses the pods, by label. An empty selector matches every pod.
	Selector metav1.LabelSelector
	// Env is added to the containers and init containers picked.
	Env []corev1.EnvVar
	// EnvFrom is added to the containers and init containers picked.
	EnvFrom []corev1.EnvFromSource
	// Volumes are added to the pod.
	Volumes []corev1.Volume
	// VolumeMounts are added to the containers and init containers picked.
	VolumeMounts []corev1.VolumeMount
	// Containers picks the containers that get env, envFrom and
	// volumeMounts; nil picks all of them.
	Containers *ContainerSelector
	// InitContainers picks the init containers that get env, envFrom and
	// volumeMounts; nil picks all of them.
	InitContainers *ContainerSelector
	// ConflictPolicy is what a conflict of this preset does; empty is
	// ConflictPolicySkipAll.
	ConflictPolicy ConflictPolicy
	// Mode is whether the preset changes pods or only reports what it
	// would change; empty is ModeEnforce.
	Mode Mode
}

// ContainerSelector picks containers by name: the named ones, or with
// Exclude every other one.
type ContainerSelector struct {
	Names   []string
	Exclude bool
}

// ConflictPolicy says what a preset's conflict does to the pod.
type ConflictPolicy string

// The conflict policies; the v1alpha1 documentation says what each does.
const (
	ConflictPolicySkipAll    ConflictPolicy = "SkipAll"
	ConflictPolicyPodWins    ConflictPolicy = "PodWins"
	ConflictPolicyPresetWins ConflictPolicy = "PresetWins"
	ConflictPolicyReject     ConflictPolicy = "Reject"
)

// Mode says whether a preset changes the pods it selects.
type Mode string

// The modes; the v1alpha1 documentation says what each does.
const (
	ModeEnforce Mode = "Enforce"
	ModeWarn    Mode = "Warn"
	ModeAudit   Mode = "Audit"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodPresetList is a list of PodPresets.
type PodPresetList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []PodPreset
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterPodPreset is a cluster-scoped PodPreset: it applies to the pods of
// every namespace its namespaceSelector matches.
type ClusterPodPreset struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec ClusterPodPresetSpec
}

// ClusterPodPresetSpec is a PodPresetSpec plus the namespaces it covers.
type ClusterPodPresetSpec struct {
	// NamespaceSelector chooses the namespaces, by their labels. An empty
	// selector matches every namespace.
	NamespaceSelector metav1.LabelSelector

	PodPresetSpec
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterPodPresetList is a list of ClusterPodPresets.
type ClusterPodPresetList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []ClusterPodPreset
}
