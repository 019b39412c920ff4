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

import "k8s.io/apimachinery/pkg/runtime/schema"

// Uncovered lists the built-in kinds kube-apiserver 1.37 defaults that
// NewScheme does not: it registers no defaulting function for them, so
// their objects are admitted offline as given. Each kind's list kind is
// included. All are beta or alpha versions that kube-apiserver 1.37 does
// not serve unless enabled, or no longer serves; the same kinds in their
// v1 versions are covered.
func Uncovered() []schema.GroupVersionKind {
	var kinds []schema.GroupVersionKind
	for _, gv := range uncovered {
		for _, kind := range gv.kinds {
			kinds = append(kinds,
				schema.GroupVersionKind{Group: gv.group, Version: gv.version, Kind: kind},
				schema.GroupVersionKind{Group: gv.group, Version: gv.version, Kind: kind + "List"})
		}
	}
	return kinds
}

var uncovered = []struct {
	group, version string
	kinds          []string
}{
	{"admissionregistration.k8s.io", "v1alpha1", []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}},
	{"admissionregistration.k8s.io", "v1beta1", []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration"}},
	{"apps", "v1beta1", []string{"Deployment", "StatefulSet"}},
	{"apps", "v1beta2", []string{"DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"}},
	{"batch", "v1beta1", []string{"CronJob"}},
	{"certificates.k8s.io", "v1beta1", []string{"CertificateSigningRequest", "PodCertificateRequest"}},
	{"discovery.k8s.io", "v1beta1", []string{"EndpointSlice"}},
	{"extensions", "v1beta1", []string{"DaemonSet", "Deployment", "Ingress", "NetworkPolicy", "ReplicaSet"}},
	{"flowcontrol.apiserver.k8s.io", "v1beta1", []string{"FlowSchema", "PriorityLevelConfiguration"}},
	{"flowcontrol.apiserver.k8s.io", "v1beta2", []string{"FlowSchema", "PriorityLevelConfiguration"}},
	{"flowcontrol.apiserver.k8s.io", "v1beta3", []string{"FlowSchema", "PriorityLevelConfiguration"}},
	{"networking.k8s.io", "v1beta1", []string{"Ingress"}},
	{"rbac.authorization.k8s.io", "v1alpha1", []string{"ClusterRoleBinding", "RoleBinding"}},
	{"rbac.authorization.k8s.io", "v1beta1", []string{"ClusterRoleBinding", "RoleBinding"}},
	{"resource.k8s.io", "v1alpha3", []string{"DeviceTaintRule", "ResourcePoolStatusRequest"}},
	{"resource.k8s.io", "v1beta1", []string{"ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"}},
	{"resource.k8s.io", "v1beta2", []string{"DeviceTaintRule", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"}},
	{"scheduling.k8s.io", "v1alpha3", []string{"CompositePodGroup", "PodGroup"}},
	{"scheduling.k8s.io", "v1beta1", []string{"PodGroup", "PriorityClass"}},
	{"storage.k8s.io", "v1alpha1", []string{"VolumeAttachment"}},
	{"storage.k8s.io", "v1beta1", []string{"CSIDriver", "StorageClass", "VolumeAttachment"}},
}
