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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// SetDefaults_Volume makes a volume with no source an emptyDir, and gives an
// image volume the pull policy a container with that image would get.
func SetDefaults_Volume(obj *corev1.Volume) {
	if ptr.AllPtrFieldsNil(&obj.VolumeSource) {
		obj.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	if obj.Image != nil && obj.Image.PullPolicy == "" {
		if imageTag(obj.Image.Reference) == "latest" {
			obj.Image.PullPolicy = corev1.PullAlways
		} else {
			obj.Image.PullPolicy = corev1.PullIfNotPresent
		}
	}
}

// imageTag returns the tag of an image reference, "latest" when it names
// neither a tag nor a digest, and "" when it pins a digest without a tag.
func imageTag(reference string) string {
	name, _, hasDigest := strings.Cut(reference, "@")
	// A colon before the last slash belongs to a registry port, not a tag.
	lastSlash := strings.LastIndexByte(name, '/')
	if colon := strings.LastIndexByte(name, ':'); colon > lastSlash {
		return name[colon+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

// SetDefaults_HostPathVolumeSource sets the unset hostPath type to "".
func SetDefaults_HostPathVolumeSource(obj *corev1.HostPathVolumeSource) {
	if obj.Type == nil {
		obj.Type = ptr.To(corev1.HostPathUnset)
	}
}

// SetDefaults_SecretVolumeSource sets defaultMode to 0644.
func SetDefaults_SecretVolumeSource(obj *corev1.SecretVolumeSource) {
	if obj.DefaultMode == nil {
		obj.DefaultMode = ptr.To[int32](corev1.SecretVolumeSourceDefaultMode)
	}
}

// SetDefaults_ConfigMapVolumeSource sets defaultMode to 0644.
func SetDefaults_ConfigMapVolumeSource(obj *corev1.ConfigMapVolumeSource) {
	if obj.DefaultMode == nil {
		obj.DefaultMode = ptr.To[int32](corev1.ConfigMapVolumeSourceDefaultMode)
	}
}

// SetDefaults_DownwardAPIVolumeSource sets defaultMode to 0644.
func SetDefaults_DownwardAPIVolumeSource(obj *corev1.DownwardAPIVolumeSource) {
	if obj.DefaultMode == nil {
		obj.DefaultMode = ptr.To[int32](corev1.DownwardAPIVolumeSourceDefaultMode)
	}
}

// SetDefaults_ProjectedVolumeSource sets defaultMode to 0644.
func SetDefaults_ProjectedVolumeSource(obj *corev1.ProjectedVolumeSource) {
	if obj.DefaultMode == nil {
		obj.DefaultMode = ptr.To[int32](corev1.ProjectedVolumeSourceDefaultMode)
	}
}

// SetDefaults_ServiceAccountTokenProjection makes a projected token live one hour.
func SetDefaults_ServiceAccountTokenProjection(obj *corev1.ServiceAccountTokenProjection) {
	if obj.ExpirationSeconds == nil {
		obj.ExpirationSeconds = ptr.To(int64(time.Hour.Seconds()))
	}
}

// SetDefaults_ObjectFieldSelector sets the field path's apiVersion to v1.
func SetDefaults_ObjectFieldSelector(obj *corev1.ObjectFieldSelector) {
	if obj.APIVersion == "" {
		obj.APIVersion = "v1"
	}
}

// SetDefaults_PersistentVolumeClaimSpec sets an ephemeral volume's claim to
// volumeMode Filesystem.
func SetDefaults_PersistentVolumeClaimSpec(obj *corev1.PersistentVolumeClaimSpec) {
	if obj.VolumeMode == nil {
		obj.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
}

// SetDefaults_ResourceList rounds every quantity up to millis, as the API
// server does for the resources of an ephemeral volume's claim.
func SetDefaults_ResourceList(obj *corev1.ResourceList) {
	for name, quantity := range *obj {
		quantity.RoundUp(-3)
		(*obj)[name] = quantity
	}
}
