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
// read from the same manifests Gatekeeper takes, applied to an object until
// it stops changing. Each kind is a type of its own (assignOp,
// assignMetadataOp, modifySetOp, assignImageOp) that decides what is
// written at the end of a location; one walker (walk.go) follows locations,
// through an object in its unstructured form (unstructured.go, for custom
// resources) or a typed one changed in place (typed.go, for built-in
// kinds), both read as their JSON form.
//
// Unlike Gatekeeper, a mutator reports whether it really changed a value (it
// compares before it writes), so an object that needs nothing costs one walk
// per mutator and no copy. An explicit null is treated as a missing field, and
// numbers compare by value whether they were decoded as integers or floats.
package mutation
