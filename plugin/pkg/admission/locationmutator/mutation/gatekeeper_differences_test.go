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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// The deliberate differences from Gatekeeper that README.md lists, each
// run on both the unstructured and the typed path. What Gatekeeper v3.23.1
// does instead is in each case's comment; test/bench/gatekeeper's
// TestGatekeeperDifferences runs Gatekeeper itself on the same cases.
func TestGatekeeperDifferences(t *testing.T) {
	tests := []struct {
		name     string
		mutators []string
		// before is the pod in YAML. With floats, its numbers are float64,
		// as encoding/json or an earlier Assign value leaves them.
		before string
		floats bool
		after  string
	}{
		// Gatekeeper: "mismatch between path entry (type: List) and
		// received object (type: <nil>)", issue #3463.
		{
			name:     "explicit null list is missing",
			mutators: []string{podMutator(mutationsv1.KindAssign, "a", "spec.initContainers[name: *].imagePullPolicy", "{assign: {value: Always}}")},
			before:   `{spec: {initContainers: null, containers: [{name: app, image: nginx}]}}`,
			after:    `{spec: {initContainers: null, containers: [{name: app, image: nginx}]}}`,
		},
		// Gatekeeper: the same mismatch error, on an object.
		{
			name:     "explicit null object is missing",
			mutators: []string{podMutator(mutationsv1.KindAssign, "a", "spec.securityContext.runAsNonRoot", "{assign: {value: true}}")},
			before:   `{spec: {securityContext: null, containers: [{name: app, image: nginx}]}}`,
			after:    `{spec: {securityContext: {runAsNonRoot: true}, containers: [{name: app, image: nginx}]}}`,
		},
		// Gatekeeper: MustNotExist sees the null as a value and skips.
		{
			name: "explicit null passes MustNotExist",
			mutators: []string{podMutator(mutationsv1.KindAssign, "a", "spec.initContainers[name: init].image",
				"{pathTests: [{subPath: spec.initContainers, condition: MustNotExist}], assign: {value: busybox}}")},
			before: `{spec: {initContainers: null, containers: [{name: app, image: nginx}]}}`,
			after:  `{spec: {initContainers: [{name: init, image: busybox}], containers: [{name: app, image: nginx}]}}`,
		},
		// Gatekeeper compares keys with Go's ==, so float64(80) is not
		// int64(80) and it appends a second port 80.
		{
			name:     "a float key equals an integer selector",
			mutators: []string{podMutator(mutationsv1.KindAssign, "a", "spec.containers[name: app].ports[containerPort: 80].protocol", "{assign: {value: UDP}}")},
			before:   `{spec: {containers: [{name: app, image: nginx, ports: [{containerPort: 80}]}]}}`,
			floats:   true,
			after:    `{spec: {containers: [{name: app, image: nginx, ports: [{containerPort: 80, protocol: UDP}]}]}}`,
		},
		// The same through the system: Gatekeeper decodes the first
		// mutator's value with encoding/json (float64 80), the second does
		// not find that port and appends {containerPort: 80, protocol: UDP}.
		{
			name: "a port an Assign wrote is found by its integer key",
			mutators: []string{
				podMutator(mutationsv1.KindAssign, "a-ports", "spec.containers[name: *].ports",
					"{pathTests: [{subPath: 'spec.containers[name: *].ports', condition: MustNotExist}], assign: {value: [{containerPort: 80}]}}"),
				podMutator(mutationsv1.KindAssign, "b-protocol", "spec.containers[name: *].ports[containerPort: 80].protocol", "{assign: {value: UDP}}"),
			},
			before: `{spec: {containers: [{name: app, image: nginx}]}}`,
			after:  `{spec: {containers: [{name: app, image: nginx, ports: [{containerPort: 80, protocol: UDP}]}]}}`,
		},
		// Gatekeeper appends {name: sidecar}, a container without an
		// image, which the API server then refuses.
		{
			name:     "a prune creates no list element",
			mutators: []string{podMutator(mutationsv1.KindModifySet, "a", "spec.containers[name: sidecar].args", "{operation: prune, values: {fromList: [--debug]}}")},
			before:   `{spec: {containers: [{name: app, image: nginx}]}}`,
			after:    `{spec: {containers: [{name: app, image: nginx}]}}`,
		},
		// Gatekeeper writes securityContext: {capabilities: {}}.
		{
			name:     "a prune creates no parents",
			mutators: []string{podMutator(mutationsv1.KindModifySet, "a", "spec.containers[name: app].securityContext.capabilities.add", "{operation: prune, values: {fromList: [NET_RAW]}}")},
			before:   `{spec: {containers: [{name: app, image: nginx}]}}`,
			after:    `{spec: {containers: [{name: app, image: nginx}]}}`,
		},
		// Gatekeeper appends {name: sidecar} here too: its setter reports a
		// change even when it writes nothing.
		{
			name:     "a merge of nothing creates no list element",
			mutators: []string{podMutator(mutationsv1.KindModifySet, "a", "spec.containers[name: sidecar].args", "{operation: merge, values: {fromList: []}}")},
			before:   `{spec: {containers: [{name: app, image: nginx}]}}`,
			after:    `{spec: {containers: [{name: app, image: nginx}]}}`,
		},
		// Gatekeeper's printer leaves ü unquoted, so the location it
		// reports does not parse again (checked below for ours).
		{
			name:     "a non-ASCII key",
			mutators: []string{`{apiVersion: mutations.gatekeeper.sh/v1, kind: AssignMetadata, metadata: {name: a}, spec: {location: 'metadata.annotations."größe"', parameters: {assign: {value: XL}}}}`},
			before:   `{metadata: {name: web}, spec: {containers: [{name: app, image: nginx}]}}`,
			after:    `{metadata: {name: web, annotations: {größe: XL}}, spec: {containers: [{name: app, image: nginx}]}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var candidates []*Mutator
			for _, doc := range tc.mutators {
				m := mustDecode(t, doc)
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

			t.Run("unstructured", func(t *testing.T) {
				o := obj(t, tc.before)
				if tc.floats {
					o = floatObject(t, tc.before)
				}
				if _, err := Mutate(candidates, o, podTarget()); err != nil {
					t.Fatal(err)
				}
				equalYAML(t, o, tc.after)
			})

			t.Run("typed", func(t *testing.T) {
				pod := podFromYAML(t, tc.before)
				if _, err := MutateTyped(candidates, pod, podTarget()); err != nil {
					t.Fatal(err)
				}
				got, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
				if err != nil {
					t.Fatal(err)
				}
				want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(podFromYAML(t, tc.after))
				if err != nil {
					t.Fatal(err)
				}
				if !jsonEqual(got, want) {
					t.Fatalf("got:\n%s\nwant:\n%s", toYAML(got), toYAML(want))
				}
			})
		})
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
