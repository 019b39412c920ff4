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

package crds

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/admitkit/admitkit/registry/crdinstall"
	clusterpodpresetstorage "github.com/admitkit/admitkit/registry/settings/clusterpodpreset/storage"
	podpresetstorage "github.com/admitkit/admitkit/registry/settings/podpreset/storage"
)

// The CRDs serve the group under its own name, with the annotation
// kube-apiserver requires of a CRD in a k8s.io group that was never
// approved, and the scopes, names and short names the in-process registry
// serves.
func TestManifests(t *testing.T) {
	crds, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name, kind, plural, scope string
		shortNames                []string
	}{
		{"clusterpodpresets.settings.k8s.io", "ClusterPodPreset", "clusterpodpresets", "Cluster", (*clusterpodpresetstorage.REST)(nil).ShortNames()},
		{"podpresets.settings.k8s.io", "PodPreset", "podpresets", "Namespaced", (*podpresetstorage.REST)(nil).ShortNames()},
	}
	if len(crds) != len(want) {
		t.Fatalf("%d CRDs, want %d", len(crds), len(want))
	}
	for i, w := range want {
		crd := crds[i]
		t.Run(w.name, func(t *testing.T) {
			str := func(fields ...string) string {
				s, _, _ := unstructured.NestedString(crd.Object, fields...)
				return s
			}
			for _, c := range []struct{ got, want string }{
				{crd.GetName(), w.name},
				{str("spec", "group"), "settings.k8s.io"},
				{str("spec", "names", "kind"), w.kind},
				{str("spec", "names", "plural"), w.plural},
				{str("spec", "scope"), w.scope},
			} {
				if c.got != c.want {
					t.Errorf("got %q, want %q", c.got, c.want)
				}
			}
			if got, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames"); !slices.Equal(got, w.shortNames) {
				t.Errorf("shortNames %v, want the registry's %v", got, w.shortNames)
			}
			// kube-apiserver accepts a value that starts with "unapproved"
			// for a group it never approved; anything else must be a URL of
			// an approved API review.
			if a := crd.GetAnnotations()["api-approved.kubernetes.io"]; !strings.HasPrefix(a, "unapproved, ") {
				t.Errorf("api-approved.kubernetes.io = %q, want an \"unapproved, <reason>\" value", a)
			}
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			if len(versions) != 1 {
				t.Fatalf("%d versions, want v1alpha1 alone", len(versions))
			}
			v := versions[0].(map[string]any)
			if v["name"] != "v1alpha1" || v["served"] != true || v["storage"] != true {
				t.Errorf("version %v %v %v, want v1alpha1 served and stored", v["name"], v["served"], v["storage"])
			}
		})
	}
}

func TestInstall(t *testing.T) {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdinstall.Resource: "CustomResourceDefinitionList"})
	if err := Install(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	list, err := c.Resource(crdinstall.Resource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Errorf("%d CRDs after Install, want 2", len(list.Items))
	}
}
