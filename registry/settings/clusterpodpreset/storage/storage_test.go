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

package storage

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistrytest "k8s.io/apiserver/pkg/registry/generic/testing"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/validation"
	"github.com/admitkit/admitkit/registry/settings/internal/registrytest"
)

func newStorage(t *testing.T) *REST {
	t.Helper()
	storage, err := NewREST(registrytest.Scheme, registrytest.NewRESTOptionsGetter(t), validation.BuiltinPodFields)
	if err != nil {
		t.Fatalf("NewREST: %v", err)
	}
	t.Cleanup(storage.DestroyFunc)
	return storage
}

func validClusterPodPreset() *settings.ClusterPodPreset {
	return &settings.ClusterPodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "everywhere", Labels: map[string]string{"a": "b"}},
		Spec: settings.ClusterPodPresetSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "payments"}},
			PodPresetSpec: settings.PodPresetSpec{
				Selector:     metav1.LabelSelector{MatchLabels: map[string]string{"role": "frontend"}},
				Env:          []corev1.EnvVar{{Name: "DB_PORT", Value: "6379"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "cache-volume", MountPath: "/cache"}},
				Volumes:      []corev1.Volume{{Name: "cache-volume", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			},
		},
	}
}

func newTester(t *testing.T) *genericregistrytest.Tester {
	return genericregistrytest.New(t, newStorage(t).Store).ClusterScope()
}

func TestCreate(t *testing.T) {
	invalid := validClusterPodPreset()
	invalid.Spec.VolumeMounts[0].Name = "not-declared"
	badNamespaces := validClusterPodPreset()
	badNamespaces.Spec.NamespaceSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}}
	newTester(t).TestCreate(validClusterPodPreset(), invalid, badNamespaces)
}

func TestUpdate(t *testing.T) {
	newTester(t).TestUpdate(validClusterPodPreset(),
		func(obj runtime.Object) runtime.Object {
			cpp := obj.(*settings.ClusterPodPreset)
			cpp.Spec.NamespaceSelector = metav1.LabelSelector{}
			return cpp
		},
		func(obj runtime.Object) runtime.Object {
			cpp := obj.(*settings.ClusterPodPreset)
			cpp.Spec.Volumes = nil
			return cpp
		},
	)
}

func TestDelete(t *testing.T) { newTester(t).TestDelete(validClusterPodPreset()) }

func TestGet(t *testing.T) { newTester(t).TestGet(validClusterPodPreset()) }

func TestList(t *testing.T) { newTester(t).TestList(validClusterPodPreset()) }

func TestWatch(t *testing.T) {
	newTester(t).TestWatch(validClusterPodPreset(),
		[]labels.Set{{}, {"a": "b"}},
		[]labels.Set{{"foo": "bar"}},
		[]fields.Set{{"metadata.name": "everywhere"}},
		[]fields.Set{{"metadata.name": "bar"}},
	)
}

func TestUpdateBumpsGeneration(t *testing.T) {
	storage := newStorage(t)
	ctx := genericregistrytest.NewClusterScopeContext(storage.Store)
	if _, err := storage.Create(ctx, validClusterPodPreset(), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	current, err := storage.Get(ctx, "everywhere", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpp := current.(*settings.ClusterPodPreset).DeepCopy()
	cpp.Spec.NamespaceSelector.MatchLabels["team"] = "search"
	updated, _, err := storage.Update(ctx, cpp.Name, rest.DefaultUpdatedObjectInfo(cpp), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := updated.(*settings.ClusterPodPreset).Generation; g != 2 {
		t.Errorf("generation after a namespaceSelector change = %d, want 2", g)
	}
}

func TestTable(t *testing.T) {
	cpp := validClusterPodPreset()
	cpp.CreationTimestamp = metav1.Now()
	list := &settings.ClusterPodPresetList{Items: []settings.ClusterPodPreset{*cpp}}
	tbl, err := newStorage(t).ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var headers []string
	for _, c := range tbl.ColumnDefinitions {
		headers = append(headers, c.Name)
	}
	if got, want := strings.Join(headers, ","), "Name,Namespace Selector,Selector,Injects,Age"; got != want {
		t.Errorf("columns = %s, want %s", got, want)
	}
	cells := tbl.Rows[0].Cells
	if cells[0] != "everywhere" || cells[1] != "team=payments" || cells[2] != "role=frontend" || cells[3] != "1 env, 1 volume, 1 mount" {
		t.Errorf("row = %v", cells)
	}
}
