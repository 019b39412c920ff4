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
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// podReferencesAPIObjects reports whether a pod refers to any API object,
// and which kind, in the order and words of Kubernetes' HasAPIObjectReference.
// A node can read only objects its pods need, and a mirror pod must not
// become a way to name new ones. Volume and projection types this code does
// not know are errors: a new type may carry a reference, so it is refused
// until someone decides.
func podReferencesAPIObjects(pod *corev1.Pod) (bool, string, error) {
	spec := &pod.Spec
	if spec.ServiceAccountName != "" {
		return true, "serviceaccounts", nil
	}
	if podNamesSecret(spec) {
		return true, "secrets", nil
	}
	if podNamesConfigMap(spec) {
		return true, "configmaps", nil
	}
	if len(spec.ResourceClaims) > 0 {
		return true, "resourceclaims", nil
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		switch {
		case v.AWSElasticBlockStore != nil, v.AzureDisk != nil, v.CephFS != nil, v.Cinder != nil,
			v.DownwardAPI != nil, v.EmptyDir != nil, v.FC != nil, v.FlexVolume != nil, v.Flocker != nil,
			v.GCEPersistentDisk != nil, v.GitRepo != nil, v.HostPath != nil, v.Image != nil, v.ISCSI != nil,
			v.NFS != nil, v.PhotonPersistentDisk != nil, v.PortworxVolume != nil, v.Quobyte != nil,
			v.RBD != nil, v.ScaleIO != nil, v.StorageOS != nil, v.VsphereVolume != nil:
			// Their secret references, if any, were caught above.
			continue
		case v.ConfigMap != nil:
			return true, "configmaps (via configmap volumes)", nil
		case v.Secret != nil:
			return true, "secrets (via secret volumes)", nil
		case v.CSI != nil:
			return true, "csidrivers (via CSI volumes)", nil
		case v.Glusterfs != nil:
			return true, "endpoints (via glusterFS volumes)", nil
		case v.PersistentVolumeClaim != nil:
			return true, "persistentvolumeclaims", nil
		case v.Ephemeral != nil:
			return true, "persistentvolumeclaims (via ephemeral volumes)", nil
		case v.AzureFile != nil:
			return true, "secrets (via azureFile volumes)", nil
		case v.Projected != nil:
			for j := range v.Projected.Sources {
				s := &v.Projected.Sources[j]
				switch {
				case s.ConfigMap != nil:
					return true, "configmaps (via projected volumes)", nil
				case s.Secret != nil:
					return true, "secrets (via projected volumes)", nil
				case s.ServiceAccountToken != nil:
					return true, "serviceaccounts (via projected volumes)", nil
				case s.ClusterTrustBundle != nil:
					return true, "clustertrustbundles", nil
				case s.PodCertificate != nil:
					return true, "podcertificates", nil
				case s.DownwardAPI != nil:
					continue
				default:
					return true, "", fmt.Errorf("unknown source for projected volume %q", v.Name)
				}
			}
		default:
			// Two spaces, as upstream writes it.
			return true, "", fmt.Errorf("unknown volume type for volume  %q", v.Name)
		}
	}
	return false, "", nil
}

// envNames calls found for the secret and config map names a container's
// environment refers to; both container types share the field shapes.
func envNames(env []corev1.EnvVar, envFrom []corev1.EnvFromSource, secret, configMap func(string)) {
	for i := range envFrom {
		if r := envFrom[i].SecretRef; r != nil {
			secret(r.Name)
		}
		if r := envFrom[i].ConfigMapRef; r != nil {
			configMap(r.Name)
		}
	}
	for i := range env {
		vf := env[i].ValueFrom
		if vf == nil {
			continue
		}
		if vf.SecretKeyRef != nil {
			secret(vf.SecretKeyRef.Name)
		}
		if vf.ConfigMapKeyRef != nil {
			configMap(vf.ConfigMapKeyRef.Name)
		}
	}
}

// containerEnvNames walks init, regular and ephemeral containers.
func containerEnvNames(spec *corev1.PodSpec, secret, configMap func(string)) {
	for i := range spec.InitContainers {
		envNames(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom, secret, configMap)
	}
	for i := range spec.Containers {
		envNames(spec.Containers[i].Env, spec.Containers[i].EnvFrom, secret, configMap)
	}
	for i := range spec.EphemeralContainers {
		envNames(spec.EphemeralContainers[i].Env, spec.EphemeralContainers[i].EnvFrom, secret, configMap)
	}
}

// podNamesSecret reports a non-empty secret name anywhere in the spec:
// image pull secrets, container environments and volume secret references.
func podNamesSecret(spec *corev1.PodSpec) bool {
	found := false
	secret := func(name string) {
		if name != "" {
			found = true
		}
	}
	for _, ref := range spec.ImagePullSecrets {
		secret(ref.Name)
	}
	containerEnvNames(spec, secret, func(string) {})
	for i := range spec.Volumes {
		if found {
			return true
		}
		s := &spec.Volumes[i].VolumeSource
		// One case per volume: a volume has a single source type.
		switch {
		case s.AzureFile != nil:
			secret(s.AzureFile.SecretName)
		case s.CephFS != nil:
			secretRef(s.CephFS.SecretRef, secret)
		case s.Cinder != nil:
			secretRef(s.Cinder.SecretRef, secret)
		case s.FlexVolume != nil:
			secretRef(s.FlexVolume.SecretRef, secret)
		case s.Projected != nil:
			for j := range s.Projected.Sources {
				if p := s.Projected.Sources[j].Secret; p != nil {
					secret(p.Name)
				}
			}
		case s.RBD != nil:
			secretRef(s.RBD.SecretRef, secret)
		case s.Secret != nil:
			secret(s.Secret.SecretName)
		case s.ScaleIO != nil:
			secretRef(s.ScaleIO.SecretRef, secret)
		case s.ISCSI != nil:
			secretRef(s.ISCSI.SecretRef, secret)
		case s.StorageOS != nil:
			if s.StorageOS.SecretRef != nil {
				secret(s.StorageOS.SecretRef.Name)
			}
		case s.CSI != nil:
			secretRef(s.CSI.NodePublishSecretRef, secret)
		}
	}
	return found
}

func secretRef(ref *corev1.LocalObjectReference, secret func(string)) {
	if ref != nil {
		secret(ref.Name)
	}
}

// podNamesConfigMap reports a non-empty config map name in container
// environments, configMap volumes or projected config maps.
func podNamesConfigMap(spec *corev1.PodSpec) bool {
	found := false
	configMap := func(name string) {
		if name != "" {
			found = true
		}
	}
	containerEnvNames(spec, func(string) {}, configMap)
	for i := range spec.Volumes {
		s := &spec.Volumes[i].VolumeSource
		switch {
		case s.Projected != nil:
			for j := range s.Projected.Sources {
				if p := s.Projected.Sources[j].ConfigMap; p != nil {
					configMap(p.Name)
				}
			}
		case s.ConfigMap != nil:
			configMap(s.ConfigMap.Name)
		}
	}
	return found
}
