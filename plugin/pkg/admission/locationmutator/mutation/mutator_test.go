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
	"testing"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
)

// The pathTest table of the spec's section 2.6.
func TestPathTests(t *testing.T) {
	const greet = "spec.please.greet.me"
	tests := []struct {
		name   string
		m      func(t *testing.T) *Mutator
		before string
		after  string
	}{
		{"parents are created", func(t *testing.T) *Mutator { return assign(t, "a", greet, "hello") }, `{}`, `spec: {please: {greet: {me: hello}}}`},
		{"MustExist on a missing value", func(t *testing.T) *Mutator { return assign(t, "a", greet, "hello", "MustExist "+greet) }, `{}`, `{}`},
		{"MustExist with only the parent there", func(t *testing.T) *Mutator { return assign(t, "a", greet, "hello", "MustExist "+greet) }, `spec: {please: {greet: {}}}`, `spec: {please: {greet: {}}}`},
		{"MustExist overwrites", func(t *testing.T) *Mutator { return assign(t, "a", greet, "hello", "MustExist "+greet) }, `spec: {please: {greet: {me: never}}}`, `spec: {please: {greet: {me: hello}}}`},
		{"MustNotExist keeps a value (default if unset)", func(t *testing.T) *Mutator { return assign(t, "a", greet, "hello", "MustNotExist "+greet) }, `spec: {please: {greet: {me: never}}}`, `spec: {please: {greet: {me: never}}}`},
		{"no partial mutation when a deeper test fails", func(t *testing.T) *Mutator {
			return assign(t, "a", greet, "hello", "MustExist spec.please.greet", "MustNotExist "+greet)
		}, `spec: {please: {}}`, `spec: {please: {}}`},
		{"sidecar is not clobbered", func(t *testing.T) *Mutator {
			return assign(t, "a", "spec.containers[name:sidecar]", "{name: sidecar}", "MustNotExist spec.containers[name:sidecar]")
		}, `spec: {containers: [{name: sidecar, image: x}]}`, `spec: {containers: [{name: sidecar, image: x}]}`},
		{"sidecar is replaced when it must exist", func(t *testing.T) *Mutator {
			return assign(t, "a", "spec.containers[name:sidecar]", "{name: sidecar, clobbered: 'yes'}", "MustExist spec.containers[name:sidecar]")
		}, `spec: {containers: [{name: sidecar, image: x}]}`, `spec: {containers: [{name: sidecar, clobbered: 'yes'}]}`},
		{"sidecar is not created when it must exist", func(t *testing.T) *Mutator {
			return assign(t, "a", "spec.containers[name:sidecar]", "{name: sidecar}", "MustExist spec.containers[name:sidecar]")
		}, `spec: {containers: [{name: app}]}`, `spec: {containers: [{name: app}]}`},
		{"no empty element is created", func(t *testing.T) *Mutator {
			return assign(t, "a", "spec.containers[name:c2].securityPolicy", "foo", "MustExist spec.containers[name:c2]")
		}, `spec: {containers: [{name: c1}]}`, `spec: {containers: [{name: c1}]}`},
		{"MustNotExist through a glob sets only missing values", func(t *testing.T) *Mutator {
			return assign(t, "a", "spec.containers[name:*].securityPolicy", "new", "MustNotExist spec.containers[name:*].securityPolicy")
		}, `spec: {containers: [{name: c1, securityPolicy: old}, {name: c2}]}`, `spec: {containers: [{name: c1, securityPolicy: old}, {name: c2, securityPolicy: new}]}`},
		{"MustNotExist on a glob level is never satisfied", func(t *testing.T) *Mutator {
			return assign(t, "a", "spec.containers[name:*].x", "new", "MustNotExist spec.containers[name:*]")
		}, `spec: {containers: [{name: c1}]}`, `spec: {containers: [{name: c1}]}`},
		{"explicit null counts as missing for MustNotExist (#3463)", func(t *testing.T) *Mutator {
			return assign(t, "a", "spec.initContainers[name:*].image", "x", "MustNotExist spec.initContainers")
		}, `spec: {initContainers: null}`, `spec: {initContainers: null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m(t)
			o := obj(t, tc.before)
			if _, err := runOnce(t, m, o); err != nil {
				t.Fatal(err)
			}
			equalYAML(t, o, tc.after)
			// A second run must change nothing: every mutator is idempotent.
			if changed, err := runOnce(t, m, o); err != nil || changed {
				t.Fatalf("second run changed=%v err=%v", changed, err)
			}
		})
	}
}

func TestAssign(t *testing.T) {
	tests := []struct {
		name     string
		location string
		value    string
		before   string
		after    string
		wantErr  string
	}{
		{"glob sets every element", "spec.containers[name: *].imagePullPolicy", "Always",
			`spec: {containers: [{name: a}, {name: b, imagePullPolicy: Never}]}`,
			`spec: {containers: [{name: a, imagePullPolicy: Always}, {name: b, imagePullPolicy: Always}]}`, ""},
		{"glob over a missing list creates nothing", "spec.containers[name: *].imagePullPolicy", "Always", `spec: {}`, `spec: {}`, ""},
		{"glob includes elements without the key", "spec.containers[name: *].x", "1", `spec: {containers: [{image: a}]}`, `spec: {containers: [{image: a, x: 1}]}`, ""},
		{"keyed element is created with its key", "spec.template.spec.containers[name: nginx].env[name: FOO].value", "bar", `{}`,
			`spec: {template: {spec: {containers: [{name: nginx, env: [{name: FOO, value: bar}]}]}}}`, ""},
		{"integer key is created as an integer", "spec.containers[name: *].ports[containerPort: 80].protocol", "TCP",
			`spec: {containers: [{name: a, ports: [{containerPort: 80}]}, {name: b}]}`,
			`spec: {containers: [{name: a, ports: [{containerPort: 80, protocol: TCP}]}, {name: b, ports: [{containerPort: 80, protocol: TCP}]}]}`, ""},
		{"string key does not match an integer", `spec.ports[port: "80"].name`, "http", `spec: {ports: [{port: 80}]}`,
			`spec: {ports: [{port: 80}, {port: "80", name: http}]}`, ""},
		{"whole element with an integer key (numbers normalised)", "spec.ports[containerPort: 80]", "{containerPort: 80, protocol: UDP}",
			`spec: {ports: [{containerPort: 80, protocol: TCP}, {containerPort: 81}]}`,
			`spec: {ports: [{containerPort: 80, protocol: UDP}, {containerPort: 81}]}`, ""},
		{"whole element is appended", "spec.containers[name: side]", "{name: side, image: s}", `spec: {containers: [{name: a}]}`,
			`spec: {containers: [{name: a}, {name: side, image: s}]}`, ""},
		{"explicit null is missing (#3463)", "spec.initContainers[name: *].image", "x", `spec: {initContainers: null}`, `spec: {initContainers: null}`, ""},
		{"explicit null parent is replaced", "spec.securityContext.runAsNonRoot", "true", `spec: {securityContext: null}`, `spec: {securityContext: {runAsNonRoot: true}}`, ""},
		{"object value", "spec.resources", "{limits: {cpu: '1'}}", `spec: {}`, `spec: {resources: {limits: {cpu: '1'}}}`, ""},
		{"a number equals itself however it was decoded", "spec.replicas", "3.0", `spec: {replicas: 3}`, `spec: {replicas: 3}`, ""},
		{"type mismatch is an error", "spec.containers[name: *].image", "x", `spec: {containers: {a: b}}`, "", "expects a list"},
		{"non-object element is an error", "spec.containers[name: *].image", "x", `spec: {containers: [a]}`, "", "list elements that are objects"},
		{"non-object parent is an error", "spec.x.y", "1", `spec: {x: 3}`, "", "expects an object"},
		// Only a glob insists on objects; a key selects among the maps and
		// passes over anything else, as Gatekeeper does.
		{"keyed selector skips non-object elements", "spec.containers[name: a].image", "x", `spec: {containers: [3, {name: a}, s]}`,
			`spec: {containers: [3, {name: a, image: x}, s]}`, ""},
		{"keyed selector appends past non-object elements", "spec.containers[name: b].image", "x", `spec: {containers: [3]}`,
			`spec: {containers: [3, {name: b, image: x}]}`, ""},
		{"every keyed match is visited", "spec.containers[name: a].image", "x", `spec: {containers: [{name: a}, {name: b}, {name: a, image: y}]}`,
			`spec: {containers: [{name: a, image: x}, {name: b}, {name: a, image: x}]}`, ""},
		{"a whole element replaces only the first match", "spec.containers[name: a]", "{name: a, image: new}", `spec: {containers: [{name: a, image: x}, {name: a, image: y}]}`,
			`spec: {containers: [{name: a, image: new}, {name: a, image: y}]}`, ""},
		{"a whole element into a list of non-objects is an error", "spec.containers[name: a]", "{name: a}", `spec: {containers: [3]}`, "", "list elements that are objects"},
		{"explicit null element list is missing", "spec.containers[name: a].image", "x", `spec: {containers: null}`,
			`spec: {containers: [{name: a, image: x}]}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkMutation(t, assign(t, "a", tc.location, tc.value), tc.before, tc.after, tc.wantErr)
		})
	}
}

func TestAssignValueIsNotShared(t *testing.T) {
	m := assign(t, "a", "spec.containers[name: *].securityContext", "{runAsNonRoot: true}")
	o := obj(t, `spec: {containers: [{name: a}, {name: b}]}`)
	if _, err := runOnce(t, m, o); err != nil {
		t.Fatal(err)
	}
	cs := o["spec"].(map[string]any)["containers"].([]any)
	cs[0].(map[string]any)["securityContext"].(map[string]any)["x"] = 1
	if _, ok := cs[1].(map[string]any)["securityContext"].(map[string]any)["x"]; ok {
		t.Fatal("the assigned value is shared between elements")
	}
	if _, ok := m.op.(assignOp).value.(map[string]any)["x"]; ok {
		t.Fatal("the mutator's own value was changed")
	}
}

func TestFromMetadata(t *testing.T) {
	m := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: ns}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: spec.containers[name:*].env[name:NAMESPACE].value
  parameters:
    assign:
      fromMetadata: {field: namespace}
`)
	o := obj(t, `spec: {containers: [{name: a}]}`)
	if _, err := m.mutate(o, requestMeta{Namespace: "prod", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	equalYAML(t, o, `spec: {containers: [{name: a, env: [{name: NAMESPACE, value: prod}]}]}`)
}

func TestAssignMetadata(t *testing.T) {
	label := func(value string) *Mutator {
		return mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: owner}
spec:
  location: metadata.labels.owner
  parameters:
    assign:
      `+value+`
`)
	}
	tests := []struct {
		name          string
		m             *Mutator
		before, after string
	}{
		{"adds a label", label("value: admin"), `metadata: {name: x}`, `metadata: {name: x, labels: {owner: admin}}`},
		{"never overwrites", label("value: admin"), `metadata: {labels: {owner: bob}}`, `metadata: {labels: {owner: bob}}`},
		{"from the name", label("fromMetadata: {field: name}"), `metadata: {}`, `metadata: {labels: {owner: web}}`},
		{"null labels are missing", label("value: admin"), `metadata: {labels: null}`, `metadata: {labels: {owner: admin}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := obj(t, tc.before)
			if _, err := runOnce(t, tc.m, o); err != nil {
				t.Fatal(err)
			}
			equalYAML(t, o, tc.after)
		})
	}
	annotation := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1beta1
kind: AssignMetadata
metadata: {name: role}
spec:
  location: metadata.annotations.'eks.amazonaws.com/role-arn'
  parameters: {assign: {value: arn}}
`)
	o := obj(t, `metadata: {}`)
	if _, err := runOnce(t, annotation, o); err != nil {
		t.Fatal(err)
	}
	equalYAML(t, o, `metadata: {annotations: {eks.amazonaws.com/role-arn: arn}}`)
}

func TestModifySet(t *testing.T) {
	set := func(op, values string) *Mutator {
		return mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: ModifySet
metadata: {name: args}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: spec.containers[name:*].args
  parameters:
    operation: `+op+`
    values: {fromList: `+values+`}
`)
	}
	tests := []struct {
		name          string
		m             *Mutator
		before, after string
		wantErr       string
	}{
		{"prune removes every copy, keeping order", set("prune", `["--alsologtostderr"]`),
			`spec: {containers: [{name: a, args: [a, --alsologtostderr, b, --alsologtostderr]}]}`, `spec: {containers: [{name: a, args: [a, b]}]}`, ""},
		{"prune of a missing list leaves it missing", set("prune", `[x]`), `spec: {containers: [{name: a}]}`, `spec: {containers: [{name: a}]}`, ""},
		{"merge creates the list", set("merge", `["--alsologtostderr"]`), `spec: {containers: [{name: a}]}`, `spec: {containers: [{name: a, args: [--alsologtostderr]}]}`, ""},
		{"merge appends what is missing", set("merge", `[b, c]`), `spec: {containers: [{name: a, args: [c, a]}]}`, `spec: {containers: [{name: a, args: [c, a, b]}]}`, ""},
		{"merge compares objects deeply", set("", `[{name: X, value: "1"}]`), `spec: {containers: [{name: a, args: [{name: X, value: "1"}]}]}`, `spec: {containers: [{name: a, args: [{name: X, value: "1"}]}]}`, ""},
		{"merge compares numbers by value", set("merge", `[1000]`), `spec: {containers: [{name: a, args: [1000]}]}`, `spec: {containers: [{name: a, args: [1000]}]}`, ""},
		{"not a list is an error", set("merge", `[a]`), `spec: {containers: [{name: a, args: x}]}`, "", "not a list of values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkMutation(t, tc.m, tc.before, tc.after, tc.wantErr)
		})
	}
}

func TestAssignImage(t *testing.T) {
	img := func(params string) *Mutator {
		return mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1alpha1
kind: AssignImage
metadata: {name: img}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: spec.containers[name:*].image
  parameters: `+params+`
`)
	}
	const digest = "@sha256:0123456789abcdef0123456789abcdef"
	tests := []struct {
		name, params, before, after string
	}{
		{"tag to digest", `{assignTag: "` + digest + `"}`, "my.registry.io:2000/repo/app:latest", "my.registry.io:2000/repo/app" + digest},
		{"domain added", `{assignDomain: mirror.io}`, "nginx", "mirror.io/nginx"},
		{"domain replaced", `{assignDomain: localhost:5000}`, "docker.io/library/nginx:1", "localhost:5000/library/nginx:1"},
		{"path of a bare name", `{assignPath: lib/app}`, "nginx:1", "lib/app:1"},
		{"everything", `{assignDomain: a.b.c, assignPath: lib/repo, assignTag: ":latest"}`, "x/y@sha256:ff", "a.b.c/lib/repo:latest"},
		{"missing image is filled", `{assignDomain: a.b.c, assignPath: lib/repo}`, "", "a.b.c/lib/repo"},
		{"a first part without a dot is a path", `{assignDomain: a.io}`, "library/nginx", "a.io/library/nginx"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := img(tc.params)
			o := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a"}}}}
			if tc.before != "" {
				o["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = tc.before
			}
			if _, err := runOnce(t, m, o); err != nil {
				t.Fatal(err)
			}
			got := o["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]
			if got != tc.after {
				t.Fatalf("image %q, want %q", got, tc.after)
			}
			if changed, _ := runOnce(t, m, o); changed {
				t.Fatal("AssignImage did not converge in one pass")
			}
		})
	}
}

// Hand-built unstructured objects can hold typed nil maps and lists; they
// print as null, so they are missing values, and nothing may panic on them.
func TestMutateNilContainers(t *testing.T) {
	m := assign(t, "a", "spec.x.z", "1")
	if _, err := m.mutate(nil, requestMeta{}); err == nil {
		t.Fatal("a nil object has nowhere to write and must be an error")
	}
	o := map[string]any{"spec": map[string]any{"x": map[string]any(nil)}}
	if _, err := runOnce(t, m, o); err != nil {
		t.Fatal(err)
	}
	equalYAML(t, o, `spec: {x: {z: 1}}`)
	set := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: ModifySet
metadata: {name: args}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: spec.args
  parameters: {values: {fromList: [a]}}
`)
	o = map[string]any{"spec": map[string]any{"args": []any(nil)}}
	if _, err := runOnce(t, set, o); err != nil {
		t.Fatal(err)
	}
	equalYAML(t, o, `spec: {args: [a]}`)
}

// Every valid set of parts must settle after one application on any
// image, however odd: the validation exists for exactly this.
func TestAssignImageConverges(t *testing.T) {
	images := []string{"", "nginx", "nginx:1", "library/nginx", "a.io/x", "a.io:5000/x/y:tag", "localhost/x", "localhost:5000/x@sha256:00",
		"x:1/y", "user@host.io/x", ":v1", "@sha256:ff", "a.io/", "a/b/c:d@e", "UPPER/Case:Tag", "a..b/c", "/x", "a.b"}
	domains := []string{"", "mirror.io", "localhost", "localhost:5000", "a.b.c:443", "my_reg.example-1.io"}
	paths := []string{"", "app", "lib/app", "a.b", "a-b/c__d/e.f"}
	tags := []string{"", ":v1", ":latest", "@sha256:0123456789abcdef0123456789abcdef"}
	for _, d := range domains {
		for _, p := range paths {
			for _, tag := range tags {
				if validateImageParts(d, p, tag) != "" {
					continue
				}
				for _, img := range images {
					op := assignImageOp{imageRef{domain: d, path: p, tag: tag}}
					once, _ := op.image(img)
					twice, same := op.image(once)
					if twice != once {
						t.Errorf("domain %q path %q tag %q on %q: %q then %q", d, p, tag, img, once, twice)
					}
					if !same {
						t.Errorf("domain %q path %q tag %q on %q: %q is not seen as current", d, p, tag, img, once)
					}
				}
			}
		}
	}
}

func TestAddsLabel(t *testing.T) {
	metadata := func(location string) string {
		return "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  location: " + location + "\n  parameters: {assign: {value: x}}\n"
	}
	for _, tt := range []struct {
		name, doc string
		want      bool
	}{
		{"AssignMetadata of a label", metadata("metadata.labels.team"), true},
		{"AssignMetadata of an annotation", metadata("metadata.annotations.team"), false},
		{"Assign", podMutator(mutationsv1.KindAssign, "a", "spec.containers[name:*].imagePullPolicy", "{assign: {value: Always}}"), false},
	} {
		if got := mustDecode(t, tt.doc).AddsLabel(); got != tt.want {
			t.Errorf("%s: AddsLabel() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
