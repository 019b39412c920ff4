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

package noderestriction

import (
	corev1 "k8s.io/api/core/v1"
)

// The CSI drivers that in-tree volume plugins migrate to, as
// k8s.io/csi-translation-lib names them. Kubernetes translates a migratable
// in-tree volume to a CSI one before looking for the driver's token
// audiences; the audience check needs only the driver's name, so a mapping
// of source type to name replaces the translation library.
const (
	awsEBSCSIDriver    = "ebs.csi.aws.com"
	gcePDCSIDriver     = "pd.csi.storage.gke.io"
	azureDiskCSIDriver = "disk.csi.azure.com"
	azureFileCSIDriver = "file.csi.azure.com"
	cinderCSIDriver    = "cinder.csi.openstack.org"
	vSphereCSIDriver   = "csi.vsphere.vmware.com"
	portworxCSIDriver  = "pxd.portworx.com"
)

// inTreeInlineCSIDriver returns the CSI driver an inline in-tree volume
// migrates to, or "" when it does not migrate.
func inTreeInlineCSIDriver(v *corev1.VolumeSource) string {
	return migratedCSIDriver(v.AWSElasticBlockStore != nil, v.GCEPersistentDisk != nil, v.AzureDisk != nil, v.AzureFile != nil, v.Cinder != nil, v.VsphereVolume != nil, v.PortworxVolume != nil)
}

// inTreePersistentCSIDriver returns the CSI driver an in-tree persistent
// volume migrates to, or "" when it does not migrate.
func inTreePersistentCSIDriver(v *corev1.PersistentVolumeSource) string {
	return migratedCSIDriver(v.AWSElasticBlockStore != nil, v.GCEPersistentDisk != nil, v.AzureDisk != nil, v.AzureFile != nil, v.Cinder != nil, v.VsphereVolume != nil, v.PortworxVolume != nil)
}

// migratedCSIDriver holds the one mapping from in-tree plugin to CSI
// driver. Inline and persistent volume sources name the same plugins with
// fields of different Go types, so each caller says which plugins its
// source sets, in this order; a source sets at most one.
func migratedCSIDriver(awsEBS, gcePD, azureDisk, azureFile, cinder, vSphere, portworx bool) string {
	switch {
	case awsEBS:
		return awsEBSCSIDriver
	case gcePD:
		return gcePDCSIDriver
	case azureDisk:
		return azureDiskCSIDriver
	case azureFile:
		return azureFileCSIDriver
	case cinder:
		return cinderCSIDriver
	case vSphere:
		return vSphereCSIDriver
	case portworx:
		return portworxCSIDriver
	}
	return ""
}
