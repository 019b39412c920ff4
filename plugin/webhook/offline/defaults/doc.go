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
// Kinds kube-apiserver defaults that NewScheme leaves as given are listed
// by Uncovered.
package defaults
