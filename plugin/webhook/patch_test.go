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

package webhook

import (
	"encoding/json"
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// jsonPatch is the patch of the operations diffJSON finds, nil for none.
func jsonPatch(before, after []byte) ([]byte, error) {
	ops, err := diffJSON(before, after)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	return marshalPatch(ops)
}

// applies checks that the patch jsonPatch makes turns before into after
// when a real JSON Patch library applies it.
func applies(t *testing.T, before, after string) []byte {
	t.Helper()
	patch, err := jsonPatch([]byte(before), []byte(after))
	if err != nil {
		t.Fatalf("jsonPatch: %v", err)
	}
	got := []byte(before)
	if patch != nil {
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatalf("patch %s does not decode: %v", patch, err)
		}
		if got, err = p.Apply(got); err != nil {
			t.Fatalf("patch %s does not apply to %s: %v", patch, before, err)
		}
	}
	if !sameJSON(t, got, []byte(after)) {
		t.Fatalf("patch %s turns %s into %s, want %s", patch, before, got, after)
	}
	return patch
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func TestJSONPatch(t *testing.T) {
	for _, tc := range []struct {
		name, before, after, patch string
	}{
		{"same", `{"a":1}`, `{"a":1}`, ``},
		{"same but spaced", `{"a": 1}`, `{"a":1}`, ``},
		{"added key", `{}`, `{"a":{"b":1}}`, `[{"op":"add","path":"/a","value":{"b":1}}]`},
		{"removed key", `{"a":1,"b":2}`, `{"b":2}`, `[{"op":"remove","path":"/a"}]`},
		{"replaced scalar", `{"a":1}`, `{"a":"1"}`, `[{"op":"replace","path":"/a","value":"1"}]`},
		{"null value", `{"a":1}`, `{"a":null}`, `[{"op":"replace","path":"/a","value":null}]`},
		{"added null", `{}`, `{"a":null}`, `[{"op":"add","path":"/a","value":null}]`},
		{"escaped keys", `{"metadata":{}}`, `{"metadata":{"annotations":{"a/b~c":"x"}}}`,
			`[{"op":"add","path":"/metadata/annotations","value":{"a/b~c":"x"}}]`},
		{"into an escaped key", `{"m":{"a/b~c":{"x":1}}}`, `{"m":{"a/b~c":{"x":2}}}`, `[{"op":"replace","path":"/m/a~1b~0c/x","value":2}]`},
		{"key ~1 is not /", `{"~1":1,"/":1}`, `{"~1":2,"/":1}`, `[{"op":"replace","path":"/~01","value":2}]`},
		{"appended", `{"l":[1]}`, `{"l":[1,2,3]}`, `[{"op":"add","path":"/l/1","value":2},{"op":"add","path":"/l/2","value":3}]`},
		{"cut", `{"l":[1,2,3]}`, `{"l":[1]}`, `[{"op":"remove","path":"/l/2"},{"op":"remove","path":"/l/1"}]`},
		{"inside list element", `{"l":[{"n":"a"},{"n":"b"}]}`, `{"l":[{"n":"a"},{"n":"b","v":1}]}`, `[{"op":"add","path":"/l/1/v","value":1}]`},
		{"list for object", `{"a":{"b":1}}`, `{"a":[1]}`, `[{"op":"replace","path":"/a","value":[1]}]`},
		{"whole document", `{"a":1}`, `[1]`, `[{"op":"replace","path":"","value":[1]}]`},
		{"big integer kept", `{"a":1}`, `{"a":12345678901234567890}`, `[{"op":"replace","path":"/a","value":12345678901234567890}]`},
		{"empty key", `{"":1}`, `{"":2}`, `[{"op":"replace","path":"/","value":2}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "whole document" {
				// RFC 6902 allows replacing the root; kube-apiserver's
				// objects are never anything but objects, so it is
				// only checked for its text.
				patch, err := jsonPatch([]byte(tc.before), []byte(tc.after))
				if err != nil || string(patch) != tc.patch {
					t.Fatalf("patch %s, %v; want %s", patch, err, tc.patch)
				}
				return
			}
			if got := applies(t, tc.before, tc.after); string(got) != tc.patch {
				t.Errorf("patch %s, want %s", got, tc.patch)
			}
		})
	}
}

// FuzzJSONPatch: for any two JSON objects, the patch applies with a real
// JSON Patch library and gives the second.
func FuzzJSONPatch(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":null}],"c/d":"~"}`), []byte(`{"a":[{"b":1}],"c/d":"x","e":{}}`))
	f.Add([]byte(`{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c"}]}}`),
		[]byte(`{"metadata":{"labels":{"a":"b","owner":"p"}},"spec":{"containers":[{"name":"c","env":[{"name":"X","value":"1"}]}]}}`))
	f.Add([]byte(`{}`), []byte(`{"":{"~0":[[]]}}`))
	f.Fuzz(func(t *testing.T, before, after []byte) {
		var x, y map[string]any
		if json.Unmarshal(before, &x) != nil || json.Unmarshal(after, &y) != nil || x == nil || y == nil {
			return // kube-apiserver's objects are JSON objects
		}
		applies(t, string(before), string(after))
	})
}
