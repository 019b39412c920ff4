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
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

var allNames = []string{
	"assign.mutations.gatekeeper.sh",
	"assignimage.mutations.gatekeeper.sh",
	"assignmetadata.mutations.gatekeeper.sh",
	"modifyset.mutations.gatekeeper.sh",
	"providers.externaldata.gatekeeper.sh",
}

func newClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{Resource: "CustomResourceDefinitionList"}, objs...)
}

// existing is a CRD someone else made, Gatekeeper for example: Install must
// leave it exactly as it is.
func existing(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]any{
			"name":        name,
			"annotations": map[string]any{"owner": "gatekeeper"},
		},
		"spec": map[string]any{"group": "mutations.gatekeeper.sh"},
	}}
}

func names(t *testing.T, c *dynamicfake.FakeDynamicClient) map[string]*unstructured.Unstructured {
	t.Helper()
	list, err := c.Resource(Resource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		out[list.Items[i].GetName()] = &list.Items[i]
	}
	return out
}

func creates(c *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range c.Actions() {
		if ca, ok := a.(clienttesting.CreateAction); ok {
			out = append(out, ca.GetObject().(*unstructured.Unstructured).GetName())
		}
	}
	return out
}

func TestInstall(t *testing.T) {
	tests := []struct {
		name        string
		present     []string
		wantCreated []string
	}{
		{"none installed", nil, allNames},
		{"all installed", allNames, nil},
		{"Gatekeeper's Assign and ModifySet installed", []string{allNames[0], allNames[3]}, []string{allNames[1], allNames[2], allNames[4]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, n := range tc.present {
				objs = append(objs, existing(n))
			}
			c := newClient(objs...)
			if err := Install(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			if got := creates(c); strings.Join(got, ",") != strings.Join(tc.wantCreated, ",") {
				t.Errorf("created %v, want %v", got, tc.wantCreated)
			}
			got := names(t, c)
			if len(got) != len(allNames) {
				t.Errorf("CRDs after Install: %d, want %d", len(got), len(allNames))
			}
			for _, n := range tc.present {
				if got[n].GetAnnotations()["owner"] != "gatekeeper" || got[n].GetLabels() != nil {
					t.Errorf("existing CRD %s changed: %v", n, got[n].Object)
				}
			}
			for _, n := range tc.wantCreated {
				if v, _, _ := unstructured.NestedSlice(got[n].Object, "spec", "versions"); len(v) == 0 {
					t.Errorf("created CRD %s has no versions", n)
				}
			}
		})
	}
}

// Another apiserver creates a CRD between Get and Create: that is success.
func TestInstallRace(t *testing.T) {
	c := newClient()
	c.PrependReactor("create", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		name := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).GetName()
		return true, nil, apierrors.NewAlreadyExists(Resource.GroupResource(), name)
	})
	if err := Install(context.Background(), c); err != nil {
		t.Fatalf("Install: %v", err)
	}
	if got := creates(c); len(got) != len(allNames) {
		t.Fatalf("tried to create %v, want all five", got)
	}
}

func TestInstallErrors(t *testing.T) {
	forbidden := apierrors.NewForbidden(Resource.GroupResource(), "", errors.New("no"))
	tests := []struct {
		name    string
		verb    string
		failFor string // the CRD whose request fails
		want    []string
	}{
		{"get fails", "get", allNames[2], []string{"CustomResourceDefinition assignmetadata.mutations.gatekeeper.sh", "forbidden"}},
		{"create fails", "create", allNames[1], []string{"creating CustomResourceDefinition assignimage.mutations.gatekeeper.sh", "forbidden"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient()
			c.PrependReactor(tc.verb, "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
				var name string
				switch a := a.(type) {
				case clienttesting.GetAction:
					name = a.GetName()
				case clienttesting.CreateAction:
					name = a.GetObject().(*unstructured.Unstructured).GetName()
				}
				if name == tc.failFor {
					return true, nil, forbidden
				}
				return false, nil, nil
			})
			err := Install(context.Background(), c)
			if err == nil {
				t.Fatal("Install succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			// The other three are installed all the same.
			if got := names(t, c); len(got) != len(allNames)-1 || got[tc.failFor] != nil {
				t.Errorf("installed %d CRDs (%v present: %v), want the other three", len(got), tc.failFor, got[tc.failFor] != nil)
			}
		})
	}
}

func withCondition(obj *unstructured.Unstructured, typ, status, msg string) *unstructured.Unstructured {
	obj = obj.DeepCopy()
	_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"type": typ, "status": status, "message": msg}}, "status", "conditions")
	return obj
}

func TestWaitEstablished(t *testing.T) {
	t.Run("all established", func(t *testing.T) {
		var objs []runtime.Object
		for _, n := range allNames {
			objs = append(objs, withCondition(existing(n), "Established", "True", ""))
		}
		if err := WaitEstablished(context.Background(), newClient(objs...), time.Millisecond); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("established later", func(t *testing.T) {
		c := newClient()
		if err := Install(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		gets := 0
		c.PrependReactor("get", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
			gets++
			if gets <= len(allNames) { // the first round finds none established
				return false, nil, nil
			}
			return true, withCondition(existing(a.(clienttesting.GetAction).GetName()), "Established", "True", ""), nil
		})
		if err := WaitEstablished(context.Background(), c, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if gets <= len(allNames) {
			t.Fatalf("%d gets: returned before the second round", gets)
		}
	})
	t.Run("a name clash never establishes", func(t *testing.T) {
		var objs []runtime.Object
		for _, n := range allNames[1:] {
			objs = append(objs, withCondition(existing(n), "Established", "True", ""))
		}
		objs = append(objs, withCondition(existing(allNames[0]), "NamesAccepted", "False", `"assign" is already in use`))
		ctx, cancel := context.WithCancel(context.Background())
		c := newClient(objs...)
		c.PrependReactor("get", "customresourcedefinitions", func(clienttesting.Action) (bool, runtime.Object, error) {
			cancel() // the first round is all it gets
			return false, nil, nil
		})
		err := WaitEstablished(ctx, c, time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), `assign.mutations.gatekeeper.sh: NamesAccepted=False: "assign" is already in use`) || strings.Contains(err.Error(), "modifyset") {
			t.Fatalf("error %v", err)
		}
	})
}
