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

package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

func TestStorageClassDefaults(t *testing.T) {
	sc := defaulted(t, &storagev1.StorageClass{Provisioner: "example.com/disk"})
	if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("reclaim %q, binding %q; want Delete and Immediate", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
	}
}

func TestCSIDriverDefaults(t *testing.T) {
	d := defaulted(t, &storagev1.CSIDriver{})
	want := storagev1.CSIDriverSpec{
		AttachRequired:                ptr.To(true),
		PodInfoOnMount:                ptr.To(false),
		StorageCapacity:               ptr.To(false),
		FSGroupPolicy:                 ptr.To(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy),
		VolumeLifecycleModes:          []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		RequiresRepublish:             ptr.To(false),
		SELinuxMount:                  ptr.To(false),
		PreventPodSchedulingIfMissing: ptr.To(false),
	}
	if diff := cmp.Diff(want, d.Spec); diff != "" {
		t.Errorf("CSI driver spec (-want +got):\n%s", diff)
	}
}

func TestVolumeAttachmentDefaults(t *testing.T) {
	va := defaulted(t, &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Source: storagev1.VolumeAttachmentSource{
		InlineVolumeSpec: &corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			ISCSI: &corev1.ISCSIPersistentVolumeSource{TargetPortal: "10.0.0.1"},
		}},
	}}})
	spec := va.Spec.Source.InlineVolumeSpec
	if spec.ISCSI.ISCSIInterface != "default" {
		t.Errorf("inline iSCSI interface = %q, want default", spec.ISCSI.ISCSIInterface)
	}
	// Only the source is defaulted, not what a PersistentVolume object gets.
	if spec.VolumeMode != nil || spec.PersistentVolumeReclaimPolicy != "" {
		t.Errorf("inline volume got volumeMode %v, reclaim policy %q; want neither", spec.VolumeMode, spec.PersistentVolumeReclaimPolicy)
	}
}
