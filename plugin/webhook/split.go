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
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The patch is computed between two encodings of one object, and decoding
// whole subtrees only to find which of their members changed would cost
// more than everything else a review does. splitObject and splitArray cut
// one level of a JSON value into its members' encodings, which are
// compared as bytes and split further only where they differ. They keep
// JSON's rules (strings with escapes, nesting) and report malformed input
// as an error; they do not validate the members' values, which encoding/json
// wrote (see diffJSON).

var errMalformed = errors.New("malformed JSON")

// member is one member of a JSON object: its key, unquoted, and its
// value's encoding.
type member struct {
	key   string
	value []byte
}

// splitObject returns the members of a JSON object sorted by key; a key
// given twice keeps its last value, as encoding/json does. A sorted slice
// rather than a map: an object of a Kubernetes object has tens of members
// at most, the diff walks two of them side by side in key order, and a
// review splits one per changed level, so the maps' allocations were
// most of the split's cost.
func splitObject(data []byte) ([]member, error) {
	var members []member
	i := skipSpace(data, 1)
	if i < len(data) && data[i] == '}' {
		return members, expectEnd(data, i+1)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, errMalformed
		}
		end, err := skipString(data, i)
		if err != nil {
			return nil, err
		}
		key, err := unquote(data[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, errMalformed
		}
		start := skipSpace(data, i+1)
		if end, err = skipValue(data, start); err != nil {
			return nil, err
		}
		members = append(members, member{key: key, value: data[start:end]})
		if i, err = nextMember(data, end, '}'); err != nil {
			return nil, err
		}
		if i < 0 {
			return sortMembers(members), nil
		}
	}
}

// sortMembers sorts members by key, keeping of each key its last value.
func sortMembers(members []member) []member {
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	out := members[:0]
	for i, m := range members {
		if i+1 < len(members) && members[i+1].key == m.key {
			continue
		}
		out = append(out, m)
	}
	return out
}

// splitArray returns the elements of a JSON array.
func splitArray(data []byte) ([][]byte, error) {
	var elements [][]byte
	i := skipSpace(data, 1)
	if i < len(data) && data[i] == ']' {
		return elements, expectEnd(data, i+1)
	}
	for {
		end, err := skipValue(data, i)
		if err != nil {
			return nil, err
		}
		elements = append(elements, data[i:end])
		if i, err = nextMember(data, end, ']'); err != nil || i < 0 {
			return elements, err
		}
	}
}

// nextMember moves past the comma after a member to the next one, or
// returns -1 at the closing bracket that ends data.
func nextMember(data []byte, i int, closing byte) (int, error) {
	i = skipSpace(data, i)
	switch {
	case i < len(data) && data[i] == ',':
		return skipSpace(data, i+1), nil
	case i < len(data) && data[i] == closing:
		return -1, expectEnd(data, i+1)
	}
	return 0, errMalformed
}

func expectEnd(data []byte, i int) error {
	if skipSpace(data, i) != len(data) {
		return errMalformed
	}
	return nil
}

func unquote(quoted []byte) (string, error) {
	for _, c := range quoted[1 : len(quoted)-1] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			var s string
			if err := json.Unmarshal(quoted, &s); err != nil {
				return "", fmt.Errorf("%w: key %s: %v", errMalformed, quoted, err)
			}
			return s, nil
		}
	}
	return string(quoted[1 : len(quoted)-1]), nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at i.
func skipString(data []byte, i int) (int, error) {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errMalformed
}

// skipValue returns the index after the value that starts at i.
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, errMalformed
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				end, err := skipString(data, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errMalformed
	}
	start := i
	for i < len(data) && data[i] != ',' && data[i] != '}' && data[i] != ']' && data[i] != ' ' && data[i] != '\t' && data[i] != '\n' && data[i] != '\r' {
		i++
	}
	if i == start {
		return 0, errMalformed
	}
	return i, nil
}
