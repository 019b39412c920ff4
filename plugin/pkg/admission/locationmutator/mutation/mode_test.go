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
	"errors"
	"strings"
	"testing"
)

// withModeAnnotation puts the mode annotation on a manifest whose metadata
// is written as `metadata: {name: ...}` or on its own line.
func withModeAnnotation(t *testing.T, doc, mode string) string {
	t.Helper()
	i := strings.Index(doc, "metadata:")
	if i < 0 {
		t.Fatalf("no metadata in\n%s", doc)
	}
	end := strings.Index(doc[i:], "\n") + i
	line := doc[i:end]
	name := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, "metadata:")), "{name:"), "}"))
	if name == "" {
		t.Fatalf("metadata must be written inline in\n%s", doc)
	}
	return doc[:i] + "metadata:\n  name: " + name + "\n  annotations: {" + ModeAnnotation + ": " + mode + "}" + doc[end:]
}

const pullPolicy = `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: pull}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: spec.containers[name:*].imagePullPolicy
  parameters: {assign: {value: Always}}
`

func TestMode(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    Mode
		wantErr string
	}{
		{name: "absent is Enforce", doc: pullPolicy, want: ModeEnforce},
		{name: "Enforce", doc: withModeAnnotation(t, pullPolicy, "Enforce"), want: ModeEnforce},
		{name: "Warn", doc: withModeAnnotation(t, pullPolicy, "Warn"), want: ModeWarn},
		{name: "Audit", doc: withModeAnnotation(t, pullPolicy, "Audit"), want: ModeAudit},
		{name: "case matters", doc: withModeAnnotation(t, pullPolicy, "warn"),
			wantErr: `Assign "pull": metadata.annotations[locationmutator.admission.admitkit.io/mode]: Unsupported value: "warn": supported values: "Enforce", "Warn", "Audit"`},
		{name: "empty is not absent", doc: withModeAnnotation(t, pullPolicy, `""`),
			wantErr: `metadata.annotations[locationmutator.admission.admitkit.io/mode]: Unsupported value: ""`},
		{name: "Gatekeeper's dry run is not a mode", doc: withModeAnnotation(t, pullPolicy, "DryRun"),
			wantErr: `Unsupported value: "DryRun"`},
		{name: "reported with the other problems", doc: strings.Replace(withModeAnnotation(t, pullPolicy, "Dry"), "spec.containers[name:*].imagePullPolicy", "metadata.labels.x", 1),
			wantErr: `[spec.location: Invalid value`},
		{name: "AssignMetadata", doc: withModeAnnotation(t, "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: team}\nspec:\n  location: metadata.labels.team\n  parameters: {assign: {value: shop}}\n", "Audit"), want: ModeAudit},
		{name: "AssignImage", doc: withModeAnnotation(t, "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: mirror}\nspec:\n  applyTo: [{groups: [\"\"], versions: [v1], kinds: [Pod]}]\n  location: spec.containers[name:*].image\n  parameters: {assignDomain: mirror.io}\n", "Warn"), want: ModeWarn},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode([]byte(tc.doc))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Decode: %v, want an error containing %q", err, tc.wantErr)
				}
				if tc.name == "reported with the other problems" && !strings.Contains(err.Error(), "Unsupported value: \"Dry\"") {
					t.Errorf("Decode: %v, want the mode's problem too", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Mode() != tc.want || m.Enforced() != (tc.want == ModeEnforce) {
				t.Errorf("Mode() = %q, Enforced() = %v, want %q", m.Mode(), m.Enforced(), tc.want)
			}
		})
	}
}

// TestModeFromTheAPI: a live object's bad mode is a field error naming the
// annotation, as apply-time validation and status report it.
func TestModeFromTheAPI(t *testing.T) {
	m, errs := DecodeJSON([]byte(`{"apiVersion":"mutations.gatekeeper.sh/v1","kind":"Assign","metadata":{"name":"pull","annotations":{"` + ModeAnnotation + `":"Dry"}},"spec":{"applyTo":[{"groups":[""],"versions":["v1"],"kinds":["Pod"]}],"location":"spec.priority","parameters":{"assign":{"value":1}}}}`))
	if m != nil || len(errs) != 1 || errs[0].Field != "metadata.annotations[locationmutator.admission.admitkit.io/mode]" || errs[0].Type != "FieldValueNotSupported" {
		t.Fatalf("DecodeJSON = %v, %v, want one NotSupported error on the annotation", m, errs)
	}
}

// TestUnenforcedInTheSystem: mutators in Warn or Audit mode are part of
// the system (their conflicts count, so switching one to Enforce is safe)
// and the system says it has some.
func TestUnenforcedInTheSystem(t *testing.T) {
	warn := mustDecode(t, withModeAnnotation(t, pullPolicy, "Warn"))
	enforce := assign(t, "other", "spec.priority", "1")
	s, err := NewSystem([]*Mutator{enforce})
	if err != nil {
		t.Fatal(err)
	}
	if s.HasUnenforced() {
		t.Error("a system of enforced mutators says it has unenforced ones")
	}
	b := NewBuilder()
	b.Add(enforce)
	b.Add(warn)
	if s := b.System(); !s.HasUnenforced() || s.Len() != 2 {
		t.Errorf("with a Warn mutator: HasUnenforced() = %v, Len() = %d, want true, 2", s.HasUnenforced(), s.Len())
	}
	b.Add(mustDecode(t, pullPolicy)) // the same mutator, switched to Enforce
	if b.System().HasUnenforced() {
		t.Error("after the Warn mutator was replaced by its enforced version, the system still has unenforced ones")
	}
	b.Add(warn)
	b.Remove(warn.ID())
	if b.System().HasUnenforced() {
		t.Error("after the Warn mutator was removed, the system still has unenforced ones")
	}

	asObject := mustDecode(t, withModeAnnotation(t, "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: as-object}\nspec:\n  applyTo: [{groups: [\"\"], versions: [v1], kinds: [Pod]}]\n  location: spec.containers.imagePullPolicy\n  parameters: {assign: {value: Always}}\n", "Audit"))
	_, err = NewSystem([]*Mutator{warn, asObject})
	var conflict *ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("NewSystem of two conflicting mutators in Warn and Audit mode: %v, want a *ConflictError", err)
	}
	if got := s.ConflictsWith(asObject); len(got) != 0 {
		t.Fatalf("unexpected conflicts %v", got)
	}
	b.Add(warn)
	if got := b.System().ConflictsWith(asObject); len(got) != 1 {
		t.Errorf("ConflictsWith a Warn mutator = %v, want one conflict", got)
	}
}

func TestEffect(t *testing.T) {
	long := strings.Repeat("x", 200)
	modifySet := func(op, values string) string {
		return "apiVersion: mutations.gatekeeper.sh/v1\nkind: ModifySet\nmetadata: {name: args}\nspec:\n  applyTo: [{groups: [\"\"], versions: [v1], kinds: [Pod]}]\n  location: spec.containers[name:*].args\n  parameters:\n    operation: " + op + "\n    values: {fromList: " + values + "}\n"
	}
	tests := []struct {
		name, doc, want string
	}{
		{"Assign", pullPolicy, `set spec.containers[name: *].imagePullPolicy to "Always"`},
		{"Assign of an object", strings.Replace(pullPolicy, "{value: Always}", "{value: {a: 1}}", 1), `set spec.containers[name: *].imagePullPolicy to {"a":1}`},
		{"long value", strings.Replace(pullPolicy, "Always", long, 1), `set spec.containers[name: *].imagePullPolicy to "` + strings.Repeat("x", 76) + `...`},
		{"fromMetadata", strings.Replace(pullPolicy, "{value: Always}", "{fromMetadata: {field: namespace}}", 1), `set spec.containers[name: *].imagePullPolicy to the object's namespace`},
		{"AssignMetadata", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: team}\nspec:\n  location: metadata.labels.team\n  parameters: {assign: {value: shop}}\n", `set metadata.labels.team to "shop"`},
		{"ModifySet merge", modifySet("merge", "[-v, -q]"), `add "-v", "-q" to the list at spec.containers[name: *].args`},
		{"ModifySet prune", modifySet("prune", "[-v]"), `remove "-v" from the list at spec.containers[name: *].args`},
		{"ModifySet of many values", modifySet("merge", "[a, b, c, d, e, f, g, h, i, j]"), `add "a", "b", "c", "d", "e", "f", "g", "h", 2 more to the list at spec.containers[name: *].args`},
		{"AssignImage", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: mirror}\nspec:\n  applyTo: [{groups: [\"\"], versions: [v1], kinds: [Pod]}]\n  location: spec.containers[name:*].image\n  parameters: {assignDomain: mirror.io, assignTag: ':v1'}\n", `set the image at spec.containers[name: *].image to domain "mirror.io", tag ":v1"`},
		{"long location", strings.Replace(pullPolicy, "spec.containers[name:*].imagePullPolicy", "spec."+long, 1), "set spec." + strings.Repeat("x", 112) + `... to "Always"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustDecode(t, tc.doc).Effect(); got != tc.want {
				t.Errorf("Effect() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"0123456789", 10, "0123456789"},
		{"0123456789a", 10, "0123456..."},
		{"ééééé", 7, "éé..."}, // never half a rune
	} {
		if got := Shorten(tc.s, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
