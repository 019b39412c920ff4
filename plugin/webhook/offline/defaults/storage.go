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
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func addStorage(s *runtime.Scheme) {
	add(s, storageClass)
	add(s, eachItem(func(l *storagev1.StorageClassList) []storagev1.StorageClass { return l.Items }, storageClass))
	add(s, csiDriver)
	add(s, eachItem(func(l *storagev1.CSIDriverList) []storagev1.CSIDriver { return l.Items }, csiDriver))
	add(s, volumeAttachment)
	add(s, eachItem(func(l *storagev1.VolumeAttachmentList) []storagev1.VolumeAttachment { return l.Items }, volumeAttachment))
}

// storageClass: a dynamically provisioned volume goes with its claim, and
// is provisioned as soon as the claim is made.
func storageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
	}
}

// csiDriver describes, unless told otherwise, a driver that needs attaching,
// wants no pod information, publishes no capacity, changes ownership only
// of writable volumes with an fsType, serves persistent volumes and needs
// no republishing. The last two fields belong to gates on in 1.37
// (SELinuxMountReadWriteOncePod, VolumeLimitScaling).
func csiDriver(d *storagev1.CSIDriver) {
	spec := &d.Spec
	if spec.AttachRequired == nil {
		spec.AttachRequired = ptr.To(true)
	}
	if spec.PodInfoOnMount == nil {
		spec.PodInfoOnMount = ptr.To(false)
	}
	if spec.StorageCapacity == nil {
		spec.StorageCapacity = ptr.To(false)
	}
	if spec.FSGroupPolicy == nil {
		spec.FSGroupPolicy = ptr.To(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(spec.VolumeLifecycleModes) == 0 {
		spec.VolumeLifecycleModes = append(spec.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent)
	}
	if spec.RequiresRepublish == nil {
		spec.RequiresRepublish = ptr.To(false)
	}
	if spec.SELinuxMount == nil {
		spec.SELinuxMount = ptr.To(false)
	}
	if spec.PreventPodSchedulingIfMissing == nil {
		spec.PreventPodSchedulingIfMissing = ptr.To(false)
	}
}

// volumeAttachment defaults an inline volume as a persistent volume's
// source, without the defaults of the PersistentVolume object itself.
func volumeAttachment(va *storagev1.VolumeAttachment) {
	if pv := va.Spec.Source.InlineVolumeSpec; pv != nil {
		persistentVolumeSpec(pv)
	}
}
