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
	"strings"
	"testing"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
)

func TestDecodeRejects(t *testing.T) {
	const applyTo = `  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
`
	assignDoc := func(name, location, params string) string {
		return "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: " + name + "}\nspec:\n" + applyTo +
			"  location: '" + location + "'\n  parameters:\n" + params
	}
	val := "    assign: {value: x}\n"
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the error
	}{
		{"empty location", assignDoc("a", "", val), []string{`Assign "a"`, "spec.location: Required value"}},
		{"bad location", assignDoc("always-pull", "spec.containers[*].image", val), []string{`Assign "always-pull": spec.location: Invalid value: "spec.containers[*].image"`, "unexpected token"}},
		{"metadata root", assignDoc("a", "metadata.labels.x", val), []string{"spec.location", "cannot change metadata"}},
		{"quoted metadata root", assignDoc("a", `"metadata".labels.x`, val), []string{"cannot change metadata"}},
		{"glob at the end", assignDoc("a", "spec.containers[name: *]", "    assign: {value: {name: x}}\n"), []string{"glob"}},
		{"key changed", assignDoc("a", "spec.containers[name: foo].name", val), []string{"key field"}},
		{"list element must be an object", assignDoc("a", "spec.containers[name: foo]", val), []string{"spec.parameters.assign.value", "must be assigned an object"}},
		{"list element must keep its key", assignDoc("a", "spec.containers[name: foo]", "    assign: {value: {name: bar}}\n"), []string{"must carry name: foo"}},
		{"list element key is type-sensitive", assignDoc("a", `spec.ports[port: "80"]`, "    assign: {value: {port: 80}}\n"), []string{"must carry"}},
		{"fromMetadata into a list element", assignDoc("a", "spec.containers[name: foo]", "    assign: {fromMetadata: {field: name}}\n"), []string{"cannot assign a string to a list element"}},
		{"bad fromMetadata field", assignDoc("a", "spec.x", "    assign: {fromMetadata: {field: uid}}\n"), []string{"spec.parameters.assign.fromMetadata.field: Unsupported value"}},
		{"externalData without provider", assignDoc("a", "spec.x", "    assign: {externalData: {dataSource: Username}}\n"), []string{"spec.parameters.assign.externalData.provider: Required"}},
		{"externalData bad provider name", assignDoc("a", "spec.x", "    assign: {externalData: {provider: Tag_Digest}}\n"), []string{"spec.parameters.assign.externalData.provider: Invalid"}},
		{"externalData bad dataSource", assignDoc("a", "spec.x", "    assign: {externalData: {provider: p, dataSource: Location}}\n"), []string{"spec.parameters.assign.externalData.dataSource: Unsupported value"}},
		{"externalData bad failurePolicy", assignDoc("a", "spec.x", "    assign: {externalData: {provider: p, failurePolicy: Retry}}\n"), []string{"spec.parameters.assign.externalData.failurePolicy: Unsupported value"}},
		{"externalData UseDefault without default", assignDoc("a", "spec.x", "    assign: {externalData: {provider: p, failurePolicy: UseDefault}}\n"), []string{"spec.parameters.assign.externalData.default: Required"}},
		{"externalData into a list element", assignDoc("a", "spec.containers[name: foo]", "    assign: {externalData: {provider: p}}\n"), []string{"spec.parameters.assign.externalData: Invalid", "list element"}},
		{"CONNECT operation", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod], operations: [CONNECT]}]\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"spec.applyTo[0].operations[0]: Unsupported value"}},
		{"lower-case operation", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod], operations: [create]}]\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"spec.applyTo[0].operations[0]: Unsupported value"}},
		{"applyTo without groups", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{versions: [v1], kinds: [Pod]}]\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"spec.applyTo[0].groups: Required"}},
		{"applyTo without kinds", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{groups: [''], versions: [v1]}]\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"spec.applyTo[0].kinds: Required"}},
		{"null value", assignDoc("a", "spec.x", "    assign: {value: null}\n"), []string{"exactly one of"}},
		{"fromMetadata into a glob", assignDoc("a", "spec.containers[name: *]", "    assign: {fromMetadata: {field: name}}\n"), []string{"glob", "cannot assign a string to a list element"}},
		{"metadata value a boolean", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  location: metadata.annotations.x\n  parameters: {assign: {value: true}}\n", []string{"spec.parameters.assign.value", "strings"}},
		{"metadata deeper than a key", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  location: metadata.labels.x.y\n  parameters: {assign: {value: x}}\n", []string{"metadata.labels.<key>"}},
		{"metadata list selector", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  location: 'metadata.labels[x: y]'\n  parameters: {assign: {value: x}}\n", []string{"metadata.labels.<key>"}},
		{"metadata pathTests are not a field", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  location: metadata.labels.x\n  parameters: {pathTests: [], assign: {value: x}}\n", []string{`unknown field "spec.parameters.pathTests"`}},
		{"set with a quoted metadata root", "apiVersion: mutations.gatekeeper.sh/v1\nkind: ModifySet\nmetadata: {name: s}\nspec:\n" + applyTo + "  location: '\"metadata\".finalizers'\n  parameters: {values: {fromList: [a]}}\n", []string{"cannot change metadata"}},
		{"image under metadata", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'metadata.annotations.image'\n  parameters: {assignTag: ':v1'}\n", []string{"cannot change metadata"}},
		{"image tag with a path", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignTag: ':v1/x'}\n", []string{"assignTag"}},
		{"image localhost path", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignPath: localhost/app}\n", []string{"reads as a domain"}},
		{"image path with a tag", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignPath: 'app:v1'}\n", []string{"assignPath"}},
		{"image domain with a trailing dot part", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignDomain: 'a.'}\n", []string{"assignDomain"}},
		{"image pathTest not a prefix", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignTag: ':v1', pathTests: [{subPath: 'spec.initContainers', condition: MustExist}]}\n", []string{"pathTests[0].subPath", "prefix"}},
		{"set pathTest conflict", "apiVersion: mutations.gatekeeper.sh/v1\nkind: ModifySet\nmetadata: {name: s}\nspec:\n" + applyTo + "  location: spec.a.args\n  parameters: {values: {fromList: [a]}, pathTests: [{subPath: spec.a.args, condition: MustExist}, {subPath: spec, condition: MustNotExist}]}\n", []string{"must not exist"}},
		{"two sources", assignDoc("a", "spec.x", "    assign: {value: x, fromMetadata: {field: name}}\n"), []string{"exactly one of"}},
		{"no source", assignDoc("a", "spec.x", "    assign: {}\n"), []string{"exactly one of"}},
		{"name too long", assignDoc(strings.Repeat("n", 64), "spec.x", val), []string{"metadata.name: Too long"}},
		{"grandparent forbidden, grandchild required", assignDoc("a", "spec.a.b", val+"    pathTests: [{subPath: spec, condition: MustNotExist}, {subPath: spec.a.b, condition: MustExist}]\n"), []string{"must not exist"}},
		{"no name", assignDoc("''", "spec.x", val), []string{"metadata.name: Required"}},
		{"unknown field", assignDoc("a", "spec.x", val+"    asign: {}\n"), []string{`Assign "a"`, `unknown field "spec.parameters.asign"`}},
		{"wrong case field", assignDoc("a", "spec.x", "    Assign: {value: x}\n"), []string{"unknown field"}},
		{"pathTest not a prefix", assignDoc("a", "spec.a.b", val+"    pathTests: [{subPath: spec.c, condition: MustExist}]\n"), []string{"spec.parameters.pathTests[0].subPath", "prefix"}},
		{"pathTest bad condition", assignDoc("a", "spec.a.b", val+"    pathTests: [{subPath: spec.a, condition: Exists}]\n"), []string{"pathTests[0].condition: Unsupported value"}},
		{"pathTest both ways", assignDoc("a", "spec.a.b", val+"    pathTests: [{subPath: spec.a, condition: MustExist}, {subPath: spec.a, condition: MustNotExist}]\n"), []string{"required to exist and not to exist"}},
		{"pathTest child required under a forbidden parent", assignDoc("a", "spec.a.b", val+"    pathTests: [{subPath: spec.a, condition: MustNotExist}, {subPath: spec.a.b, condition: MustExist}]\n"), []string{"must not exist"}},
		// Gatekeeper only catches the line above in this order; we judge by depth.
		{"pathTest child required listed first", assignDoc("a", "spec.a.b", val+"    pathTests: [{subPath: spec.a.b, condition: MustExist}, {subPath: spec, condition: MustNotExist}]\n"), []string{"must not exist"}},
		{"missing applyTo", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"spec.applyTo: Required"}},
		{"applyTo without versions", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{groups: [''], kinds: [Pod]}]\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"spec.applyTo[0].versions: Required"}},
		{"DELETE operation", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod], operations: [DELETE]}]\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"spec.applyTo[0].operations[0]: Unsupported value"}},
		{"duplicate operation", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod], operations: [CREATE, CREATE]}]\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"operations[1]: Duplicate"}},
		{"star with another operation", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod], operations: ['*', UPDATE]}]\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"cannot be combined"}},
		{"bad match wildcard", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod]}]\n  match: {namespaces: ['a*b']}\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"spec.match.namespaces[0]: Invalid value"}},
		{"bad match source", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod]}]\n  match: {source: Both}\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"spec.match.source: Unsupported value"}},
		{"bad label selector", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\nspec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod]}]\n  match: {labelSelector: {matchExpressions: [{key: a, operator: Maybe}]}}\n  location: spec.x\n  parameters: {assign: {value: 1}}\n", []string{"spec.match.labelSelector: Invalid value"}},
		{"unknown kind", "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assignment\nmetadata: {name: a}\n", []string{`Assignment "a": kind: Unsupported value`}},
		{"AssignImage only at v1alpha1", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignImage\nmetadata: {name: a}\n", []string{`AssignImage "a": apiVersion: Unsupported value`}},
		{"wrong group", "apiVersion: mutations.example.com/v1\nkind: Assign\nmetadata: {name: a}\n", []string{"apiVersion: Unsupported value"}},

		{"metadata location shape", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  location: metadata.name\n  parameters: {assign: {value: x}}\n", []string{`AssignMetadata "m": spec.location`, "metadata.labels.<key>"}},
		{"metadata under spec", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  location: spec.labels.x\n  parameters: {assign: {value: x}}\n", []string{"metadata.labels.<key>"}},
		{"metadata value not a string", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  location: metadata.labels.x\n  parameters: {assign: {value: 3}}\n", []string{"spec.parameters.assign.value", "strings"}},
		{"metadata has no applyTo", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  applyTo: []\n  location: metadata.labels.x\n  parameters: {assign: {value: x}}\n", []string{`unknown field "spec.applyTo"`}},
		{"metadata externalData", "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: m}\nspec:\n  location: metadata.labels.x\n  parameters: {assign: {externalData: {provider: p, dataSource: ValueAtLocation}}}\n", []string{"spec.parameters.assign.externalData.dataSource: Unsupported value"}},

		{"set ending in a list node", "apiVersion: mutations.gatekeeper.sh/v1\nkind: ModifySet\nmetadata: {name: s}\nspec:\n" + applyTo + "  location: 'spec.containers[name: x]'\n  parameters: {values: {fromList: [a]}}\n", []string{`ModifySet "s": spec.location`, "list selector"}},
		{"set under metadata", "apiVersion: mutations.gatekeeper.sh/v1\nkind: ModifySet\nmetadata: {name: s}\nspec:\n" + applyTo + "  location: metadata.finalizers\n  parameters: {values: {fromList: [a]}}\n", []string{"cannot change metadata"}},
		{"set operation", "apiVersion: mutations.gatekeeper.sh/v1\nkind: ModifySet\nmetadata: {name: s}\nspec:\n" + applyTo + "  location: spec.args\n  parameters: {operation: add, values: {fromList: [a]}}\n", []string{"spec.parameters.operation: Unsupported value"}},

		{"image needs a part", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {}\n", []string{`AssignImage "i": spec.parameters`, "at least one"}},
		{"image domain without a dot", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignDomain: myregistry}\n", []string{"assignDomain"}},
		{"image domain with a path", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignDomain: a.io/x}\n", []string{"assignDomain"}},
		{"image path that looks like a domain", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignPath: gcr.io/repo}\n", []string{"reads as a domain"}},
		{"image path upper case", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignPath: Repo}\n", []string{"assignPath"}},
		{"image tag without colon", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignTag: latest}\n", []string{"assignTag"}},
		{"image short digest", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignTag: '@sha256:abc'}\n", []string{"assignTag"}},
		{"image tag too long", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: *].image'\n  parameters: {assignTag: ':" + strings.Repeat("t", 129) + "'}\n", []string{"assignTag"}},
		{"image ending in a list", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[name: x]'\n  parameters: {assignTag: ':v1'}\n", []string{"list selector"}},
		{"image key changed", "apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: i}\nspec:\n" + applyTo + "  location: 'spec.containers[image: x].image'\n  parameters: {assignTag: ':v1'}\n", []string{"key field"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Decode succeeded, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDecodeAcceptsGatekeeperManifests(t *testing.T) {
	docs := []string{
		`apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata:
  name: demo-image-pull-policy
  labels: {team: platform}
  annotations: {note: from the Gatekeeper docs}
spec:
  applyTo:
  - groups: [""]
    kinds: ["Pod"]
    versions: ["v1"]
    operations: ["CREATE"]
  match:
    scope: Namespaced
    kinds:
    - apiGroups: ["*"]
      kinds: ["Pod"]
    excludedNamespaces: ["system"]
    source: All
  location: "spec.containers[name:*].imagePullPolicy"
  parameters:
    pathTests:
    - subPath: "spec.containers[name:*].imagePullPolicy"
      condition: MustNotExist
    assign:
      value: Always
status:
  byPod: []
`,
		`apiVersion: mutations.gatekeeper.sh/v1alpha1
kind: ModifySet
metadata: {name: remove-err-logging}
spec:
  applyTo: [{groups: [""], kinds: ["Pod"], versions: ["v1"]}]
  location: "spec.containers[name: *].args"
  parameters:
    operation: prune
    values:
      fromList: ["--alsologtostderr"]
`,
		`{"apiVersion":"mutations.gatekeeper.sh/v1","kind":"AssignMetadata","metadata":{"name":"label"},"spec":{"match":{"namespaceSelector":{"matchLabels":{"a":"b"}},"name":"web-*"},"location":"metadata.labels.gatekeeper","parameters":{"assign":{"value":"yes"}}}}`,
		`apiVersion: mutations.gatekeeper.sh/v1alpha1
kind: AssignImage
metadata: {name: assign-container-image}
spec:
  applyTo: [{groups: [""], kinds: ["Pod"], versions: ["v1"]}]
  location: "spec.containers[name:*].image"
  parameters: {assignDomain: "my.registry.io", assignPath: "repo/app", assignTag: ":latest"}
  match:
    source: "All"
    scope: Namespaced
    kinds: [{apiGroups: ["*"], kinds: ["Pod"]}]
`,
	}
	// The longest name Gatekeeper takes.
	docs = append(docs, "apiVersion: mutations.gatekeeper.sh/v1\nkind: AssignMetadata\nmetadata: {name: "+strings.Repeat("n", maxNameLength)+"}\nspec:\n  location: metadata.labels.x\n  parameters: {assign: {value: x}}\n")
	for _, d := range docs {
		if _, err := Decode([]byte(d)); err != nil {
			t.Errorf("Decode: %v", err)
		}
	}
}

// Status is written by the servers that enforce a mutator, so no shape of it
// may stop a manifest from loading; the rest of the object stays strict.
func TestDecodeIgnoresStatus(t *testing.T) {
	const head = "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata: {name: a}\n"
	const spec = "spec:\n  applyTo: [{groups: [''], versions: [v1], kinds: [Pod]}]\n  location: spec.x\n  parameters: {assign: {value: 1}}\n"
	tests := []struct {
		name   string
		doc    string
		errSub string // "" when the manifest must load
	}{
		{"Gatekeeper's status", head + spec + `status:
  byPod:
  - id: gatekeeper-controller-manager-6bcc7f8fb5-4nbkt
    mutatorUID: 2f5b0b1e-7f0e-4b8c-9d0a-6f1c2d3e4f50
    observedGeneration: 3
    operations: [mutation-status, mutation-webhook]
    enforced: false
    errors:
    - type: schema_conflict
      message: conflicts with ModifySet "args"
`, ""},
		{"a field this version does not know", head + spec + "status: {byPod: [{id: x, reason: new}], summary: {}}\n", ""},
		{"not an object", head + spec + "status: enforced\n", ""},
		{"null", head + spec + "status: null\n", ""},
		{"status first", head + "status: {byPod: []}\n" + spec, ""},
		{"JSON", `{"apiVersion":"mutations.gatekeeper.sh/v1","kind":"Assign","metadata":{"name":"a"},"status":{"byPod":[{"id":"x","enforced":true}]},"spec":{"applyTo":[{"groups":[""],"versions":["v1"],"kinds":["Pod"]}],"location":"spec.x","parameters":{"assign":{"value":1}}}}`, ""},
		{"duplicate field beside a status", head + spec + "status: {}\nspec: {}\n", `"spec" already set`},
		{"duplicate nested field", head + spec + "  location: spec.y\n", `"location" already set`},
		{"duplicate JSON field", `{"apiVersion":"mutations.gatekeeper.sh/v1","kind":"Assign","metadata":{"name":"a"},"spec":{},"status":{},"spec":{}}`, `"spec" already set`},
		{"unknown field beside a status", head + spec + "  paramters: {}\nstatus: {byPod: []}\n", `unknown field "spec.paramters"`},
		{"invalid spec beside a status", head + "spec: {location: spec.x, parameters: {assign: {value: 1}}}\nstatus: {byPod: []}\n", "spec.applyTo: Required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode([]byte(tc.doc))
			switch {
			case tc.errSub == "" && err != nil:
				t.Fatalf("Decode: %v", err)
			case tc.errSub == "" && m.ID() != (ID{Kind: mutationsv1.KindAssign, Name: "a"}):
				t.Fatalf("decoded %v", m.ID())
			case tc.errSub != "" && (err == nil || !strings.Contains(err.Error(), tc.errSub)):
				t.Fatalf("Decode error %v, want one containing %q", err, tc.errSub)
			}
		})
	}
}
