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

package locationmutator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestConfigEmpty(t *testing.T) {
	for name, cfg := range map[string]string{
		"nothing":    "",
		"blank":      "  \n",
		"null":       "null\n",
		"no entries": "apiVersion: locationmutator.admission.admitkit.io/v1alpha1\nkind: Configuration\n",
	} {
		t.Run(name, func(t *testing.T) {
			s, err := systemFromConfig(strings.NewReader(cfg))
			if err != nil || s.Len() != 0 {
				t.Fatalf("system %v, error %v", s, err)
			}
		})
	}
	if s, err := systemFromConfig(nil); err != nil || s.Len() != 0 {
		t.Fatalf("nil reader: %v", err)
	}
}

func TestConfigFiles(t *testing.T) {
	cfg := config(pullAlways) + "mutatorFiles:\n- testdata/mutators.yaml\n"
	_, err := systemFromConfig(strings.NewReader(cfg))
	// The file has its own always-pull: the same kind and name twice.
	if err == nil || !strings.Contains(err.Error(), `Assign "always-pull": metadata.name: Duplicate value`) {
		t.Fatalf("error %v", err)
	}
	s, err := systemFromConfig(strings.NewReader(config(ownerLabel) + "mutatorFiles:\n- testdata/mutators.y*ml\n"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range s.Mutators() {
		ids = append(ids, m.ID().String())
	}
	if got := strings.Join(ids, ","); got != "Assign/always-pull,AssignImage/mirror,AssignMetadata/owner,AssignMetadata/owner-label,ModifySet/no-alsologtostderr" {
		t.Fatalf("mutators %s", got)
	}
}

// The example AdmissionConfiguration must load once its file path points
// at the example mutators.
func TestExampleAdmissionConfiguration(t *testing.T) {
	data, err := os.ReadFile("testdata/admission-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ac struct {
		Plugins []struct {
			Name          string         `json:"name"`
			Configuration map[string]any `json:"configuration"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal(data, &ac); err != nil {
		t.Fatal(err)
	}
	pc := ac.Plugins[0].Configuration
	abs, _ := filepath.Abs("testdata/mutators.yaml")
	pc["mutatorFiles"] = []any{abs}
	out, _ := yaml.Marshal(pc)
	s, err := systemFromConfig(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if ac.Plugins[0].Name != PluginName || s.Len() != 5 {
		t.Fatalf("plugin %q with %d mutators", ac.Plugins[0].Name, s.Len())
	}
}

// kubectl apply -f flattens any document with items, so a typed list
// read straight from the API (kind: AssignList) loads like kind: List.
func TestConfigTypedList(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "assigns.yaml")
	doc := `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignList
metadata: {resourceVersion: "42"}
items:
- apiVersion: mutations.gatekeeper.sh/v1
  kind: Assign
  metadata: {name: one}
  spec:
    applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
    location: spec.x
    parameters: {assign: {value: 1}}
- apiVersion: mutations.gatekeeper.sh/v1
  kind: Assign
  metadata: {name: two}
  spec:
    applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
    location: spec.y
    parameters: {assign: {value: 2}}
`
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := systemFromConfig(strings.NewReader("apiVersion: locationmutator.admission.admitkit.io/v1alpha1\nkind: Configuration\nmutatorFiles: [" + f + "]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 {
		t.Fatalf("%d mutators, want 2", s.Len())
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badFile, []byte("apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: ok}\nspec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod]}]\n  location: spec.x\n  parameters: {assign: {value: 1}}\n---\napiVersion: mutations.gatekeeper.sh/v1\nkind: ModifySet\nmetadata: {name: broken}\nspec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod]}]\n  location: spec.x.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	header := "apiVersion: locationmutator.admission.admitkit.io/v1alpha1\nkind: Configuration\n"
	tests := []struct {
		name string
		cfg  string
		want []string
	}{
		{"unknown config field", header + "mutator: []\n", []string{`unknown field "mutator"`}},
		{"duplicate config key", header + "mutatorFiles: [a.yaml]\nmutatorFiles: [b.yaml]\n", []string{`"mutatorFiles" already set`}},
		{"duplicate key in a mutator", config(strings.Replace(pullAlways, "location:", "location: spec.x\n  location:", 1)), []string{`"location" already set`}},
		{"wrong config kind", "apiVersion: locationmutator.admission.admitkit.io/v1alpha1\nkind: Config\n", []string{`LocationMutator: invalid configuration: kind: Unsupported value: "Config": supported values: "Configuration"`}},
		{"wrong config version", "apiVersion: locationmutator.admission.admitkit.io/v1\nkind: Configuration\n", []string{`LocationMutator: invalid configuration: apiVersion: Unsupported value: "locationmutator.admission.admitkit.io/v1": supported values: "locationmutator.admission.admitkit.io/v1alpha1"`}},
		{"bad location", config(strings.Replace(pullAlways, "name:*", "*", 1)), []string{`mutators[0]: Assign "always-pull": spec.location: Invalid value: "spec.containers[*].imagePullPolicy"`}},
		{"unknown mutator field", config(strings.Replace(pullAlways, "location:", "locaton:", 1)), []string{`Assign "always-pull"`, `unknown field "spec.locaton"`}},
		{"bad value", config(strings.Replace(ownerLabel, "value: platform", "value: [a]", 1)), []string{`AssignMetadata "owner": spec.parameters.assign.value: Invalid value`}},
		{"unknown kind", config(strings.Replace(pullAlways, "kind: Assign", "kind: Mutate", 1)), []string{`Mutate "always-pull": kind: Unsupported value`}},
		{"duplicate name", config(pullAlways, pullAlways), []string{`Assign "always-pull": metadata.name: Duplicate value`}},
		{"external data without its default", config(strings.Replace(pullAlways, "{assign: {value: Always}}", "{assign: {externalData: {provider: p, failurePolicy: UseDefault}}}", 1)), []string{`Assign "always-pull": spec.parameters.assign.externalData.default: Required`}},
		{"conflict names both", config(pullAlways, strings.NewReplacer("always-pull", "as-object", `"spec.containers[name:*].imagePullPolicy"`, "spec.containers.imagePullPolicy").Replace(pullAlways)),
			[]string{`Assign "always-pull" and Assign "as-object" conflict`}},
		{"missing file", header + "mutatorFiles: [/nonexistent/mutators.yaml]\n", []string{"/nonexistent/mutators.yaml"}},
		{"glob matching nothing", header + "mutatorFiles: [/nonexistent/*.yaml]\n", []string{"mutatorFiles[0]", "matches no file"}},
		{"bad document in a file", header + "mutatorFiles: [" + badFile + "]\n", []string{badFile + `: document 2: ModifySet "broken": spec.location: Invalid value`, "trailing separator"}},
		{"all problems at once", config(strings.Replace(pullAlways, "name:*", "*", 1), strings.Replace(ownerLabel, "metadata.labels.owner", "metadata.name", 1)),
			[]string{"mutators[0]", "mutators[1]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := systemFromConfig(strings.NewReader(tc.cfg))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// ConfiguredMutators gives what the plugin takes in, inline and from files,
// and refuses what the plugin refuses.
func TestConfiguredMutators(t *testing.T) {
	ms, err := ConfiguredMutators(strings.NewReader(config(ownerLabel) + "mutatorFiles:\n- testdata/mutators.y*ml\n"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID().String())
	}
	if got := strings.Join(ids, ","); got != "AssignMetadata/owner,Assign/always-pull,AssignMetadata/owner-label,ModifySet/no-alsologtostderr,AssignImage/mirror" {
		t.Fatalf("mutators %s", got)
	}
	if ms, err := ConfiguredMutators(nil); err != nil || ms != nil {
		t.Fatalf("nil reader: %v, %v", ms, err)
	}
	if _, err := ConfiguredMutators(strings.NewReader(config(pullAlways) + "mutatorFiles:\n- testdata/missing.yaml\n")); err == nil {
		t.Fatal("a missing file was taken")
	}
}
