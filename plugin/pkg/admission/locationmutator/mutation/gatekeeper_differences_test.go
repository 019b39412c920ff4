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
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// differenceCase is one case of testdata/gatekeeper-differences.yaml,
// which test/bench/gatekeeper's TestGatekeeperDifferences reads too.
type differenceCase struct {
	Name       string            `json:"name"`
	Why        string            `json:"why"`
	Mutators   []json.RawMessage `json:"mutators"`
	Before     json.RawMessage   `json:"before"`
	Floats     bool              `json:"floats"`
	Admitkit   differenceOutcome `json:"admitkit"`
	Gatekeeper differenceOutcome `json:"gatekeeper"`
}

// differenceOutcome is what one side makes of a case.
type differenceOutcome struct {
	After     json.RawMessage `json:"after"`
	Error     string          `json:"error"`
	Mutations string          `json:"mutations"`
}

// The deliberate differences from Gatekeeper that README.md lists, each
// run on both the unstructured and the typed path. What Gatekeeper v3.23.1
// does instead is in each case; test/bench/gatekeeper's
// TestGatekeeperDifferences runs Gatekeeper itself on the same file.
func TestGatekeeperDifferences(t *testing.T) {
	data, err := os.ReadFile("testdata/gatekeeper-differences.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []differenceCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.Admitkit.After == nil || tc.Admitkit.Error != "" {
				t.Fatal("an admitkit case needs after and no error")
			}
			var candidates []*Mutator
			for _, doc := range tc.Mutators {
				m := mustDecode(t, string(doc))
				if again, err := path.Parse(m.location.String()); err != nil || again.String() != m.location.String() {
					t.Fatalf("location %q does not round-trip: %q, %v", m.location.String(), again.String(), err)
				}
				candidates = append(candidates, m)
			}
			sys, err := NewSystem(candidates)
			if err != nil {
				t.Fatal(err)
			}
			candidates = sys.Candidates(podTarget().GVK, OperationCreate)
			target := func() *match.Target {
				target := podTarget()
				target.Namespace = "prod"
				return target
			}
			before, after := podDoc(t, tc.Before), podDoc(t, tc.Admitkit.After)

			t.Run("unstructured", func(t *testing.T) {
				o := obj(t, before)
				if tc.Floats {
					o = floatObject(t, before)
				}
				res, err := Mutate(candidates, &unstructured.Unstructured{Object: o}, target(), Options{})
				if err != nil {
					t.Fatal(err)
				}
				equalYAML(t, o, after)
				checkMutationsAnnotation(t, tc.Admitkit.Mutations, res)
			})

			t.Run("typed", func(t *testing.T) {
				pod := podFromYAML(t, before)
				res, err := Mutate(candidates, pod, target(), Options{})
				if err != nil {
					t.Fatal(err)
				}
				got, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
				if err != nil {
					t.Fatal(err)
				}
				want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(podFromYAML(t, after))
				if err != nil {
					t.Fatal(err)
				}
				if !jsonEqual(got, want) {
					t.Fatalf("got:\n%s\nwant:\n%s", toYAML(got), toYAML(want))
				}
				checkMutationsAnnotation(t, tc.Admitkit.Mutations, res)
			})
		})
	}
}

// podDoc is a case's pod as JSON: web in namespace prod, with the spec
// and any other metadata the case gives.
func podDoc(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var metadata map[string]json.RawMessage
	if md, ok := doc["metadata"]; ok {
		if err := json.Unmarshal(md, &metadata); err != nil {
			t.Fatal(err)
		}
	}
	if metadata == nil {
		metadata = map[string]json.RawMessage{}
	}
	metadata["name"], metadata["namespace"] = json.RawMessage(`"web"`), json.RawMessage(`"prod"`)
	md, err := json.Marshal(metadata)
	if err != nil {
		t.Fatal(err)
	}
	doc["apiVersion"], doc["kind"], doc["metadata"] = json.RawMessage(`"v1"`), json.RawMessage(`"Pod"`), md
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// checkMutationsAnnotation compares Result.Reached, as the plugin writes
// it in gatekeeper.sh/mutations, with want, when the case gives one.
func checkMutationsAnnotation(t *testing.T, want string, res Result) {
	t.Helper()
	if want == "" {
		return
	}
	var names []string
	for _, m := range res.Reached {
		names = append(names, fmt.Sprintf("%s//%s:%d", m.id.Kind, m.id.Name, m.generation))
	}
	slices.Sort(names)
	if got := strings.Join(names, ", "); got != want {
		t.Fatalf("mutations %q, want %q", got, want)
	}
}

// Gatekeeper stores two mutators whose schemas conflict and quietly
// enforces neither; NewSystem refuses them, naming both, so a configuration
// or an apply that holds them fails where the user sees it.
func TestGatekeeperDifferenceConflictsAreRefused(t *testing.T) {
	a := assign(t, "as-object", "spec.containers.imagePullPolicy", "Always")
	b := assign(t, "as-list", "spec.containers[name: *].imagePullPolicy", "Always")
	_, err := NewSystem([]*Mutator{a, b})
	var conflict *ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("error %v, want a *ConflictError", err)
	}
	if got := conflict.Mutators; got != [2]ID{b.id, a.id} && got != [2]ID{a.id, b.id} {
		t.Fatalf("conflict names %v, want %v and %v", got, a.id, b.id)
	}
}

// floatObject decodes a YAML object with encoding/json's defaults, which
// make every number a float64.
func floatObject(t *testing.T, doc string) map[string]any {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var o map[string]any
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func podFromYAML(t *testing.T, doc string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj(t, doc), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}
