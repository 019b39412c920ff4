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
	Value json.RawMessage
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
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}{o.Op, o.Path, o.Value})
}

// jsonPatch returns the RFC 6902 patch that turns the JSON document before
// into after, or nil when they hold the same values.
//
// kube-apiserver applies the patch to its own encoding of the object it
// sent. before and after are both the host's encoding of the decoded
// object, so the patch names only what the plugin changed: fields the
// host's types do not know (those of a newer kube-apiserver) are in
// kube-apiserver's encoding alone and stay untouched.
//
// Objects are compared key by key; a list element by element over the
// shorter length, then extended or cut at its end. A list whose middle
// gained an element therefore gets replaces of the later elements' fields
// rather than one add: longer, never wrong. Subtrees whose encodings are
// the same bytes are not decoded at all, so a change costs in proportion
// to its path, not to the object.
func jsonPatch(before, after []byte) ([]byte, error) {
	ops, err := diffValue(nil, "", before, after)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	return json.Marshal(ops)
}

func diffValue(ops []patchOperation, path string, from, to json.RawMessage) ([]patchOperation, error) {
	from, to = bytes.TrimSpace(from), bytes.TrimSpace(to)
	if bytes.Equal(from, to) {
		return ops, nil
	}
	switch {
	case isKind(from, '{') && isKind(to, '{'):
		var f, t map[string]json.RawMessage
		if err := json.Unmarshal(from, &f); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(to, &t); err != nil {
			return nil, err
		}
		return diffObject(ops, path, f, t)
	case isKind(from, '[') && isKind(to, '['):
		var f, t []json.RawMessage
		if err := json.Unmarshal(from, &f); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(to, &t); err != nil {
			return nil, err
		}
		return diffList(ops, path, f, t)
	}
	if !json.Valid(to) {
		return nil, &json.SyntaxError{}
	}
	return append(ops, patchOperation{Op: "replace", Path: path, Value: to}), nil
}

func isKind(v json.RawMessage, open byte) bool {
	return len(v) > 0 && v[0] == open
}

func diffObject(ops []patchOperation, path string, from, to map[string]json.RawMessage) ([]patchOperation, error) {
	for _, key := range sortedKeys(from) {
		if _, kept := to[key]; !kept {
			ops = append(ops, patchOperation{Op: "remove", Path: path + "/" + escapePointer(key)})
		}
	}
	var err error
	for _, key := range sortedKeys(to) {
		child := path + "/" + escapePointer(key)
		old, had := from[key]
		if !had {
			ops = append(ops, patchOperation{Op: "add", Path: child, Value: to[key]})
			continue
		}
		if ops, err = diffValue(ops, child, old, to[key]); err != nil {
			return nil, err
		}
	}
	return ops, nil
}

func diffList(ops []patchOperation, path string, from, to []json.RawMessage) ([]patchOperation, error) {
	common := min(len(from), len(to))
	var err error
	for i := range common {
		if ops, err = diffValue(ops, path+"/"+strconv.Itoa(i), from[i], to[i]); err != nil {
			return nil, err
		}
	}
	for i := common; i < len(to); i++ {
		ops = append(ops, patchOperation{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: to[i]})
	}
	// Removing from the end keeps every index still to remove valid.
	for i := len(from) - 1; i >= common; i-- {
		ops = append(ops, patchOperation{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
	}
	return ops, nil
}

func sortedKeys[V any](m map[string]V) []string {
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
