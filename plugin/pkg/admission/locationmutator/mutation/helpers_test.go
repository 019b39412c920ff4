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
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
)

func mustDecode(t testing.TB, doc string) *Mutator {
	t.Helper()
	m, err := Decode([]byte(doc))
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, doc)
	}
	return m
}

// obj reads a YAML object the way the apiserver would hand it over in
// unstructured form (integers as int64).
func obj(t testing.TB, doc string) map[string]any {
	t.Helper()
	var v mutationsv1.Value
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if v.Value == nil {
		return map[string]any{}
	}
	return v.Value.(map[string]any)
}

func toYAML(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(out)
}

func podTarget() *match.Target {
	return &match.Target{
		GVK:       schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespace: "default",
		Name:      "web",
		Labels:    labels.Set{},
	}
}

// assign builds an Assign on v1 Pods from a location, a value in YAML and
// optional pathTests written as "Condition subPath".
func assign(t testing.TB, name, location, value string, tests ...string) *Mutator {
	t.Helper()
	var b strings.Builder
	b.WriteString(`apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata:
  name: ` + name + `
spec:
  applyTo:
  - groups: [""]
    versions: ["v1"]
    kinds: ["Pod"]
  location: '` + location + `'
  parameters:
`)
	if len(tests) > 0 {
		b.WriteString("    pathTests:\n")
		for _, tc := range tests {
			cond, sub, _ := strings.Cut(tc, " ")
			b.WriteString("    - subPath: '" + sub + "'\n      condition: " + cond + "\n")
		}
	}
	b.WriteString("    assign:\n      value: " + value + "\n")
	return mustDecode(t, b.String())
}

func runOnce(t testing.TB, m *Mutator, o map[string]any) (bool, error) {
	t.Helper()
	return m.mutate(o, requestMeta{Namespace: "default", Name: "web"})
}

func equalYAML(t testing.TB, got map[string]any, want string) {
	t.Helper()
	w := obj(t, want)
	if !jsonEqual(got, w) {
		t.Fatalf("got:\n%s\nwant:\n%s", toYAML(got), toYAML(w))
	}
}

// checkMutation runs m once on before and expects after (or an error
// containing wantErr), then once more and expects no change: every
// mutator is idempotent on its own.
func checkMutation(t *testing.T, m *Mutator, before, after, wantErr string) {
	t.Helper()
	o := obj(t, before)
	_, err := runOnce(t, m, o)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	equalYAML(t, o, after)
	if changed, err := runOnce(t, m, o); err != nil || changed {
		t.Fatalf("second run changed=%v err=%v", changed, err)
	}
}

// mutate applies m once to obj, an object in its unstructured form, as a
// request of one mutator: one scratch, one walk.
func (m *Mutator) mutate(obj map[string]any, md requestMeta) (bool, error) {
	e, err := m.mutateUnstructured(obj, md)
	return e.changed, err
}

// mutateUnstructured is mutate with the whole effect.
func (m *Mutator) mutateUnstructured(obj map[string]any, md requestMeta) (effect, error) {
	sc := jsonScratches.Get().(*jsonScratch)
	defer sc.release()
	return (&unstructuredRoot{obj: obj, sc: sc}).apply(m, md)
}
