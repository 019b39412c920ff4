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

package match

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"testing"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/crds"
)

// A kubebuilder marker cannot name a Go variable, so the CRDs carry
// wildcardRE as a literal pattern (on name, namespaces and
// excludedNamespaces): the two must not drift apart.
func TestCRDPatternsAreWildcardRE(t *testing.T) {
	objs, err := crds.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "pattern" {
					patterns = append(patterns, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for _, o := range objs {
		if g, _, _ := unstructured.NestedString(o.Object, "spec", "group"); g == "mutations.gatekeeper.sh" {
			walk(o.Object)
		}
	}
	// 3 fields in 10 served versions.
	if len(patterns) != 30 {
		t.Errorf("%d patterns in the CRDs, want 30", len(patterns))
	}
	for _, p := range patterns {
		if p != wildcardRE.String() {
			t.Errorf("CRD pattern %q, want %q", p, wildcardRE.String())
		}
	}
}
