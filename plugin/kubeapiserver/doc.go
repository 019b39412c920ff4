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

// Package kubeapiserver builds admitkit into a kube-apiserver: it serves
// settings.k8s.io/v1alpha1 (PodPresets and ClusterPodPresets) beside the
// built-in APIs, gives the admission plugins their settings informers and
// the server's identity, and installs what the plugins need at start-up
// (the LocationMutator's mutator CRDs and the PodPreset ClusterRoles).
//
// It needs only the staging libraries, so a fork of kube-apiserver calls it
// from its copy of cmd/kube-apiserver/app:
//
//   - an init function: AddToScheme(legacyscheme.Scheme);
//   - NewConfig: New before BuildGenericConfig, which takes ResourceConfig
//     and OpenAPIDefinitions in place of kube-apiserver's own, and
//     Server.Configure once BuildGenericConfig has returned, whose
//     initializers go to CreateKubeAPIServerConfig;
//   - CreateServerChain: Server.Install once the kube-apiserver's APIs
//     exist, before the aggregator is created;
//   - apiVersionPriorities: an entry for SettingsGroupVersion, so that
//     discovery lists the group.
package kubeapiserver
