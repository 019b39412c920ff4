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
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	pod         = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	deployment  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	namespace   = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	clusterRole = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
)

func nsLabels(name string) (labels.Labels, error) {
	switch name {
	case "prod":
		return labels.Set{"env": "prod"}, nil
	case "dev":
		return labels.Set{"env": "dev"}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrNamespaceUnknown, name)
}

func TestMatches(t *testing.T) {
	sel := func(k, v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	podIn := func(ns, name string, l labels.Set) Target {
		return Target{GVK: pod, Namespace: ns, Name: name, Labels: l, NamespaceLabels: nsLabels}
	}
	tests := []struct {
		name    string
		match   Match
		target  Target
		want    bool
		wantErr bool
	}{
		{"empty matches all", Match{}, podIn("prod", "web", nil), true, false},
		{"kind listed", Match{Kinds: []Kinds{{APIGroups: []string{""}, Kinds: []string{"Pod"}}}}, podIn("prod", "web", nil), true, false},
		{"kind not listed", Match{Kinds: []Kinds{{APIGroups: []string{"apps"}, Kinds: []string{"Deployment"}}}}, podIn("prod", "web", nil), false, false},
		{"star group", Match{Kinds: []Kinds{{APIGroups: []string{"*"}, Kinds: []string{"Deployment"}}}}, Target{GVK: deployment, Namespace: "a"}, true, false},
		{"empty kinds in an entry", Match{Kinds: []Kinds{{APIGroups: []string{"apps"}}}}, Target{GVK: deployment, Namespace: "a"}, true, false},
		{"any entry", Match{Kinds: []Kinds{{Kinds: []string{"Service"}}, {Kinds: []string{"Pod"}}}}, podIn("prod", "web", nil), true, false},
		{"scope Cluster, namespaced object", Match{Scope: "Cluster"}, podIn("prod", "web", nil), false, false},
		{"scope Cluster, cluster object", Match{Scope: "Cluster"}, Target{GVK: clusterRole, Name: "r"}, true, false},
		{"scope Cluster, Namespace", Match{Scope: "Cluster"}, Target{GVK: namespace, Name: "prod"}, true, false},
		{"scope Namespaced, Namespace", Match{Scope: "Namespaced"}, Target{GVK: namespace, Name: "prod", Namespace: "prod"}, false, false},
		{"scope Namespaced, pod", Match{Scope: "Namespaced"}, podIn("prod", "web", nil), true, false},
		{"scope typo matches all", Match{Scope: "cluster"}, podIn("prod", "web", nil), true, false},
		{"namespace exact", Match{Namespaces: []string{"prod"}}, podIn("prod", "web", nil), true, false},
		{"namespace exact miss", Match{Namespaces: []string{"pro"}}, podIn("prod", "web", nil), false, false},
		{"namespace prefix", Match{Namespaces: []string{"kube-*"}}, podIn("kube-system", "web", nil), true, false},
		{"namespace prefix without star is exact", Match{Namespaces: []string{"kube-"}}, podIn("kube-system", "web", nil), false, false},
		{"namespace suffix", Match{Namespaces: []string{"*-system"}}, podIn("kube-system", "web", nil), true, false},
		{"namespace contains", Match{Namespaces: []string{"*be-sy*"}}, podIn("kube-system", "web", nil), true, false},
		{"excluded namespace", Match{ExcludedNamespaces: []string{"kube-*"}}, podIn("kube-system", "web", nil), false, false},
		{"excluded other namespace", Match{ExcludedNamespaces: []string{"kube-*"}}, podIn("prod", "web", nil), true, false},
		{"namespaces never disqualify cluster objects", Match{Namespaces: []string{"foo"}}, Target{GVK: clusterRole, Name: "r"}, true, false},
		{"excluded never disqualifies cluster objects", Match{ExcludedNamespaces: []string{"*"}}, Target{GVK: clusterRole, Name: "r"}, true, false},
		{"a Namespace is matched by its own name", Match{Namespaces: []string{"prod"}}, Target{GVK: namespace, Name: "prod"}, true, false},
		{"a Namespace is excluded by its own name", Match{ExcludedNamespaces: []string{"prod"}}, Target{GVK: namespace, Name: "prod"}, false, false},
		{"label selector", Match{LabelSelector: sel("app", "web")}, podIn("prod", "web", labels.Set{"app": "web"}), true, false},
		{"label selector miss", Match{LabelSelector: sel("app", "web")}, podIn("prod", "web", labels.Set{"app": "db"}), false, false},
		{"label selector, no labels", Match{LabelSelector: sel("app", "web")}, podIn("prod", "web", nil), false, false},
		{"namespace selector", Match{NamespaceSelector: sel("env", "prod")}, podIn("prod", "web", nil), true, false},
		{"namespace selector miss", Match{NamespaceSelector: sel("env", "prod")}, podIn("dev", "web", nil), false, false},
		{"namespace selector, unknown namespace", Match{NamespaceSelector: sel("env", "prod")}, podIn("gone", "web", nil), false, true},
		{"namespace selector on a Namespace uses its labels", Match{NamespaceSelector: sel("env", "new")}, Target{GVK: namespace, Name: "fresh", Labels: labels.Set{"env": "new"}}, true, false},
		{"namespace selector, cluster object", Match{NamespaceSelector: sel("env", "prod")}, Target{GVK: clusterRole, Name: "r"}, true, false},
		{"name exact", Match{Name: "web"}, podIn("prod", "web", nil), true, false},
		{"name prefix", Match{Name: "we*"}, podIn("prod", "web", nil), true, false},
		{"name miss", Match{Name: "db"}, podIn("prod", "web", nil), false, false},
		{"generateName with a prefix glob", Match{Name: "web-*"}, Target{GVK: pod, Namespace: "prod", GenerateName: "web-"}, true, false},
		{"generateName with a contains glob", Match{Name: "*eb*"}, Target{GVK: pod, Namespace: "prod", GenerateName: "web-"}, true, false},
		{"generateName with a suffix glob", Match{Name: "*-abc"}, Target{GVK: pod, Namespace: "prod", GenerateName: "web-"}, false, false},
		{"generateName with an exact name", Match{Name: "web-"}, Target{GVK: pod, Namespace: "prod", GenerateName: "web-"}, false, false},
		{"source Original", Match{Source: "Original"}, podIn("prod", "web", nil), true, false},
		{"source Generated never happens in-process", Match{Source: "Generated"}, podIn("prod", "web", nil), false, false},
		{"everything is ANDed", Match{Namespaces: []string{"prod"}, LabelSelector: sel("app", "db")}, podIn("prod", "web", labels.Set{"app": "web"}), false, false},
		// Source comes last in Gatekeeper's order, so a namespace that
		// cannot be found is an error even for a Generated mutator.
		{"source is tested after the namespace lookup", Match{Source: "Generated", NamespaceSelector: sel("env", "prod")}, podIn("gone", "web", nil), false, true},
		{"source Generated with everything else matching", Match{Source: "Generated", NamespaceSelector: sel("env", "prod"), Name: "web"}, podIn("prod", "web", nil), false, false},
		{"kind star", Match{Kinds: []Kinds{{APIGroups: []string{"apps"}, Kinds: []string{"*"}}}}, Target{GVK: deployment, Namespace: "a"}, true, false},
		{"empty groups in an entry", Match{Kinds: []Kinds{{Kinds: []string{"Deployment"}}}}, Target{GVK: deployment, Namespace: "a"}, true, false},
		{"kind in another group", Match{Kinds: []Kinds{{APIGroups: []string{""}, Kinds: []string{"Deployment"}}}}, Target{GVK: deployment, Namespace: "a"}, false, false},
		{"scope Namespaced, cluster object", Match{Scope: "Namespaced"}, Target{GVK: clusterRole, Name: "r"}, false, false},
		{"label selector on a cluster object", Match{LabelSelector: sel("a", "b")}, Target{GVK: clusterRole, Name: "r", Labels: labels.Set{"a": "b"}}, true, false},
		{"name star matches everything", Match{Name: "*"}, podIn("prod", "web", nil), true, false},
		{"name suffix", Match{Name: "*eb"}, podIn("prod", "web", nil), true, false},
		{"name contains", Match{Name: "*e*"}, podIn("prod", "web", nil), true, false},
		{"kinds fail before the namespace lookup", Match{Kinds: []Kinds{{Kinds: []string{"Service"}}}, NamespaceSelector: sel("env", "prod")}, podIn("gone", "web", nil), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, errs := Compile(tc.match, field.NewPath("spec", "match"))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			got, err := m.Matches(&tc.target)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, ErrNamespaceUnknown) {
				t.Fatalf("error %v does not wrap ErrNamespaceUnknown", err)
			}
			if got != tc.want {
				t.Fatalf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCompileRejects(t *testing.T) {
	tests := map[string]Match{
		"spec.match.source":                {Source: "Elsewhere"},
		"spec.match.namespaces[0]":         {Namespaces: []string{"a*b"}},
		"spec.match.excludedNamespaces[0]": {ExcludedNamespaces: []string{"UPPER"}},
		"spec.match.name":                  {Name: "x/y"},
		"spec.match.namespaceSelector":     {NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}},
	}
	for fld, m := range tests {
		t.Run(fld, func(t *testing.T) {
			_, errs := Compile(m, field.NewPath("spec", "match"))
			if len(errs) != 1 || errs[0].Field != fld {
				t.Fatalf("errors %v, want one on %s", errs, fld)
			}
		})
	}
}
