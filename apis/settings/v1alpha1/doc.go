// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/admitkit/admitkit/apis/settings
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-model-package=io.k8s.api.settings.v1alpha1
// +groupName=settings.k8s.io

// Package v1alpha1 is the served version of settings.k8s.io: PodPreset, the
// API Kubernetes removed in 1.20, and ClusterPodPreset.
package v1alpha1
