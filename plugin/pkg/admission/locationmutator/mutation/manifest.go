package mutation

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// versions lists the apiVersions Gatekeeper serves each kind at.
var versions = map[string][]string{
	KindAssign:         {"v1", "v1beta1", "v1alpha1"},
	KindAssignMetadata: {"v1", "v1beta1", "v1alpha1"},
	KindModifySet:      {"v1", "v1beta1", "v1alpha1"},
	KindAssignImage:    {"v1alpha1"},
}

// Decode reads one mutator manifest (YAML or JSON) and validates it. Its
// errors read `<Kind> "<name>": <field>: <problem>`, so a user can find the
// manifest and the field at fault.
func Decode(doc []byte) (*Mutator, error) {
	data, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("not a YAML or JSON document: %w", err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	who := fmt.Sprintf("%s %q", head.Kind, head.Metadata.Name)
	vs, ok := versions[head.Kind]
	if !ok {
		return nil, fmt.Errorf("%s: kind: %v", who, field.NotSupported(field.NewPath("kind"), head.Kind, []string{KindAssign, KindAssignImage, KindAssignMetadata, KindModifySet}).ErrorBody())
	}
	group, version, _ := strings.Cut(head.APIVersion, "/")
	if group != Group || !contains(vs, version) {
		want := make([]string, len(vs))
		for i, v := range vs {
			want[i] = Group + "/" + v
		}
		return nil, fmt.Errorf("%s: %v", who, field.NotSupported(field.NewPath("apiVersion"), head.APIVersion, want))
	}

	var (
		m    *Mutator
		errs field.ErrorList
	)
	switch head.Kind {
	case KindAssign:
		var obj Assign
		if err := strictUnmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", who, err)
		}
		m, errs = NewAssign(&obj)
	case KindAssignMetadata:
		var obj AssignMetadata
		if err := strictUnmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", who, err)
		}
		m, errs = NewAssignMetadata(&obj)
	case KindModifySet:
		var obj ModifySet
		if err := strictUnmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", who, err)
		}
		m, errs = NewModifySet(&obj)
	case KindAssignImage:
		var obj AssignImage
		if err := strictUnmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", who, err)
		}
		m, errs = NewAssignImage(&obj)
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("%s: %s", who, strings.Join(msgs, "; "))
	}
	return m, nil
}

// strictUnmarshal refuses unknown and duplicate fields and names them by
// their full path (`unknown field "spec.paramters"`).
func strictUnmarshal(data []byte, v any) error {
	strict, err := kjson.UnmarshalStrict(data, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
