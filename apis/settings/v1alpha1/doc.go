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

// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/admitkit/admitkit/apis/settings
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-model-package=io.k8s.api.settings.v1alpha1
// +groupName=settings.k8s.io

// Package v1alpha1 is the served version of settings.k8s.io: PodPreset, the
// API Kubernetes removed in 1.20, and ClusterPodPreset.
//
// Its defaulters (defaults.go) give a preset's volumes and env the values
// kube-apiserver gives the same fields of a pod. The PodPreset plugin skips
// an item that is already in the pod only when the two are deeply equal, so
// a preset defaulted differently from the pod would turn an identical volume
// into a conflict. kube-apiserver's own versions live in k8s.io/kubernetes,
// which this module must not import; defaulter-gen wires these into
// SetObjectDefaults_PodPreset and SetObjectDefaults_ClusterPodPreset, along
// with the +default markers of k8s.io/api itself (iSCSI, RBD, azureDisk,
// scaleIO, fileKeyRef).
package v1alpha1
