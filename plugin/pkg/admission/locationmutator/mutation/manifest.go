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
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/admitkit/admitkit/plugin/internal/strictdecode"
	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
)

// Decode reads one mutator manifest (YAML or JSON) and validates it. Its
// errors read `<Kind> "<name>": <field>: <problem>`, so a user can find the
// manifest and the field at fault.
func Decode(doc []byte) (*Mutator, error) {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("not a YAML or JSON document: %w", err)
	}
	m, who, errs, err := decode(data)
	switch {
	case who == "":
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%s: %w", who, err)
	case len(errs) > 0:
		return nil, fmt.Errorf("%s: %w", who, errs.ToAggregate())
	}
	return m, nil
}

// DecodeJSON reads one mutator object in JSON, as the API serves it, and
// returns its problems as field errors, for a 422 Invalid naming the field.
func DecodeJSON(data []byte) (*Mutator, field.ErrorList) {
	m, _, errs, err := decode(data)
	if err != nil {
		// A value of the wrong JSON type: the decoder's message names the
		// field by its path under spec.
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{}, err.Error())}
	}
	return m, errs
}

// decode reads a JSON manifest. who names it (`<Kind> "<name>"`) once it is
// known to be an object; err is a document that is not one, or does not
// decode strictly.
func decode(data []byte) (_ *Mutator, who string, _ field.ErrorList, err error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, "", nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	who = fmt.Sprintf("%s %q", head.Kind, head.Metadata.Name)
	if head.Status != nil {
		if data, err = withoutStatus(data); err != nil {
			return nil, who, nil, err
		}
	}
	kind, ok := kindNamed(head.Kind)
	if !ok {
		return nil, who, field.ErrorList{field.NotSupported(field.NewPath("kind"), head.Kind, kindNames())}, nil
	}
	group, version, _ := strings.Cut(head.APIVersion, "/")
	if group != mutationsv1.Group || !slices.Contains(kind.Versions, version) {
		want := make([]string, len(kind.Versions))
		for i, v := range kind.Versions {
			want[i] = mutationsv1.Group + "/" + v
		}
		return nil, who, field.ErrorList{field.NotSupported(field.NewPath("apiVersion"), head.APIVersion, want)}, nil
	}
	m, errs, err := kind.decode(data)
	return m, who, errs, err
}

// withoutStatus drops the object's status. Status is written by the servers
// that enforce a mutator (Gatekeeper's pods, kube-apiservers), never by its
// author, so whatever shape it has must not stop an exported manifest or a
// live object from loading. The other top-level fields are still checked
// here for duplicates and strangers, and decoded strictly afterwards.
func withoutStatus(data []byte) ([]byte, error) {
	var obj struct {
		manifestFields
		Status json.RawMessage `json:"status"`
	}
	if err := strictdecode.JSON(data, &obj); err != nil {
		return nil, err
	}
	return json.Marshal(obj.manifestFields)
}

// manifestFields are the top-level fields of every mutator kind but status.
type manifestFields struct {
	APIVersion json.RawMessage `json:"apiVersion,omitempty"`
	Kind       json.RawMessage `json:"kind,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Spec       json.RawMessage `json:"spec,omitempty"`
}
