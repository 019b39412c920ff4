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

// Package mutation holds the LocationMutator's mutators and the system that
// runs them: Gatekeeper's Assign, AssignMetadata, ModifySet and AssignImage,
// read from the same manifests Gatekeeper takes, applied to an object in its
// unstructured form (map[string]interface{}) until it stops changing.
// MutateTyped runs the same walk on a typed object directly when every
// mutator involved gives exactly the same result there, which saves the
// round trip through the unstructured form.
//
// Unlike Gatekeeper, a mutator reports whether it really changed a value (it
// compares before it writes), so an object that needs nothing costs one walk
// per mutator and no copy. An explicit null is treated as a missing field, and
// numbers compare by value whether they were decoded as integers or floats.
package mutation
