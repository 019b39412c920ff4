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

package strictdecode

import (
	"strings"
	"testing"
)

type config struct {
	Kind  string `json:"kind"`
	Items []item `json:"items"`
}

type item struct {
	Name string `json:"name"`
}

func TestYAMLOrJSON(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		found     bool
		want      config
		err       string
	}{
		{name: "YAML", doc: "kind: C\nitems: [{name: a}]\n", found: true, want: config{Kind: "C", Items: []item{{Name: "a"}}}},
		{name: "JSON", doc: `{"kind": "C"}`, found: true, want: config{Kind: "C"}},
		{name: "null", doc: "null\n"},
		{name: "comment only", doc: "# nothing\n"},
		{name: "a key in another case", doc: "Kind: C\n", err: `unknown field "Kind"`},
		{name: "an unknown field, by its path", doc: "items: [{name: a, nmae: b}]\n", err: `unknown field "items[0].nmae"`},
		{name: "a duplicate YAML key", doc: "kind: C\nkind: D\n", err: `"kind" already set`},
		{name: "a duplicate JSON key", doc: `{"kind": "C", "kind": "D"}`, err: `"kind" already set`},
		{name: "not YAML", doc: "kind: [\n", err: "not YAML or JSON"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got config
			found, err := YAMLOrJSON([]byte(tt.doc), &got)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || found != tt.found || got.Kind != tt.want.Kind || len(got.Items) != len(tt.want.Items) {
				t.Fatalf("got %v, %+v, %v; want %v, %+v", found, got, err, tt.found, tt.want)
			}
		})
	}
}

func TestRead(t *testing.T) {
	if data, err := Read(nil); data != nil || err != nil {
		t.Errorf("nil reader: %q, %v", data, err)
	}
	if data, err := Read(strings.NewReader(" \n\t")); data != nil || err != nil {
		t.Errorf("white space: %q, %v", data, err)
	}
	if data, err := Read(strings.NewReader("kind: C\n")); string(data) != "kind: C\n" || err != nil {
		t.Errorf("a document: %q, %v", data, err)
	}
}
