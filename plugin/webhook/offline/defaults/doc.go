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

// Package defaults gives offline admission kube-apiserver's defaulting
// without linking k8s.io/kubernetes: NewScheme returns a scheme of
// client-go's built-in types whose Default sets the fields kube-apiserver
// 1.37 sets when it decodes an object, so that what a mutator reads or
// writes offline is what it would read or write on a server.
//
// The rules are this package's own, one file per API group, and are held
// to kube-apiserver's by a differential test in the test module
// (test/apiserver/defaults_test.go): random objects of every built-in kind
// are defaulted by both and must come out equal.
//
// Feature gates are taken at kube-apiserver 1.37's defaults. The gated
// defaults followed are:
//   - ImageVolume (GA, on): an image volume gets a pull policy.
//   - MaxUnavailableStatefulSet (beta, on): a rolling StatefulSet gets
//     maxUnavailable 1.
//   - SELinuxMountReadWriteOncePod (GA, on) and VolumeLimitScaling (beta,
//     on): a CSIDriver gets seLinuxMount and preventPodSchedulingIfMissing.
//   - PodLevelResourcesFixDefaulting (beta, on): pod-level requests are not
//     defaulted here; kube-apiserver sets them after admission.
//   - H2CContainerProbe, PodLogsQuerySplitStreams, PodGroupPreemptionPolicy
//     (alpha, off): their defaults are not applied.
//
// Covered: every kind kube-apiserver 1.37 defaults in core/v1, apps/v1,
// batch/v1, autoscaling/v1 and v2, networking.k8s.io/v1,
// discovery.k8s.io/v1, rbac.authorization.k8s.io/v1, storage.k8s.io/v1,
// scheduling.k8s.io/v1, flowcontrol.apiserver.k8s.io/v1,
// admissionregistration.k8s.io/v1, certificates.k8s.io/v1,
// resource.k8s.io/v1 and authentication.k8s.io/v1, with their lists.
//
// Not covered (Default leaves them as given; Uncovered returns them): the
// defaulted kinds of the beta and alpha versions client-go still carries,
// which kube-apiserver 1.37 no longer serves or serves only when enabled:
//   - admissionregistration.k8s.io/v1alpha1 and v1beta1: the admission
//     policies and bindings, and in v1beta1 the webhook configurations;
//   - apps/v1beta1 and v1beta2, extensions/v1beta1: the workloads, and in
//     extensions Ingress and NetworkPolicy;
//   - batch/v1beta1 CronJob; networking.k8s.io/v1beta1 Ingress;
//     discovery.k8s.io/v1beta1 EndpointSlice;
//   - certificates.k8s.io/v1beta1 CertificateSigningRequest and
//     PodCertificateRequest;
//   - flowcontrol.apiserver.k8s.io/v1beta1 to v1beta3 FlowSchema and
//     PriorityLevelConfiguration;
//   - rbac.authorization.k8s.io/v1alpha1 and v1beta1 RoleBinding and
//     ClusterRoleBinding;
//   - resource.k8s.io/v1alpha3, v1beta1 and v1beta2 claims, claim
//     templates, slices, taint rules and pool status requests;
//   - scheduling.k8s.io/v1alpha3 PodGroup and CompositePodGroup, v1beta1
//     PodGroup and PriorityClass;
//   - storage.k8s.io/v1beta1 CSIDriver, StorageClass, VolumeAttachment.
//
// What kube-apiserver's registry does after admission, when it prepares a
// create (pod-level requests, for one), is not defaulting and is not done
// here.
package defaults
