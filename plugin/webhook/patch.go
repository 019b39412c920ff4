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
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// patchOperation is one operation of an RFC 6902 JSON Patch.
type patchOperation struct {
	Op    string
	Path  string
	Value any
}

// MarshalJSON writes the value of every add and replace, null included,
// and none for a remove.
func (o patchOperation) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}{o.Op, o.Path, o.Value})
}

// jsonPatch returns the RFC 6902 patch that turns the JSON document before
// into after, or nil when they are the same. kube-apiserver applies the
// patch to its own encoding of the object it sent, which is the encoding
// of before: both come from the same typed object through the same JSON
// serializer, so every path the patch names exists there.
//
// Objects are compared key by key; a list is patched element by element
// over the shorter length, then extended or cut at its end. A list whose
// middle gained an element therefore gets replaces rather than one add:
// longer, never wrong.
func jsonPatch(before, after []byte) ([]byte, error) {
	if bytes.Equal(before, after) {
		return nil, nil
	}
	var from, to any
	if err := decodeJSON(before, &from); err != nil {
		return nil, err
	}
	if err := decodeJSON(after, &to); err != nil {
		return nil, err
	}
	ops := diffValue(nil, "", from, to)
	if len(ops) == 0 {
		return nil, nil
	}
	return json.Marshal(ops)
}

// decodeJSON keeps numbers as written, so that 1 and 1.0 compare as the
// text they are and large integers keep every digit.
func decodeJSON(data []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

func diffValue(ops []patchOperation, path string, from, to any) []patchOperation {
	switch f := from.(type) {
	case map[string]any:
		if t, ok := to.(map[string]any); ok {
			return diffObject(ops, path, f, t)
		}
	case []any:
		if t, ok := to.([]any); ok {
			return diffList(ops, path, f, t)
		}
	default:
		if sameScalar(from, to) {
			return ops
		}
	}
	return append(ops, patchOperation{Op: "replace", Path: path, Value: to})
}

func sameScalar(from, to any) bool {
	switch to.(type) {
	case map[string]any, []any:
		return false
	}
	return from == to
}

func diffObject(ops []patchOperation, path string, from, to map[string]any) []patchOperation {
	for _, key := range sortedKeys(from) {
		if _, kept := to[key]; !kept {
			ops = append(ops, patchOperation{Op: "remove", Path: path + "/" + escapePointer(key)})
		}
	}
	for _, key := range sortedKeys(to) {
		child := path + "/" + escapePointer(key)
		old, had := from[key]
		if !had {
			ops = append(ops, patchOperation{Op: "add", Path: child, Value: to[key]})
			continue
		}
		ops = diffValue(ops, child, old, to[key])
	}
	return ops
}

func diffList(ops []patchOperation, path string, from, to []any) []patchOperation {
	common := min(len(from), len(to))
	for i := range common {
		ops = diffValue(ops, path+"/"+strconv.Itoa(i), from[i], to[i])
	}
	for i := common; i < len(to); i++ {
		ops = append(ops, patchOperation{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: to[i]})
	}
	// Removing from the end keeps every index still to remove valid.
	for i := len(from) - 1; i >= common; i-- {
		ops = append(ops, patchOperation{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
	}
	return ops
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// pointerEscaper escapes a key for a JSON Pointer (RFC 6901). A Replacer
// replaces in one pass, so the "~" of an escaped "/" is not escaped again.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(key string) string {
	return pointerEscaper.Replace(key)
}
