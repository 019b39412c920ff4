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
	"reflect"
	"strings"
	"testing"

	gkparser "github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/path/parser"
	gktypes "github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/types"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestGatekeeperDifferences runs Gatekeeper on the cases of the
// LocationMutator's TestGatekeeperDifferences (README.md, "Differences
// from Gatekeeper") and checks that Gatekeeper v3.23.1 does what the
// README says it does, so that the README's claims are measured, not
// remembered.
func TestGatekeeperDifferences(t *testing.T) {
	podAssign := func(name, location, params string) string {
		return `{apiVersion: mutations.gatekeeper.sh/v1, kind: Assign, metadata: {name: ` + name + `},
spec: {applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}], location: '` + location + `', parameters: ` + params + `}}`
	}
	podModifySet := func(name, location, params string) string {
		return strings.Replace(podAssign(name, location, params), "kind: Assign", "kind: ModifySet", 1)
	}
	tests := []struct {
		name     string
		mutators []string
		before   string
		after    string // what Gatekeeper makes of it, or
		wantErr  string // its error
	}{
		{
			name:     "explicit null list is an error",
			mutators: []string{podAssign("a", "spec.initContainers[name: *].imagePullPolicy", "{assign: {value: Always}}")},
			before:   `{spec: {initContainers: null, containers: [{name: app, image: nginx}]}}`,
			wantErr:  "mismatch between path entry",
		},
		{
			name:     "explicit null object is an error",
			mutators: []string{podAssign("a", "spec.securityContext.runAsNonRoot", "{assign: {value: true}}")},
			before:   `{spec: {securityContext: null, containers: [{name: app, image: nginx}]}}`,
			wantErr:  "mismatch between path entry",
		},
		{
			name: "explicit null fails MustNotExist",
			mutators: []string{podAssign("a", "spec.initContainers[name: init].image",
				"{pathTests: [{subPath: spec.initContainers, condition: MustNotExist}], assign: {value: busybox}}")},
			before: `{spec: {initContainers: null, containers: [{name: app, image: nginx}]}}`,
			after:  `{spec: {initContainers: null, containers: [{name: app, image: nginx}]}}`,
		},
		{
			name: "a port an Assign wrote is appended again",
			mutators: []string{
				podAssign("a-ports", "spec.containers[name: *].ports",
					"{pathTests: [{subPath: 'spec.containers[name: *].ports', condition: MustNotExist}], assign: {value: [{containerPort: 80}]}}"),
				podAssign("b-protocol", "spec.containers[name: *].ports[containerPort: 80].protocol", "{assign: {value: UDP}}"),
			},
			before: `{spec: {containers: [{name: app, image: nginx}]}}`,
			after:  `{spec: {containers: [{name: app, image: nginx, ports: [{containerPort: 80}, {containerPort: 80, protocol: UDP}]}]}}`,
		},
		{
			name:     "a prune creates a list element",
			mutators: []string{podModifySet("a", "spec.containers[name: sidecar].args", "{operation: prune, values: {fromList: [--debug]}}")},
			before:   `{spec: {containers: [{name: app, image: nginx}]}}`,
			after:    `{spec: {containers: [{name: app, image: nginx}, {name: sidecar}]}}`,
		},
		{
			name:     "a prune creates parents",
			mutators: []string{podModifySet("a", "spec.containers[name: app].securityContext.capabilities.add", "{operation: prune, values: {fromList: [NET_RAW]}}")},
			before:   `{spec: {containers: [{name: app, image: nginx}]}}`,
			after:    `{spec: {containers: [{name: app, image: nginx, securityContext: {capabilities: {}}}]}}`,
		},
		{
			// README.md, "Trying a mutator before enforcing it": the mode
			// annotation means nothing to Gatekeeper.
			name: "a mutator annotated Warn is enforced",
			mutators: []string{strings.Replace(podAssign("a", "spec.containers[name: *].imagePullPolicy", "{assign: {value: Always}}"),
				"metadata: {name: a}", "metadata: {name: a, annotations: {locationmutator.admission.admitkit.io/mode: Warn}}", 1)},
			before: `{spec: {containers: [{name: app, image: nginx}]}}`,
			after:  `{spec: {containers: [{name: app, image: nginx, imagePullPolicy: Always}]}}`,
		},
		{
			name:     "a merge of nothing creates a list element",
			mutators: []string{podModifySet("a", "spec.containers[name: sidecar].args", "{operation: merge, values: {fromList: []}}")},
			before:   `{spec: {containers: [{name: app, image: nginx}]}}`,
			after:    `{spec: {containers: [{name: app, image: nginx}, {name: sidecar, args: []}]}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sys := gatekeeperSystem(t, tc.mutators)
			obj := unstructuredFromYAML(t, tc.before)
			_, err := sys.Mutate(t.Context(), &gktypes.Mutable{
				Object: obj, Namespace: prod, Username: "alice",
				Source: gktypes.SourceTypeOriginal, Operation: admissionv1.Create,
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := normalised(t, obj.Object), normalised(t, unstructuredFromYAML(t, tc.after).Object); !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %v\nwant %v", got, want)
			}
		})
	}

	t.Run("conflicting mutators are stored and not enforced", func(t *testing.T) {
		a := podAssign("as-object", "spec.containers.imagePullPolicy", "{assign: {value: Always}}")
		b := podAssign("as-list", "spec.containers[name: *].imagePullPolicy", "{assign: {value: Always}}")
		sys := gatekeeperSystem(t, []string{a})
		if err := sys.Upsert(gatekeeperMutator(t, b)); err == nil {
			t.Fatal("no conflict reported")
		}
		obj := unstructuredFromYAML(t, `{spec: {containers: [{name: app, image: nginx}]}}`)
		mutated, err := sys.Mutate(t.Context(), &gktypes.Mutable{Object: obj, Namespace: prod, Source: gktypes.SourceTypeOriginal, Operation: admissionv1.Create})
		if err != nil || mutated {
			t.Fatalf("mutated %v, err %v: want neither enforced", mutated, err)
		}
	})

	t.Run("a non-ASCII key does not round-trip", func(t *testing.T) {
		p, err := gkparser.Parse(`metadata.annotations."größe"`)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := gkparser.Parse(p.String()); err == nil && again.String() == p.String() {
			t.Fatalf("%q round-trips", p.String())
		}
	})
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
