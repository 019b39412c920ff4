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

package crds

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	externaldatav1beta1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/externaldata/v1beta1"
	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// The CRDs serve what mutation.Kinds declares, the one list of kinds the
// decoder and the live watch read: a kind, its plural, its versions and,
// first of them, the one stored. controller-gen makes the CRDs from the
// types' markers, which cannot read a Go value, so this is where the two
// are held together.
func TestManifests(t *testing.T) {
	type served struct {
		group, kind, plural, singular string
		versions                      []string
		storage                       string
	}
	want := map[string]served{}
	for _, k := range mutation.Kinds {
		want[k.Resource+"."+mutationsv1.Group] = served{mutationsv1.Group, k.Name, k.Resource, k.Resource, slices.Sorted(slices.Values(k.Versions)), k.Versions[0]}
	}
	// Gatekeeper's Provider, at the versions Gatekeeper serves.
	want[externaldatav1beta1.Resource+"."+externaldatav1beta1.Group] = served{externaldatav1beta1.Group, externaldatav1beta1.Kind, externaldatav1beta1.Resource, "provider", []string{"v1alpha1", "v1beta1"}, "v1beta1"}
	crds, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != len(want) {
		t.Fatalf("%d CRDs, want %d", len(crds), len(want))
	}
	for _, crd := range crds {
		t.Run(crd.GetName(), func(t *testing.T) {
			w, ok := want[crd.GetName()]
			if !ok {
				t.Fatalf("unexpected CRD %s", crd.GetName())
			}
			str := func(fields ...string) string {
				s, _, _ := unstructured.NestedString(crd.Object, fields...)
				return s
			}
			if crd.GetAPIVersion() != "apiextensions.k8s.io/v1" {
				t.Errorf("apiVersion %s", crd.GetAPIVersion())
			}
			for _, c := range []struct{ got, want string }{
				{str("spec", "group"), w.group},
				{str("spec", "scope"), "Cluster"},
				{str("spec", "names", "kind"), w.kind},
				{str("spec", "names", "listKind"), w.kind + "List"},
				{str("spec", "names", "plural"), w.plural},
				{str("spec", "names", "singular"), w.singular},
			} {
				if c.got != c.want {
					t.Errorf("got %q, want %q", c.got, c.want)
				}
			}
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			var names, storage []string
			for _, v := range versions {
				v := v.(map[string]any)
				name := v["name"].(string)
				names = append(names, name)
				if v["storage"] == true {
					storage = append(storage, name)
				}
				if v["served"] != true {
					t.Errorf("%s not served", name)
				}
				if _, ok, _ := unstructured.NestedMap(v, "subresources", "status"); !ok {
					t.Errorf("%s has no status subresource", name)
				}
				if typ, _, _ := unstructured.NestedString(v, "schema", "openAPIV3Schema", "type"); typ != "object" {
					t.Errorf("%s schema type %q", name, typ)
				}
			}
			if !slices.Equal(names, w.versions) {
				t.Errorf("versions %v, want %v", names, w.versions)
			}
			if !slices.Equal(storage, []string{w.storage}) {
				t.Errorf("storage versions %v, want %s", storage, w.storage)
			}
		})
	}
}

// Every mutator this repository ships as an example or test manifest fits
// the schema of its kind and version (no field the schema would prune, no
// type, enum or pattern it would refuse), and decodes; so does a status in
// Gatekeeper's shape.
func TestManifestsFitExamples(t *testing.T) {
	schemas := map[string]map[string]any{} // "<kind>/<version>" -> openAPIV3Schema
	crds, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			v := v.(map[string]any)
			s, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema")
			schemas[kind+"/"+v["name"].(string)] = s
		}
	}
	files, err := filepath.Glob("../testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../../../../hack/examples/mutators.yaml", "../../../../../hack/examples/admission-config.yaml", "../../../../../hack/examples/tag-to-digest.yaml")
	var mutators []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range splitYAML(t, f, data) {
			mutators = findMutators(doc, mutators)
		}
	}
	mutators = append(mutators, map[string]any{
		"apiVersion": "mutations.gatekeeper.sh/v1", "kind": "Assign",
		"metadata": map[string]any{"name": "with-status", "generation": int64(2)},
		"spec": map[string]any{
			"applyTo":    []any{map[string]any{"groups": []any{""}, "versions": []any{"v1"}, "kinds": []any{"Pod"}, "operations": []any{"*"}}},
			"match":      map[string]any{"namespaces": []any{"kube-*"}, "name": "*web*", "source": "Original", "scope": "Namespaced"},
			"location":   "spec.priority",
			"parameters": map[string]any{"assign": map[string]any{"value": int64(3)}},
		},
		"status": map[string]any{"byPod": []any{map[string]any{
			"id": "kube-apiserver-5fb2", "mutatorUID": "2f5b0b1e-7f0e-4b8c-9d0a-6f1c2d3e4f50", "observedGeneration": int64(2),
			"operations": []any{"mutation-webhook"}, "enforced": false,
			"errors": []any{map[string]any{"type": "schema_conflict", "message": `conflicts with ModifySet "args"`}},
		}}},
	})
	if len(mutators) < 10 {
		t.Fatalf("found only %d example mutators", len(mutators))
	}
	seen := map[string]bool{}
	for _, m := range mutators {
		u := &unstructured.Unstructured{Object: m}
		key := u.GetKind() + "/" + u.GroupVersionKind().Version
		seen[key] = true
		t.Run(key+"/"+u.GetName(), func(t *testing.T) {
			s, ok := schemas[key]
			if !ok {
				t.Fatalf("no CRD serves %s", key)
			}
			for _, e := range fits(s, m, "") {
				t.Error(e)
			}
			data, err := yaml.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mutation.Decode(data); err != nil {
				t.Errorf("Decode: %v", err)
			}
		})
	}
	for _, k := range []string{"Assign/v1", "AssignMetadata/v1", "ModifySet/v1", "AssignImage/v1alpha1"} {
		if !seen[k] {
			t.Errorf("no example of %s", k)
		}
	}
}

// The checker refuses what the apiserver would: a test of the test.
func TestFits(t *testing.T) {
	s := func() map[string]any {
		crds, err := Manifests()
		if err != nil {
			t.Fatal(err)
		}
		versions, _, _ := unstructured.NestedSlice(crds[3].Object, "spec", "versions") // modifyset
		sch, _, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema")
		return sch
	}()
	base := func() map[string]any {
		return map[string]any{"apiVersion": "mutations.gatekeeper.sh/v1", "kind": "ModifySet", "metadata": map[string]any{"name": "s"},
			"spec": map[string]any{"location": "spec.x", "parameters": map[string]any{"operation": "merge", "values": map[string]any{"fromList": []any{"a", int64(1), map[string]any{"k": "v"}}}}}}
	}
	tests := []struct {
		name   string
		change func(m map[string]any)
		want   string
	}{
		{"fits", func(map[string]any) {}, ""},
		{"unknown field", func(m map[string]any) { m["spec"].(map[string]any)["paramters"] = map[string]any{} }, "spec.paramters: not in the schema"},
		{"enum", func(m map[string]any) {
			m["spec"].(map[string]any)["parameters"].(map[string]any)["operation"] = "replace"
		}, "spec.parameters.operation: \"replace\" not one of"},
		{"type", func(m map[string]any) { m["spec"].(map[string]any)["location"] = int64(1) }, "spec.location: int64, want string"},
		{"pattern", func(m map[string]any) {
			m["spec"].(map[string]any)["match"] = map[string]any{"namespaces": []any{"Kube_System"}}
		}, "spec.match.namespaces[0]: \"Kube_System\" does not match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := base()
			tc.change(m)
			errs := fits(s, m, "")
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("errors %v", errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
				t.Fatalf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

func splitYAML(t *testing.T, name string, data []byte) []map[string]any {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []map[string]any
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
}

// findMutators collects every object of the mutations.gatekeeper.sh group
// in v, at any depth (an AdmissionConfiguration holds them inline).
func findMutators(v any, out []map[string]any) []map[string]any {
	switch v := v.(type) {
	case map[string]any:
		if av, _ := v["apiVersion"].(string); strings.HasPrefix(av, "mutations.gatekeeper.sh/") {
			return append(out, v)
		}
		for _, e := range v {
			out = findMutators(e, out)
		}
	case []any:
		for _, e := range v {
			out = findMutators(e, out)
		}
	}
	return out
}

// fits checks v against a structural schema the way the apiserver's pruning
// and validation would for what our CRDs use: types, properties (a field
// the schema does not name would be pruned), additionalProperties, items,
// enum, pattern and x-kubernetes-preserve-unknown-fields.
func fits(s map[string]any, v any, at string) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", strings.TrimPrefix(at, "."), fmt.Sprintf(format, args...)))
	}
	switch typ, _ := s["type"].(string); typ {
	case "":
	case "object":
		if _, ok := v.(map[string]any); !ok {
			fail("%T, want an object", v)
			return errs
		}
	case "array":
		if _, ok := v.([]any); !ok {
			fail("%T, want an array", v)
			return errs
		}
	case "string":
		if _, ok := v.(string); !ok {
			fail("%T, want string", v)
			return errs
		}
	case "integer":
		f, ok := v.(float64)
		if _, isInt := v.(int64); !isInt && !(ok && f == math.Trunc(f)) {
			fail("%T, want integer", v)
			return errs
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			fail("%T, want boolean", v)
			return errs
		}
	default:
		fail("schema type %q unknown to this checker", typ)
		return errs
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		fail("%q not one of %v", v, enum)
	}
	if p, ok := s["pattern"].(string); ok {
		if str, _ := v.(string); !regexp.MustCompile(p).MatchString(str) {
			fail("%q does not match %s", str, p)
		}
	}
	preserve := s["x-kubernetes-preserve-unknown-fields"] == true
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		additional, _ := s["additionalProperties"].(map[string]any)
		for k, e := range v {
			switch p, ok := props[k].(map[string]any); {
			case ok:
				errs = append(errs, fits(p, e, at+"."+k)...)
			case additional != nil:
				errs = append(errs, fits(additional, e, at+"."+k)...)
			case preserve || at == ".metadata": // the apiserver checks metadata itself
			default:
				errs = append(errs, fmt.Errorf("%s: not in the schema", strings.TrimPrefix(at+"."+k, ".")))
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range v {
				errs = append(errs, fits(items, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return errs
}
