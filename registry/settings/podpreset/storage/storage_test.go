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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// testNamespace is the namespace the generic registry tester works in.
const testNamespace = "test"

func validPodPreset() *settings.PodPreset {
	return &settings.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "podpreset", Namespace: testNamespace, Labels: map[string]string{"a": "b"}},
		Spec: settings.PodPresetSpec{
			Selector: metav1.LabelSelector{
				MatchLabels: map[string]string{"role": "frontend"},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "security", Operator: metav1.LabelSelectorOpIn, Values: []string{"S2"}},
				},
			},
			Env: []corev1.EnvVar{{Name: "DB_PORT", Value: "6379"}},
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "abc"}}},
				{Prefix: "pre_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "abc"}}},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "cache-volume", MountPath: "/cache"}},
			Volumes:      []corev1.Volume{{Name: "cache-volume", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

func TestCreate(t *testing.T) {
	test := genericregistrytest.New(t, newStorage(t).Store)
	invalid := validPodPreset()
	invalid.Spec.VolumeMounts[0].Name = "/cache/VolumeMounts"
	empty := validPodPreset()
	empty.Spec = settings.PodPresetSpec{}
	test.TestCreate(validPodPreset(), invalid, empty)
}

func TestUpdate(t *testing.T) {
	test := genericregistrytest.New(t, newStorage(t).Store)
	test.TestUpdate(validPodPreset(),
		func(obj runtime.Object) runtime.Object {
			pp := obj.(*settings.PodPreset)
			pp.Labels = map[string]string{"c": "d"}
			pp.Spec.Env = append(pp.Spec.Env, corev1.EnvVar{Name: "DB_HOST", Value: "db"})
			return pp
		},
		func(obj runtime.Object) runtime.Object {
			pp := obj.(*settings.PodPreset)
			pp.Spec.VolumeMounts[0].Name = "missing"
			return pp
		},
	)
}

func TestDelete(t *testing.T) {
	genericregistrytest.New(t, newStorage(t).Store).TestDelete(validPodPreset())
}

func TestGet(t *testing.T) {
	genericregistrytest.New(t, newStorage(t).Store).TestGet(validPodPreset())
}

func TestList(t *testing.T) {
	genericregistrytest.New(t, newStorage(t).Store).TestList(validPodPreset())
}

func TestWatch(t *testing.T) {
	genericregistrytest.New(t, newStorage(t).Store).TestWatch(validPodPreset(),
		[]labels.Set{{}, {"a": "b"}},
		[]labels.Set{{"foo": "bar"}},
		[]fields.Set{{"metadata.name": "podpreset"}, {"metadata.namespace": testNamespace}},
		[]fields.Set{{"metadata.name": "bar"}, {"metadata.namespace": "other"}},
	)
}

// A spec change is kept and counted, the fix for kubernetes#89813: the
// removed API returned success and silently dropped it.
func TestUpdateKeepsSpecAndBumpsGeneration(t *testing.T) {
	storage := newStorage(t)
	ctx := genericregistrytest.NewNamespaceScopeContext(storage.Store, testNamespace)
	created, err := storage.Create(ctx, validPodPreset(), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := created.(*settings.PodPreset).Generation; g != 1 {
		t.Fatalf("generation after create = %d, want 1", g)
	}

	update := func(change func(*settings.PodPreset)) *settings.PodPreset {
		t.Helper()
		current, err := storage.Get(ctx, "podpreset", &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pp := current.(*settings.PodPreset).DeepCopy()
		change(pp)
		updated, _, err := storage.Update(ctx, pp.Name, rest.DefaultUpdatedObjectInfo(pp), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return updated.(*settings.PodPreset)
	}

	labelled := update(func(pp *settings.PodPreset) { pp.Labels["c"] = "d" })
	if labelled.Generation != 1 {
		t.Errorf("generation after a metadata-only change = %d, want 1", labelled.Generation)
	}
	changed := update(func(pp *settings.PodPreset) { pp.Spec.Env[0].Value = "6380" })
	if changed.Generation != 2 {
		t.Errorf("generation after a spec change = %d, want 2", changed.Generation)
	}
	if got := changed.Spec.Env[0].Value; got != "6380" {
		t.Errorf("stored env value = %q, want the updated 6380", got)
	}
}

func TestNoCreateOnUpdate(t *testing.T) {
	storage := newStorage(t)
	ctx := genericregistrytest.NewNamespaceScopeContext(storage.Store, testNamespace)
	pp := validPodPreset()
	_, _, err := storage.Update(ctx, pp.Name, rest.DefaultUpdatedObjectInfo(pp), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("update of a missing preset: got %v, want NotFound", err)
	}
}

// Defaults are applied when the object is decoded from etcd, so a stored
// preset reads back as the pod-equal defaulted form.
func TestStoredPresetIsDefaulted(t *testing.T) {
	storage := newStorage(t)
	ctx := genericregistrytest.NewNamespaceScopeContext(storage.Store, testNamespace)
	pp := validPodPreset()
	pp.Spec.Volumes = append(pp.Spec.Volumes, corev1.Volume{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}})
	if _, err := storage.Create(ctx, pp, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := storage.Get(ctx, pp.Name, &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mode := got.(*settings.PodPreset).Spec.Volumes[1].Secret.DefaultMode
	if mode == nil || *mode != 0o644 {
		t.Errorf("stored secret volume defaultMode = %v, want 0644", mode)
	}
}

func TestTable(t *testing.T) {
	storage := newStorage(t)
	pp := validPodPreset()
	pp.CreationTimestamp = metav1.Now()
	tbl, err := storage.ConvertToTable(context.Background(), pp, nil)
	if err != nil {
		t.Fatal(err)
	}
	var headers []string
	for _, c := range tbl.ColumnDefinitions {
		headers = append(headers, c.Name)
	}
	if got, want := strings.Join(headers, ","), "Name,Selector,Injects,Age"; got != want {
		t.Errorf("columns = %s, want %s", got, want)
	}
	cells := tbl.Rows[0].Cells
	if cells[0] != "podpreset" || cells[1] != "role=frontend,security in (S2)" || cells[2] != "1 env, 2 envFrom, 1 volume, 1 mount" {
		t.Errorf("row = %v", cells)
	}
}
