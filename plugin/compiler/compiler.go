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

// Package compiler turns PodPresets, ClusterPodPresets and Gatekeeper
// mutators into admissionregistration.k8s.io/v1 MutatingAdmissionPolicies
// (and, where a preset or mutator must refuse, warn or annotate, a
// ValidatingAdmissionPolicy), so that kube-apiserver 1.36 and later applies
// them in-process, with no webhook hop. It reads the plugins' own parsed
// forms; an object it cannot compile exactly is refused, with the field and
// the reason, and stays with the plugin.
package compiler

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// Sources are the objects users write, as the plugins read them.
type Sources struct {
	PodPresets        []settingsv1alpha1.PodPreset
	ClusterPodPresets []settingsv1alpha1.ClusterPodPreset
	// Mutators are decoded and validated by the LocationMutator's own
	// decoder (mutation.Decode, mutation.DecodeJSON).
	Mutators []*mutation.Mutator
	// Held are mutators the plugin runs that are never compiled: the
	// LocationMutator configuration's own. A compiled mutator whose order
	// with one of them may matter is refused, and left to the plugin too.
	Held []*mutation.Mutator

	// overBudget are the sources Compile refused for their policy's CEL
	// cost (boundCost), with why.
	overBudget map[Source]field.ErrorList
}

// Source names one object Compile read.
type Source struct {
	// Kind is PodPreset, ClusterPodPreset or the mutator's kind (Assign,
	// AssignMetadata, ModifySet, AssignImage).
	Kind      string
	Namespace string
	Name      string
}

// Refusal is an object that did not compile, and why, by field.
type Refusal struct {
	Source Source
	Errs   field.ErrorList
}

// Result is what Compile made: the policies and bindings to apply, which
// objects they carry and which objects stay with the plugins.
type Result struct {
	MutatingPolicies   []admissionregistrationv1.MutatingAdmissionPolicy
	MutatingBindings   []admissionregistrationv1.MutatingAdmissionPolicyBinding
	ValidatingPolicies []admissionregistrationv1.ValidatingAdmissionPolicy
	ValidatingBindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// Compiled lists every object the policies carry.
	Compiled []Source
	// Refused lists every object that did not compile.
	Refused []Refusal
}

// Compile compiles every object in src that compiles exactly, and within
// kube-apiserver's CEL cost limits (boundCost), and refuses the rest.
func Compile(src Sources) Result {
	src.overBudget = nil
	return boundCost(src)
}
