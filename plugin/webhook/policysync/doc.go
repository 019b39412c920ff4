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

// Package policysync is the webhook server's compiled-policies mode
// (admitkit webhook --compile-policies): a controller that keeps
// MutatingAdmissionPolicies and ValidatingAdmissionPolicies, compiled by
// plugin/compiler from the cluster's PodPresets, ClusterPodPresets and
// Gatekeeper mutators, in step with those objects as they are applied,
// edited and deleted, and the view that leaves the webhook plugins exactly
// the objects the policies do not carry. When what the policies carry
// changes, the plugins' watches go on and tell their informers what left
// or joined the view (see filter.go): the plugins are never left without a
// watch while client-go's reflector would back off before listing again.
//
// The objects stay the source of truth. Every replica runs the controller:
// each compiles the whole set from what it observes and server-side-applies
// the result under one field manager, so two replicas with the same input
// write the same bytes, and a replica whose input is behind is corrected by
// the other's next pass (no leader: the design's "nothing assumes a single
// writer"). Every object written carries SetLabel (the set's hash), the
// number of objects in the set and the sources the set carries, so that a
// replica knows what kube-apiserver runs from what it observes in the API,
// not from its own guess (see Carried).
package policysync
