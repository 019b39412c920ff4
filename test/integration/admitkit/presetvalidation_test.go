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

package admitkit

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// brokenVolumeSources returns, for every volume source kind core/v1 has
// (read from VolumeSource, so a kind added to k8s.io/api is covered
// without an edit here), a source that pod validation refuses: the empty
// one, or for the kinds whose empty form is valid, one with a bad field.
func brokenVolumeSources(t *testing.T) map[string]corev1.VolumeSource {
	t.Helper()
	badField := map[string]corev1.VolumeSource{
		"emptyDir":    {EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptrTo(resource.MustParse("-1Gi"))}},
		"downwardAPI": {DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "/etc/labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}}}}},
		"projected":   {Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptrTo(int32(0o1000))}},
	}
	sources := map[string]corev1.VolumeSource{}
	typ := reflect.TypeOf(corev1.VolumeSource{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() != reflect.Pointer {
			t.Fatalf("VolumeSource.%s is not a pointer: the test no longer knows how to build it", f.Name)
		}
		if source, ok := badField[name]; ok {
			sources[name] = source
			continue
		}
		var source corev1.VolumeSource
		reflect.ValueOf(&source).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
		sources[name] = source
	}
	return sources
}

// brokenEnv is, for every source of an env var and of envFrom, one that
// pod validation refuses.
var (
	brokenEnv = map[string]corev1.EnvVar{
		"value":            {Name: "BAD=NAME", Value: "1"},
		"fieldRef":         {Name: "F", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.bogus"}}},
		"resourceFieldRef": {Name: "R", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.bogus"}}},
		"configMapKeyRef":  {Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "bad/key"}}},
		"secretKeyRef":     {Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "Bad_Name"}, Key: "k"}}},
		"fileKeyRef":       {Name: "K", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "../escape", Key: "k"}}},
	}
	brokenEnvFrom = map[string]corev1.EnvFromSource{
		"configMapRef": {ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "Bad_Name"}}},
		"secretRef":    {SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "Bad_Name"}}},
	}
)

// TestPresetValidation writes presets that would make every pod they
// select invalid, on create and on update, as PodPresets and as
// ClusterPodPresets, on each host: the server refuses each with 422 naming
// the preset's own field, as Kubernetes 1.19 did, because test/apiserver
// hands the registry kube-apiserver's pod validation, and the webhook host
// asks its kube-apiserver with a dry-run pod. What each case breaks is
// first shown to be the only problem: the same preset with that part
// repaired is accepted.
func TestPresetValidation(t *testing.T) { onEachHost(t, testPresetValidation) }

func testPresetValidation(t *testing.T, h *host) {
	ns := "preset-validation"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	type testCase struct {
		spec, fixed settingsv1alpha1.PodPresetSpec
		field       string // the preset's field the 422 must name (as a prefix)
	}
	cases := map[string]testCase{}
	for kind, source := range brokenVolumeSources(t) {
		cases["volume "+kind] = testCase{
			spec:  settingsv1alpha1.PodPresetSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: source}}},
			fixed: settingsv1alpha1.PodPresetSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
			field: "spec.volumes[0]",
		}
	}
	for kind, env := range brokenEnv {
		cases["env "+kind] = testCase{
			spec:  settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{env}},
			fixed: settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "GOOD", Value: "1"}}},
			field: "spec.env[0]",
		}
	}
	for kind, envFrom := range brokenEnvFrom {
		cases["envFrom "+kind] = testCase{
			spec:  settingsv1alpha1.PodPresetSpec{EnvFrom: []corev1.EnvFromSource{envFrom}},
			fixed: settingsv1alpha1.PodPresetSpec{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "good"}}}}},
			field: "spec.envFrom[0]",
		}
	}
	cases["volumeMount subPath"] = testCase{
		spec: settingsv1alpha1.PodPresetSpec{
			Volumes:      []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/data", SubPath: "../escape"}},
		},
		fixed: settingsv1alpha1.PodPresetSpec{
			Volumes:      []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/data", SubPath: "inside"}},
		},
		field: "spec.volumeMounts", // pod validation names no index here
	}
	// A repeated name or mount path is named at its field on both hosts
	// (the CRD's lists are atomic, so its schema leaves them to the
	// registry's validation).
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	cases["volume name repeated"] = testCase{
		spec:  settingsv1alpha1.PodPresetSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: emptyDir}, {Name: "v", VolumeSource: emptyDir}}},
		fixed: settingsv1alpha1.PodPresetSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: emptyDir}, {Name: "w", VolumeSource: emptyDir}}},
		field: "spec.volumes[1].name",
	}
	cases["mount path repeated"] = testCase{
		spec: settingsv1alpha1.PodPresetSpec{
			Volumes:      []corev1.Volume{{Name: "v", VolumeSource: emptyDir}},
			VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/data"}, {Name: "v", MountPath: "/data"}},
		},
		fixed: settingsv1alpha1.PodPresetSpec{
			Volumes:      []corev1.Volume{{Name: "v", VolumeSource: emptyDir}},
			VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/data"}, {Name: "v", MountPath: "/other"}},
		},
		field: "spec.volumeMounts[1].mountPath",
	}

	ctx := context.Background()
	presets := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1()
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			pp := &settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("case-%d", i)}, Spec: tc.spec}
			_, err := presets.PodPresets(ns).Create(ctx, pp, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			expectInvalid(t, "PodPreset create", err, tc.field)
			cpp := &settingsv1alpha1.ClusterPodPreset{ObjectMeta: metav1.ObjectMeta{Name: pp.Name}, Spec: settingsv1alpha1.ClusterPodPresetSpec{PodPresetSpec: tc.spec}}
			_, err = presets.ClusterPodPresets().Create(ctx, cpp, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			expectInvalid(t, "ClusterPodPreset create", err, tc.field)

			// The repaired preset is stored; breaking it again is refused.
			pp.Spec = tc.fixed
			stored, err := presets.PodPresets(ns).Create(ctx, pp, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("the repaired preset was refused: %v", err)
			}
			defer presets.PodPresets(ns).Delete(ctx, stored.Name, metav1.DeleteOptions{})
			stored.Spec = tc.spec
			_, err = presets.PodPresets(ns).Update(ctx, stored, metav1.UpdateOptions{})
			expectInvalid(t, "PodPreset update", err, tc.field)
		})
	}
}

// expectInvalid requires a 422 with a cause at field or under it.
func expectInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("%s: got %v, want 422 Invalid naming %s", what, err, field)
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		t.Fatalf("%s: %v has no details", what, err)
	}
	for _, cause := range status.Status().Details.Causes {
		if strings.HasPrefix(cause.Field, field) {
			return
		}
	}
	t.Errorf("%s: no cause names %s: %v", what, field, err)
}
