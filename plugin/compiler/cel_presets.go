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
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/selection"
)

// celItem is a preset's item v, marshalled to JSON, as a CEL literal made
// of plain maps and lists: kube-apiserver marshals such a value back to the
// same JSON when it is a JSONPatch value, and a pod's item, read from the
// object, is equal to it exactly when their JSON forms are equal. Every
// number of the items a preset carries is an integer; a fraction would be
// a double in CEL and never equal the pod's, so it is an error.
func celItem(v any) (string, error) {
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
	value, err := integersOnly(decoded)
	if err != nil {
		return "", err
	}
	return celLiteral(value), nil
}

// integersOnly is v with its JSON numbers as int64, the form celLiteral
// reads, or an error for a number that is not an integer.
func integersOnly(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("number %s is not an integer", v)
		}
		return n, nil
	case []any:
		for i, e := range v {
			var err error
			if v[i], err = integersOnly(e); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k, e := range v {
			var err error
			if v[k], err = integersOnly(e); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
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
