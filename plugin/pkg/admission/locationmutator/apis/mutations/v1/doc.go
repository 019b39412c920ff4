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

// Package v1 holds the mutator kinds of Gatekeeper's mutations.gatekeeper.sh
// API group as the LocationMutator reads them: Assign, AssignMetadata and
// ModifySet at v1, and every spec and status type, which v1beta1 and
// v1alpha1 (where AssignImage lives) reuse. The field names and JSON shape
// follow Gatekeeper's, so that a manifest or a stored object written for
// Gatekeeper decodes unchanged.
//
// The kubebuilder markers are read by controller-gen, which writes the
// CustomResourceDefinitions in ../../crds/manifests (hack/update-codegen.sh).
// The types are decoded strictly from YAML or JSON and never registered in a
// scheme, so they need no generated code.
//
// +groupName=mutations.gatekeeper.sh
package v1
