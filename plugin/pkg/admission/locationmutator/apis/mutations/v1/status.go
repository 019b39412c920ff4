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

// Package v1 holds the mutations.gatekeeper.sh/v1 types.
package v1

import "k8s.io/apimachinery/pkg/types"

// MutatorStatus is the status of every mutator kind: one entry per server
// that has seen the mutator.
type MutatorStatus struct {
	ByPod []MutatorPodStatus `json:"byPod,omitempty"`
}

// MutatorPodStatus says whether one server enforces a mutator.
type MutatorPodStatus struct {
	ID                 string         `json:"id,omitempty"`
	MutatorUID         types.UID      `json:"mutatorUID,omitempty"`
	Operations         []string       `json:"operations,omitempty"`
	Enforced           bool           `json:"enforced,omitempty"`
	Errors             []MutatorError `json:"errors,omitempty"`
	ObservedGeneration int64          `json:"observedGeneration,omitempty"`
}

// MutatorError is why a server does not enforce a mutator.
type MutatorError struct {
	Type    string `json:"type,omitempty"`
	Message string `json:"message"`
}
