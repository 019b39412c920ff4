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

// Package v1beta1 holds Gatekeeper's external data Provider
// (externaldata.gatekeeper.sh/v1beta1) as the LocationMutator reads it: the
// HTTPS endpoint an Assign or AssignMetadata with externalData asks for
// values. Field names and JSON shape are Gatekeeper's, so a Provider
// manifest written for Gatekeeper applies unchanged. The wire format the
// provider speaks is the client's (../../../externaldata).
//
// The kubebuilder markers are read by controller-gen, which writes the
// CustomResourceDefinition in ../../../crds/manifests
// (hack/update-codegen.sh). The types are decoded from JSON and never
// registered in a scheme, so they need no generated code.
//
// +groupName=externaldata.gatekeeper.sh
package v1beta1
