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

package compiler

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The CEL literals every policy is written with.

// celString is a CEL string literal of s. Go's quoting escapes are all CEL
// escapes, and values decoded from JSON are valid UTF-8.
func celString(s string) string { return strconv.Quote(s) }

// celLiteral is a CEL literal of a JSON value as the mutation package
// decodes it (integers as int64, other numbers as float64). Members of maps
// and lists are wrapped in dyn(), so that mixed types type-check.
func celLiteral(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return celString(v)
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") {
			s += ".0"
		}
		return s
	case map[string]any:
		parts := make([]string, 0, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, fmt.Sprintf("%s: dyn(%s)", celString(k), celLiteral(v[k])))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = "dyn(" + celLiteral(e) + ")"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	// mutationsv1.Value's decoder makes no other type.
	return "null"
}

// celStrings is a CEL list literal of strings.
func celStrings(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = celString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
