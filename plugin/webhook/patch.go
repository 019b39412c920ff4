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

// patchOperation is one operation of an RFC 6902 JSON Patch. Value is a
// value of the document diffed, as it was encoded there.
type patchOperation struct {
	Op    string
	Path  string
	Value []byte
}

// diffJSON returns the RFC 6902 operations that turn the JSON document
// before into after, none when they hold the same values.
//
// kube-apiserver applies the patch to its own encoding of the object it
// sent. before and after are both the host's encoding of the decoded
// object, so the patch names only what the plugin changed: fields the
// host's types do not know (those of a newer kube-apiserver) are in
// kube-apiserver's encoding alone and stay untouched.
//
// Both are the host's encodings, so valid JSON that encoding/json wrote:
// the splitters check their structure only, and the patch carries pieces
// of after as they are.
//
// Objects are compared key by key; a list element by element over the
// shorter length, then extended or cut at its end. A list whose middle
// gained an element therefore gets replaces of the later elements' fields
// rather than one add: longer, never wrong. Subtrees whose encodings are
// the same bytes are not decoded at all, so a change costs in proportion
// to its path, not to the object.
func diffJSON(before, after []byte) ([]patchOperation, error) {
	return diffValue(nil, "", before, after)
}

// marshalPatch writes ops as a JSON Patch: a value for every add and
// replace, null included, none for a remove. The values are written as
// they are: each is a piece of one of the host's own encodings, which
// encoding/json wrote valid and compact, so compacting them again would
// only scan them once more.
func marshalPatch(ops []patchOperation) ([]byte, error) {
	size := 2
	for _, op := range ops {
		size += len(`{"op":"","path":"","value":},`) + len(op.Op) + len(op.Path) + len(op.Value)
	}
	var buf bytes.Buffer
	buf.Grow(size)
	buf.WriteByte('[')
	for i, op := range ops {
		if i > 0 {
			buf.WriteByte(',')
		}
		path, err := json.Marshal(op.Path)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`{"op":"`)
		buf.WriteString(op.Op)
		buf.WriteString(`","path":`)
		buf.Write(path)
		if op.Op != "remove" {
			buf.WriteString(`,"value":`)
			buf.Write(op.Value)
		}
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

func diffValue(ops []patchOperation, path string, from, to []byte) ([]patchOperation, error) {
	from, to = bytes.TrimSpace(from), bytes.TrimSpace(to)
	if bytes.Equal(from, to) {
		return ops, nil
	}
	switch {
	case isKind(from, '{') && isKind(to, '{'):
		f, err := splitObject(from)
		if err != nil {
			return nil, err
		}
		t, err := splitObject(to)
		if err != nil {
			return nil, err
		}
		return diffObject(ops, path, f, t)
	case isKind(from, '[') && isKind(to, '['):
		f, err := splitArray(from)
		if err != nil {
			return nil, err
		}
		t, err := splitArray(to)
		if err != nil {
			return nil, err
		}
		return diffList(ops, path, f, t)
	}
	return append(ops, patchOperation{Op: "replace", Path: path, Value: to}), nil
}

func isKind(v []byte, open byte) bool {
	return len(v) > 0 && v[0] == open
}

// diffObject walks the members of from and to, both sorted by key, side
// by side: first the removals, then the additions and the changes, each
// in key order. A member's path is built only for a member that changed,
// as most of them have not.
func diffObject(ops []patchOperation, path string, from, to []member) ([]patchOperation, error) {
	j := 0
	for _, m := range from {
		for j < len(to) && to[j].key < m.key {
			j++
		}
		if j == len(to) || to[j].key != m.key {
			ops = append(ops, patchOperation{Op: "remove", Path: path + "/" + escapePointer(m.key)})
		}
	}
	i := 0
	var err error
	for _, m := range to {
		for i < len(from) && from[i].key < m.key {
			i++
		}
		if i == len(from) || from[i].key != m.key {
			ops = append(ops, patchOperation{Op: "add", Path: path + "/" + escapePointer(m.key), Value: m.value})
			continue
		}
		if bytes.Equal(from[i].value, m.value) {
			continue
		}
		if ops, err = diffValue(ops, path+"/"+escapePointer(m.key), from[i].value, m.value); err != nil {
			return nil, err
		}
	}
	return ops, nil
}

func diffList(ops []patchOperation, path string, from, to [][]byte) ([]patchOperation, error) {
	common := min(len(from), len(to))
	var err error
	for i := range common {
		if bytes.Equal(from[i], to[i]) {
			continue
		}
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
