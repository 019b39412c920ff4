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

package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestVolumeDefaults(t *testing.T) {
	cases := []struct {
		name string
		in   corev1.VolumeSource
		want corev1.VolumeSource
	}{
		{name: "no source becomes emptyDir", in: corev1.VolumeSource{},
			want: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{name: "hostPath type", in: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}},
			want: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc", Type: ptr.To(corev1.HostPathUnset)}}},
		{name: "secret mode", in: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}},
			want: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o644)}}},
		{name: "secret mode kept", in: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o400)}},
			want: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o400)}}},
		{name: "configMap mode", in: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}},
			want: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{DefaultMode: ptr.To[int32](0o644)}}},
		{name: "downwardAPI mode and field apiVersion",
			in: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			}}},
			want: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: ptr.To[int32](0o644), Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
			}}}},
		{name: "projected mode, token lifetime, field apiVersion",
			in: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}},
			want: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			}}}},
		{name: "iscsi interface", in: corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "t"}},
			want: corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "t", ISCSIInterface: "default"}}},
		{name: "rbd pool, user, keyring", in: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{RBDImage: "i"}},
			want: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{RBDImage: "i", RBDPool: "rbd", RadosUser: "admin", Keyring: "/etc/ceph/keyring"}}},
		{name: "azureDisk caching, fsType, readOnly, kind", in: corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d"}},
			want: corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d",
				CachingMode: ptr.To(corev1.AzureDataDiskCachingReadWrite), FSType: ptr.To("ext4"), ReadOnly: ptr.To(false), Kind: ptr.To(corev1.AzureSharedBlobDisk)}}},
		{name: "scaleIO storage mode and fsType", in: corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{Gateway: "g"}},
			want: corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{Gateway: "g", StorageMode: "ThinProvisioned", FSType: "xfs"}}},
		{name: "ephemeral claim mode and rounded resources",
			in: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1.0001m")},
				}},
			}}},
			want: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem), Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2m")},
				}},
			}}}},
		{name: "image without tag is pulled always", in: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox"}},
			want: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox", PullPolicy: corev1.PullAlways}}},
		{name: "image latest is pulled always", in: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry:5000/busybox:latest"}},
			want: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry:5000/busybox:latest", PullPolicy: corev1.PullAlways}}},
		{name: "image with a tag is pulled if not present", in: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry:5000/busybox:1.36"}},
			want: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry:5000/busybox:1.36", PullPolicy: corev1.PullIfNotPresent}}},
		{name: "registry port is not a tag", in: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry:5000/busybox"}},
			want: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry:5000/busybox", PullPolicy: corev1.PullAlways}}},
		{name: "image by digest is pulled if not present", in: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox@sha256:0123"}},
			want: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox@sha256:0123", PullPolicy: corev1.PullIfNotPresent}}},
		{name: "image pull policy kept", in: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox", PullPolicy: corev1.PullNever}},
			want: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox", PullPolicy: corev1.PullNever}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pp := &PodPreset{Spec: PodPresetSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: tc.in}}}}
			SetObjectDefaults_PodPreset(pp)
			if diff := cmp.Diff(tc.want, pp.Spec.Volumes[0].VolumeSource); diff != "" {
				t.Errorf("defaulted volume (-want +got):\n%s", diff)
			}
			cpp := &ClusterPodPreset{Spec: ClusterPodPresetSpec{PodPresetSpec: PodPresetSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: tc.in}}}}}
			SetObjectDefaults_ClusterPodPreset(cpp)
			if diff := cmp.Diff(tc.want, cpp.Spec.Volumes[0].VolumeSource); diff != "" {
				t.Errorf("defaulted cluster preset volume (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnvDefaults(t *testing.T) {
	pp := &PodPreset{Spec: PodPresetSpec{Env: []corev1.EnvVar{
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "FILE", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}},
		{Name: "PLAIN", Value: "x"},
	}}}
	want := []corev1.EnvVar{
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "FILE", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k", Optional: ptr.To(false)}}},
		{Name: "PLAIN", Value: "x"},
	}
	SetObjectDefaults_PodPreset(pp)
	if diff := cmp.Diff(want, pp.Spec.Env); diff != "" {
		t.Errorf("defaulted env (-want +got):\n%s", diff)
	}
}

// The scheme must run the defaulters, since that is how the registry's
// decoder applies them to every preset it stores.
func TestDefaultsAreRegistered(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{
		&PodPreset{Spec: PodPresetSpec{Volumes: []corev1.Volume{{Name: "v"}}}},
		&ClusterPodPreset{Spec: ClusterPodPresetSpec{PodPresetSpec: PodPresetSpec{Volumes: []corev1.Volume{{Name: "v"}}}}},
	} {
		scheme.Default(obj)
		var volumes []corev1.Volume
		switch o := obj.(type) {
		case *PodPreset:
			volumes = o.Spec.Volumes
		case *ClusterPodPreset:
			volumes = o.Spec.Volumes
		}
		if volumes[0].EmptyDir == nil {
			t.Errorf("%T: scheme.Default did not default the volume: %+v", obj, volumes[0])
		}
	}
}
