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

package gatekeeper

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	gkmutation "github.com/open-policy-agent/gatekeeper/v3/pkg/mutation"
	gkparser "github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/path/parser"
	gktypes "github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/types"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// differenceCase is one case of the file both tests read; see its
// comment.
type differenceCase struct {
	Name       string            `json:"name"`
	Why        string            `json:"why"`
	Mutators   []json.RawMessage `json:"mutators"`
	Before     json.RawMessage   `json:"before"`
	Floats     bool              `json:"floats"`
	Admitkit   json.RawMessage   `json:"admitkit"`
	Gatekeeper struct {
		After     json.RawMessage `json:"after"`
		Error     string          `json:"error"`
		Mutations string          `json:"mutations"`
	} `json:"gatekeeper"`
}

// differencesFile holds the cases of the LocationMutator's
// TestGatekeeperDifferences (README.md, "Differences from Gatekeeper").
const differencesFile = "../../../plugin/pkg/admission/locationmutator/mutation/testdata/gatekeeper-differences.yaml"

// TestGatekeeperDifferences runs Gatekeeper on the cases of the
// LocationMutator's TestGatekeeperDifferences, from the same file, and
// checks that Gatekeeper v3.23.1 does what the file and the README say
// it does, so that the README's claims are measured, not remembered.
func TestGatekeeperDifferences(t *testing.T) {
	data, err := os.ReadFile(differencesFile)
	if err != nil {
		t.Fatal(err)
	}
	var cases []differenceCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatal(err)
	}
	// The annotations are written only with --mutation-annotations.
	annotations := gkmutation.MutationAnnotationsEnabled
	enabled := true
	gkmutation.MutationAnnotationsEnabled = &enabled
	t.Cleanup(func() { gkmutation.MutationAnnotationsEnabled = annotations })
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) { checkGatekeeperCase(t, tc) })
	}
	// README.md, "Trying a mutator before enforcing it": the mode
	// annotation means nothing to Gatekeeper. (The plugin's own tests show
	// a Warn mutator changing nothing.)
	t.Run("a mutator annotated Warn is enforced", testGatekeeperEnforcesWarn)
	t.Run("conflicting mutators are stored and not enforced", testGatekeeperConflicts)
	t.Run("a non-ASCII key does not round-trip", testGatekeeperNonASCIIKey)
}

// checkGatekeeperCase runs a case of the differences file through
// Gatekeeper's mutation system and compares what it does with what the
// file says.
func checkGatekeeperCase(t *testing.T, tc differenceCase) {
	var mutators []string
	for _, m := range tc.Mutators {
		mutators = append(mutators, string(m))
	}
	sys := gatekeeperSystem(t, mutators)
	obj := podFromCase(t, tc.Before, tc.Floats)
	_, err := sys.Mutate(t.Context(), &gktypes.Mutable{
		Object: obj, Namespace: prod, Username: "alice",
		Source: gktypes.SourceTypeOriginal, Operation: admissionv1.Create,
	})
	want := tc.Gatekeeper
	if want.Error != "" {
		if err == nil || !strings.Contains(err.Error(), want.Error) {
			t.Fatalf("error %v, want one containing %q", err, want.Error)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	got := obj.GetAnnotations()
	if mutations := got["gatekeeper.sh/mutations"]; want.Mutations != "" && mutations != want.Mutations {
		t.Errorf("gatekeeper.sh/mutations %q, want %q", mutations, want.Mutations)
	}
	// The rest of the object is compared without the two
	// annotations, whose ID differs on every run.
	delete(got, "gatekeeper.sh/mutations")
	delete(got, "gatekeeper.sh/mutation-id")
	obj.SetAnnotations(got)
	if len(got) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations")
	}
	if got, want := normalised(t, obj.Object), normalised(t, podFromCase(t, want.After, false).Object); !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

func testGatekeeperEnforcesWarn(t *testing.T) {
	warn := `{apiVersion: mutations.gatekeeper.sh/v1, kind: Assign,
metadata: {name: a, annotations: {locationmutator.admission.admitkit.io/mode: Warn}},
spec: {applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}], location: 'spec.containers[name: *].imagePullPolicy', parameters: {assign: {value: Always}}}}`
	sys := gatekeeperSystem(t, []string{warn})
	obj := unstructuredFromYAML(t, `{spec: {containers: [{name: app, image: nginx}]}}`)
	if _, err := sys.Mutate(t.Context(), &gktypes.Mutable{Object: obj, Namespace: prod, Source: gktypes.SourceTypeOriginal, Operation: admissionv1.Create}); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "containers")
	if len(containers) != 1 || containers[0].(map[string]any)["imagePullPolicy"] != "Always" {
		t.Fatalf("containers %v: want the Warn mutator enforced", containers)
	}
}

// podAssign is an Assign of Always at location on pods.
func podAssign(name, location string) string {
	return `{apiVersion: mutations.gatekeeper.sh/v1, kind: Assign, metadata: {name: ` + name + `},
spec: {applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}], location: '` + location + `', parameters: {assign: {value: Always}}}}`
}

func testGatekeeperConflicts(t *testing.T) {
	a := podAssign("as-object", "spec.containers.imagePullPolicy")
	b := podAssign("as-list", "spec.containers[name: *].imagePullPolicy")
	sys := gatekeeperSystem(t, []string{a})
	if err := sys.Upsert(gatekeeperMutator(t, b)); err == nil {
		t.Fatal("no conflict reported")
	}
	obj := unstructuredFromYAML(t, `{spec: {containers: [{name: app, image: nginx}]}}`)
	mutated, err := sys.Mutate(t.Context(), &gktypes.Mutable{Object: obj, Namespace: prod, Source: gktypes.SourceTypeOriginal, Operation: admissionv1.Create})
	if err != nil || mutated {
		t.Fatalf("mutated %v, err %v: want neither enforced", mutated, err)
	}
}

func testGatekeeperNonASCIIKey(t *testing.T) {
	p, err := gkparser.Parse(`metadata.annotations."größe"`)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := gkparser.Parse(p.String()); err == nil && again.String() == p.String() {
		t.Fatalf("%q round-trips", p.String())
	}
}

// podFromCase makes a pod web in namespace prod from a case's pod, its
// numbers int64 as Gatekeeper's webhook decodes a request's object, or
// float64 with floats.
func podFromCase(t *testing.T, raw json.RawMessage, floats bool) *unstructured.Unstructured {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	metadata, _ := doc["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
	}
	metadata["name"], metadata["namespace"] = "web", "prod"
	doc["apiVersion"], doc["kind"], doc["metadata"] = "v1", "Pod", metadata
	if floats {
		return &unstructured.Unstructured{Object: doc}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return obj
}

// unstructuredFromYAML makes a pod web in namespace prod with the spec
// in doc.
func unstructuredFromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(`{apiVersion: v1, kind: Pod, metadata: {name: web, namespace: prod}, ` + strings.TrimPrefix(doc, "{")))
	if err != nil {
		t.Fatal(err)
	}
	// As Gatekeeper's webhook decodes a request's object: integers as
	// int64.
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return obj
}

// normalised reads an object back through JSON, so that Gatekeeper's
// float64 80 and the expected int64 80 compare equal.
func normalised(t *testing.T, o map[string]any) any {
	t.Helper()
	data, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
