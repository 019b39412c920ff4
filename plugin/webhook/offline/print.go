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

package offline

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Print writes the admitted objects as YAML documents, or one JSON
// v1 List, or with diff a unified diff per object of what admission
// changed.
func Print(w io.Writer, results []Admitted, output string, diff bool) error {
	if diff {
		for _, r := range results {
			if r.Result.Object == nil {
				continue
			}
			text, err := unifiedDiff(r.Name+" (given)", r.Name+" (admitted)", r.Input, r.Result.Object)
			if err != nil {
				return err
			}
			fmt.Fprint(w, text)
		}
		return nil
	}
	if output == "json" {
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{}}
		for _, r := range results {
			if r.Result.Object != nil {
				list["items"] = append(list["items"].([]any), r.Result.Object.Object)
			}
		}
		data, err := json.MarshalIndent(list, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	}
	for _, r := range results {
		if r.Result.Object == nil {
			continue
		}
		data, err := yaml.Marshal(r.Result.Object.Object)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "---\n%s", data)
	}
	return nil
}

// unifiedDiff is the diff of two objects' YAML, headed by their names.
func unifiedDiff(fromName, toName string, from, to *unstructured.Unstructured) (string, error) {
	a, err := yaml.Marshal(from.Object)
	if err != nil {
		return "", err
	}
	b, err := yaml.Marshal(to.Object)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)),
		FromFile: fromName, ToFile: toName, Context: 3,
	})
}
