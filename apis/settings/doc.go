// +k8s:deepcopy-gen=package
// +groupName=settings.k8s.io

// Package settings holds the internal (hub) form of the settings.k8s.io API
// group: PodPreset and ClusterPodPreset. The registry validates and stores
// these; clients only ever see the versioned form in v1alpha1.
package settings
