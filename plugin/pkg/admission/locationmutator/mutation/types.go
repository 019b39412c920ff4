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

package mutation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
)

// The manifests below follow Gatekeeper's mutations.gatekeeper.sh types
// field for field, so that a manifest written for Gatekeeper decodes
// unchanged (and one with a misspelt field does not decode at all).

// Group is the API group of the mutator manifests.
const Group = "mutations.gatekeeper.sh"

// Kinds of mutator, in the order the system runs them.
const (
	KindAssign         = "Assign"
	KindAssignImage    = "AssignImage"
	KindAssignMetadata = "AssignMetadata"
	KindModifySet      = "ModifySet"
)

// Assign sets the value at spec.location.
type Assign struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AssignSpec `json:"spec,omitempty"`
	// Status is accepted so that manifests exported from a cluster load,
	// and ignored.
	Status json.RawMessage `json:"status,omitempty"`
}

// AssignSpec is the spec of an Assign.
type AssignSpec struct {
	ApplyTo    []ApplyTo        `json:"applyTo,omitempty"`
	Match      match.Match      `json:"match,omitempty"`
	Location   string           `json:"location,omitempty"`
	Parameters AssignParameters `json:"parameters,omitempty"`
}

// AssignParameters are the parameters of an Assign.
type AssignParameters struct {
	PathTests []PathTest  `json:"pathTests,omitempty"`
	Assign    AssignField `json:"assign,omitempty"`
}

// AssignField says where an assigned value comes from: exactly one of its
// fields is set.
type AssignField struct {
	Value        *Value        `json:"value,omitempty"`
	FromMetadata *FromMetadata `json:"fromMetadata,omitempty"`
	ExternalData *ExternalData `json:"externalData,omitempty"`
}

// FromMetadata takes the value from the object's own name or namespace.
type FromMetadata struct {
	// Field is "namespace" or "name".
	Field string `json:"field,omitempty"`
}

// ExternalData is Gatekeeper's external data source. It decodes, so that
// the loader can refuse it with a clear message: no provider can be called
// from inside kube-apiserver's admission chain.
type ExternalData struct {
	Provider      string `json:"provider,omitempty"`
	DataSource    string `json:"dataSource,omitempty"`
	FailurePolicy string `json:"failurePolicy,omitempty"`
	Default       string `json:"default,omitempty"`
}

// PathTest is a condition on a prefix of the location.
type PathTest struct {
	SubPath   string    `json:"subPath,omitempty"`
	Condition Condition `json:"condition,omitempty"`
}

// Condition is MustExist or MustNotExist.
type Condition string

// The pathTest conditions.
const (
	MustExist    Condition = "MustExist"
	MustNotExist Condition = "MustNotExist"
)

// ApplyTo names the exact group/version/kinds (and operations) a mutator
// with a schema may change.
type ApplyTo struct {
	Groups     []string `json:"groups,omitempty"`
	Versions   []string `json:"versions,omitempty"`
	Kinds      []string `json:"kinds,omitempty"`
	Operations []string `json:"operations,omitempty"`
}

// AssignMetadata adds a label or an annotation when it is missing.
type AssignMetadata struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AssignMetadataSpec `json:"spec,omitempty"`
	// Status is accepted and ignored.
	Status json.RawMessage `json:"status,omitempty"`
}

// AssignMetadataSpec is the spec of an AssignMetadata.
type AssignMetadataSpec struct {
	Match      match.Match        `json:"match,omitempty"`
	Location   string             `json:"location,omitempty"`
	Parameters MetadataParameters `json:"parameters,omitempty"`
}

// MetadataParameters are the parameters of an AssignMetadata.
type MetadataParameters struct {
	Assign AssignField `json:"assign,omitempty"`
}

// ModifySet merges values into, or prunes them from, a list treated as a set.
type ModifySet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ModifySetSpec `json:"spec,omitempty"`
	// Status is accepted and ignored.
	Status json.RawMessage `json:"status,omitempty"`
}

// ModifySetSpec is the spec of a ModifySet.
type ModifySetSpec struct {
	ApplyTo    []ApplyTo           `json:"applyTo,omitempty"`
	Match      match.Match         `json:"match,omitempty"`
	Location   string              `json:"location,omitempty"`
	Parameters ModifySetParameters `json:"parameters,omitempty"`
}

// ModifySetParameters are the parameters of a ModifySet.
type ModifySetParameters struct {
	PathTests []PathTest `json:"pathTests,omitempty"`
	// Operation is "merge" (the default) or "prune".
	Operation string `json:"operation,omitempty"`
	Values    Values `json:"values,omitempty"`
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

// AssignImage replaces the domain, path or tag of an image reference.
type AssignImage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AssignImageSpec `json:"spec,omitempty"`
	// Status is accepted and ignored.
	Status json.RawMessage `json:"status,omitempty"`
}

// AssignImageSpec is the spec of an AssignImage.
type AssignImageSpec struct {
	ApplyTo    []ApplyTo             `json:"applyTo,omitempty"`
	Match      match.Match           `json:"match,omitempty"`
	Location   string                `json:"location,omitempty"`
	Parameters AssignImageParameters `json:"parameters,omitempty"`
}

// AssignImageParameters are the parameters of an AssignImage.
type AssignImageParameters struct {
	PathTests    []PathTest `json:"pathTests,omitempty"`
	AssignDomain string     `json:"assignDomain,omitempty"`
	AssignPath   string     `json:"assignPath,omitempty"`
	AssignTag    string     `json:"assignTag,omitempty"`
}

// Value is any JSON value. Numbers decode as int64 when they are integral
// and as float64 otherwise, the way unstructured Kubernetes objects hold
// them, so that an assigned 80 equals a containerPort of 80 in the object.
type Value struct {
	Value any
}

// UnmarshalJSON decodes any JSON value with numbers normalised. A number
// beyond float64's range is an error, as it is for encoding/json (and so
// for Gatekeeper).
func (v *Value) UnmarshalJSON(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var raw any
	if err := d.Decode(&raw); err != nil {
		return err
	}
	norm, err := normalizeNumbers(raw)
	if err != nil {
		return err
	}
	v.Value = norm
	return nil
}

// MarshalJSON encodes the held value.
func (v Value) MarshalJSON() ([]byte, error) { return json.Marshal(v.Value) }

func normalizeNumbers(v any) (any, error) {
	var err error
	switch v := v.(type) {
	case json.Number:
		return normalizeNumber(v)
	case map[string]any:
		for k, e := range v {
			if v[k], err = normalizeNumbers(e); err != nil {
				return nil, err
			}
		}
	case []any:
		for i, e := range v {
			if v[i], err = normalizeNumbers(e); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// normalizeNumber gives an int64 for an integral number that fits one, the
// way unstructured objects hold integers, and a float64 otherwise.
func normalizeNumber(n json.Number) (any, error) {
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil, fmt.Errorf("number %s is out of range", n)
	}
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), nil
	}
	return f, nil
}
