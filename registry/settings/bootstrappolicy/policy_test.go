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

package bootstrappolicy

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the manifest from ClusterRoles")

var manifest = filepath.Join("..", "..", "..", "hack", "manifests", "podpreset-clusterroles.yaml")

// render is the manifest: the roles as YAML documents.
func render(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# Generated from registry/settings/bootstrappolicy.ClusterRoles by\n" +
		"# go test ./registry/settings/bootstrappolicy -run TestManifest -update; do not edit.\n")
	for _, role := range ClusterRoles() {
		data, err := yaml.Marshal(role)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes()
}

// The manifest is exactly what ClusterRoles returns.
func TestManifest(t *testing.T) {
	want := render(t)
	if *update {
		if err := os.WriteFile(manifest, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is out of date; run go test ./registry/settings/bootstrappolicy -run TestManifest -update (-want +got):\n%s", manifest, diff)
	}
}

// The roles grant what the aggregated roles should give, and nothing on
// ClusterPodPresets.
func TestClusterRoles(t *testing.T) {
	want := map[string]struct {
		label string
		verbs []string
	}{
		"admitkit:podpresets:aggregate-to-admin": {aggregateToAdmin, writeVerbs},
		"admitkit:podpresets:aggregate-to-edit":  {aggregateToEdit, writeVerbs},
		"admitkit:podpresets:aggregate-to-view":  {aggregateToView, readVerbs},
	}
	roles := ClusterRoles()
	if len(roles) != len(want) {
		t.Fatalf("%d roles, want %d", len(roles), len(want))
	}
	for _, role := range roles {
		t.Run(role.Name, func(t *testing.T) {
			w, ok := want[role.Name]
			if !ok {
				t.Fatalf("unexpected role %s", role.Name)
			}
			if diff := cmp.Diff(map[string]string{w.label: "true"}, role.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			wantRules := []rbacv1.PolicyRule{{APIGroups: []string{"settings.k8s.io"}, Resources: []string{"podpresets"}, Verbs: w.verbs}}
			if diff := cmp.Diff(wantRules, role.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReconcile(t *testing.T) {
	view := ClusterRoles()[2]
	tampered := view.DeepCopy()
	tampered.Labels = map[string]string{"team": "platform"}
	tampered.Annotations = map[string]string{"note": "kept"}
	tampered.Rules[0].Verbs = []string{"*"}
	cases := []struct {
		name     string
		existing []runtime.Object
		// wantView is the view role afterwards.
		wantView   rbacv1.ClusterRole
		wantWrites int
	}{
		{name: "creates every role", wantView: view, wantWrites: 3},
		{name: "leaves matching roles alone", existing: []runtime.Object{&ClusterRoles()[0], &ClusterRoles()[1], &ClusterRoles()[2]}, wantView: view},
		{name: "puts back rules and labels, keeps the rest", existing: []runtime.Object{&ClusterRoles()[0], &ClusterRoles()[1], tampered},
			wantView: func() rbacv1.ClusterRole {
				r := *view.DeepCopy()
				r.Labels["team"] = "platform"
				r.Annotations = map[string]string{"note": "kept"}
				return r
			}(), wantWrites: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.existing...)
			if err := Reconcile(context.Background(), client.RbacV1()); err != nil {
				t.Fatal(err)
			}
			writes := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "create" || a.GetVerb() == "update" {
					writes++
				}
			}
			if writes != tc.wantWrites {
				t.Errorf("%d writes, want %d", writes, tc.wantWrites)
			}
			got, err := client.RbacV1().ClusterRoles().Get(context.Background(), view.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantView.Labels, got.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantView.Annotations, got.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantView.Rules, got.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}
