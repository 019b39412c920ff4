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

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
)

// Group is the API group of the mutator kinds.
const Group = "mutations.gatekeeper.sh"

// Kinds of mutator, in the order the LocationMutator runs them.
const (
	KindAssign         = "Assign"
	KindAssignImage    = "AssignImage"
	KindAssignMetadata = "AssignMetadata"
	KindModifySet      = "ModifySet"
)

// Assign sets the value at spec.location of the objects it matches.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=assign,scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
type Assign struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AssignSpec    `json:"spec,omitempty"`
	Status MutatorStatus `json:"status,omitempty"`
}

// AssignSpec says which objects an Assign changes, where and to what.
type AssignSpec struct {
	// ApplyTo lists the exact groups, versions and kinds the mutator may
	// change: the location implies a schema, which only these kinds have.
	ApplyTo []ApplyTo `json:"applyTo,omitempty"`
	// Match limits the objects the mutator applies to. Every criterion must
	// hold; a criterion left out holds for every object.
	Match match.Match `json:"match,omitempty"`
	// Location is the path to the value to set, for example
	// `spec.containers[name: *].imagePullPolicy`.
	Location string `json:"location,omitempty"`
	// Parameters hold the value and the conditions on the path.
	Parameters AssignParameters `json:"parameters,omitempty"`
}

// AssignParameters are the parameters of an Assign.
type AssignParameters struct {
	// PathTests make the mutation depend on whether a prefix of the
	// location exists.
	PathTests []PathTest `json:"pathTests,omitempty"`
	// Assign says where the value comes from.
	Assign AssignField `json:"assign,omitempty"`
}

// AssignField says where an assigned value comes from: exactly one of its
// fields is set.
type AssignField struct {
	// Value is the value to set, of any JSON type.
	//
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Value *Value `json:"value,omitempty"`
	// FromMetadata takes the value from the object's own metadata.
	FromMetadata *FromMetadata `json:"fromMetadata,omitempty"`
	// ExternalData asks an external data provider (an
	// externaldata.gatekeeper.sh Provider) for the value.
	ExternalData *ExternalData `json:"externalData,omitempty"`
}

// FromMetadata takes the value from the object's name or namespace.
type FromMetadata struct {
	// Field is "namespace" or "name".
	Field string `json:"field,omitempty"`
}

// ExternalData is Gatekeeper's external data source: the value written is
// what the provider answers for the key.
type ExternalData struct {
	// Provider is the name of the Provider to ask.
	//
	// +kubebuilder:validation:Required
	Provider string `json:"provider,omitempty"`
	// DataSource is the key sent: ValueAtLocation, the string at the
	// location, or Username, the requester's name.
	//
	// +kubebuilder:validation:Enum=ValueAtLocation;Username
	// +kubebuilder:default=ValueAtLocation
	DataSource string `json:"dataSource,omitempty"`
	// FailurePolicy says what to do when the provider fails or has no
	// answer for the key: Fail refuses the object, Ignore leaves the
	// value as it is, UseDefault writes Default.
	//
	// +kubebuilder:validation:Enum=UseDefault;Ignore;Fail
	// +kubebuilder:default=Fail
	FailurePolicy string `json:"failurePolicy,omitempty"`
	// Default is the value written when the provider fails and
	// FailurePolicy is UseDefault.
	Default string `json:"default,omitempty"`
}

// PathTest is a condition on a prefix of the location: when it does not
// hold, the mutator leaves the object alone.
type PathTest struct {
	// SubPath is a prefix of the location. Its globs take the values the
	// location's globs take.
	SubPath string `json:"subPath,omitempty"`
	// Condition is MustExist or MustNotExist.
	Condition Condition `json:"condition,omitempty"`
}

// Condition is what a PathTest requires of its subPath.
//
// +kubebuilder:validation:Enum=MustExist;MustNotExist
type Condition string

// The pathTest conditions.
const (
	MustExist    Condition = "MustExist"
	MustNotExist Condition = "MustNotExist"
)

// ApplyTo names group/version/kinds (and operations) a mutator with a
// schema may change. An empty list of operations means CREATE and UPDATE.
type ApplyTo struct {
	Groups   []string `json:"groups,omitempty"`
	Versions []string `json:"versions,omitempty"`
	Kinds    []string `json:"kinds,omitempty"`
	// Operations are CREATE, UPDATE, or "*" for both.
	//
	// +kubebuilder:validation:items:Enum=CREATE;UPDATE;*
	Operations []string `json:"operations,omitempty"`
}

// AssignMetadata adds a label or an annotation when the object does not have
// it yet.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=assignmetadata,scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
type AssignMetadata struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AssignMetadataSpec `json:"spec,omitempty"`
	Status MutatorStatus      `json:"status,omitempty"`
}

// AssignMetadataSpec says which objects an AssignMetadata changes, which
// label or annotation and to what.
type AssignMetadataSpec struct {
	// Match limits the objects the mutator applies to.
	Match match.Match `json:"match,omitempty"`
	// Location is `metadata.labels.<key>` or `metadata.annotations.<key>`.
	Location string `json:"location,omitempty"`
	// Parameters hold the value.
	Parameters MetadataParameters `json:"parameters,omitempty"`
}

// MetadataParameters are the parameters of an AssignMetadata.
type MetadataParameters struct {
	// Assign says where the value comes from; it must be a string.
	Assign AssignField `json:"assign,omitempty"`
}

// ModifySet merges values into, or prunes them from, a list treated as a
// set, such as a container's args.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=modifyset,scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
type ModifySet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ModifySetSpec `json:"spec,omitempty"`
	Status MutatorStatus `json:"status,omitempty"`
}

// ModifySetSpec says which objects a ModifySet changes, which list and how.
type ModifySetSpec struct {
	// ApplyTo lists the exact groups, versions and kinds the mutator may
	// change.
	ApplyTo []ApplyTo `json:"applyTo,omitempty"`
	// Match limits the objects the mutator applies to.
	Match match.Match `json:"match,omitempty"`
	// Location is the path to the list, for example
	// `spec.containers[name: main].args`.
	Location string `json:"location,omitempty"`
	// Parameters hold the values and the operation.
	Parameters ModifySetParameters `json:"parameters,omitempty"`
}

// ModifySetParameters are the parameters of a ModifySet.
type ModifySetParameters struct {
	// PathTests make the mutation depend on whether a prefix of the
	// location exists.
	PathTests []PathTest `json:"pathTests,omitempty"`
	// Operation is "merge" (add the values that are missing) or "prune"
	// (remove the values that are present).
	//
	// +kubebuilder:validation:Enum=merge;prune
	// +kubebuilder:default=merge
	Operation string `json:"operation,omitempty"`
	// Values holds the members to merge or prune, as `values.fromList`.
	//
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Values Values `json:"values,omitempty"`
}

// The ModifySet operations.
const (
	OperationMerge = "merge"
	OperationPrune = "prune"
)

// Values holds the members of a ModifySet.
type Values struct {
	FromList []Value `json:"fromList,omitempty"`
}

// AssignImageSpec says which objects an AssignImage (a v1alpha1 kind)
// changes, which image reference and which of its parts.
type AssignImageSpec struct {
	// ApplyTo lists the exact groups, versions and kinds the mutator may
	// change.
	ApplyTo []ApplyTo `json:"applyTo,omitempty"`
	// Match limits the objects the mutator applies to.
	Match match.Match `json:"match,omitempty"`
	// Location is the path to an image reference, for example
	// `spec.containers[name: *].image`.
	Location string `json:"location,omitempty"`
	// Parameters say which parts of the reference to replace.
	Parameters AssignImageParameters `json:"parameters,omitempty"`
}

// AssignImageParameters are the parameters of an AssignImage.
type AssignImageParameters struct {
	// PathTests make the mutation depend on whether a prefix of the
	// location exists.
	PathTests []PathTest `json:"pathTests,omitempty"`
	// AssignDomain replaces the registry domain, without a trailing slash.
	AssignDomain string `json:"assignDomain,omitempty"`
	// AssignPath replaces the repository path.
	AssignPath string `json:"assignPath,omitempty"`
	// AssignTag replaces the tag (`:tag`) or digest (`@sha256:...`).
	AssignTag string `json:"assignTag,omitempty"`
}

// MutatorStatus is the status of every mutator kind: one entry per
// enforcing server.
type MutatorStatus struct {
	ByPod []MutatorPodStatus `json:"byPod,omitempty"`
}

// MutatorPodStatus is what one server (a Gatekeeper pod, or a
// kube-apiserver) reports about a mutator.
type MutatorPodStatus struct {
	// ID identifies the reporting server.
	ID string `json:"id,omitempty"`
	// MutatorUID is the UID of the mutator object the entry is about.
	MutatorUID types.UID `json:"mutatorUID,omitempty"`
	// Operations the reporting server performs.
	Operations []string `json:"operations,omitempty"`
	// Enforced says whether the server applies the mutator.
	Enforced bool `json:"enforced,omitempty"`
	// Errors say why the mutator is not enforced.
	Errors []MutatorError `json:"errors,omitempty"`
	// ObservedGeneration is the generation of the mutator the entry
	// describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// MutatorError is one reason a server does not enforce a mutator.
type MutatorError struct {
	// Type classifies the error, for example a schema conflict.
	Type string `json:"type,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
}
