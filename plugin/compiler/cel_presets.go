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
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/selection"
)

// celString is s as a CEL string literal. Go's quoting only uses escapes
// CEL reads the same way (\", \\, \n, \xHH, \uHHHH, \UHHHHHHHH...).
func celString(s string) string { return strconv.Quote(s) }

// celStrings is a CEL list literal of strings.
func celStrings(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = celString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// celLiteral is v, marshalled to JSON, as a CEL literal made of plain maps
// and lists: kube-apiserver marshals such a value back to the same JSON
// when it is a JSONPatch value, and a pod's item, read from the object, is
// equal to it exactly when their JSON forms are equal. Every value inside
// a map or list is wrapped in dyn(), since kube-apiserver refuses map and
// list literals whose values differ in type.
func celLiteral(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var decoded any
	if err := d.Decode(&decoded); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := writeCELLiteral(&b, decoded); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeCELLiteral(b *strings.Builder, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		b.WriteString(celString(v))
	case json.Number:
		// Every number of the items a preset carries is an integer; a
		// fraction would be a double in CEL and never equal the pod's.
		if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
			return fmt.Errorf("number %s is not an integer", v)
		}
		b.WriteString(string(v))
	case []any:
		b.WriteString("[")
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("dyn(")
			if err := writeCELLiteral(b, e); err != nil {
				return err
			}
			b.WriteString(")")
		}
		b.WriteString("]")
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(celString(k))
			b.WriteString(": dyn(")
			if err := writeCELLiteral(b, v[k]); err != nil {
				return err
			}
			b.WriteString(")")
		}
		b.WriteString("}")
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

// celSelector is a CEL condition on the label map labels that holds when
// the selector selects it, built from the requirements
// metav1.LabelSelectorAsSelector parses the selector into (and refusing
// what it refuses). The empty selector is "true".
func celSelector(s *metav1.LabelSelector, labels string) (string, error) {
	parsed, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return "", err
	}
	requirements, _ := parsed.Requirements()
	if len(requirements) == 0 {
		return "true", nil
	}
	terms := make([]string, 0, len(requirements))
	for _, r := range requirements {
		key := celString(r.Key())
		has := key + " in " + labels
		value := labels + "[" + key + "]"
		values := celStrings(r.ValuesUnsorted())
		switch r.Operator() {
		case selection.In:
			terms = append(terms, "("+has+" && "+value+" in "+values+")")
		case selection.Equals, selection.DoubleEquals:
			terms = append(terms, "("+has+" && "+value+" == "+celString(r.ValuesUnsorted()[0])+")")
		case selection.NotIn:
			terms = append(terms, "(!("+has+") || !("+value+" in "+values+"))")
		case selection.NotEquals:
			terms = append(terms, "(!("+has+") || "+value+" != "+celString(r.ValuesUnsorted()[0])+")")
		case selection.Exists:
			terms = append(terms, "("+has+")")
		case selection.DoesNotExist:
			terms = append(terms, "!("+has+")")
		default:
			return "", fmt.Errorf("operator %q has no CEL form", r.Operator())
		}
	}
	return strings.Join(terms, " && "), nil
}

// celOr joins conditions with ||, "false" for none.
func celOr(terms []string) string {
	if len(terms) == 0 {
		return "false"
	}
	return strings.Join(terms, " || ")
}

// celConcat joins list expressions with +, "[]" for none.
func celConcat(lists []string) string {
	if len(lists) == 0 {
		return "[]"
	}
	return strings.Join(lists, " + ")
}

// jsonPointerToken escapes a map key for a JSON Patch path (RFC 6901).
func jsonPointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
