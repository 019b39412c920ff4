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

// Package noderestrictiontest is NodeRestriction's table of requests and
// the decisions expected for them: Kubernetes 1.37's 229 cases (Upstream)
// and admitkit's own (Admitkit). It is for tests only and holds data only,
// so that the same table can judge the plugin on k8s.io/api objects in this
// module's tests and, in test/, on kube-apiserver's internal objects next to
// Kubernetes' own plugin.
package noderestrictiontest

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

// Case is one request, the cluster state the plugin sees while judging it,
// and the expected decision.
type Case struct {
	Name  string
	Attrs admission.Attributes // with k8s.io/api objects
	// Err is "" when the request must be allowed, otherwise a substring
	// of the error.
	Err string

	// What the listers hold. Nodes nil stands for DefaultNodes.
	Pods            []*corev1.Pod
	Nodes           []*corev1.Node
	ServiceAccounts []*corev1.ServiceAccount
	CSIDrivers      []*storagev1.CSIDriver
	PVCs            []*corev1.PersistentVolumeClaim
	PVs             []*corev1.PersistentVolume

	// Authorizer is the one question the plugin must ask, with its answer;
	// nil means the plugin must not ask any.
	Authorizer *Authorizer

	// Feature gates: none of Inspect, Emulation and Gates set means the
	// plugin never inspects a gate, so every gate reads false, as in
	// Kubernetes' tests. Otherwise gates start at their 1.37 defaults (at
	// Emulation, when set) and Gates overrides them by name.
	Inspect   bool
	Emulation string
	Gates     map[string]bool

	// Config is admitkit's plugin configuration; Kubernetes' plugin has
	// none, so a case that sets it has no upstream counterpart.
	Config *v1alpha1.Configuration
}

// Authorizer is an authorization question and the answer to give.
type Authorizer struct {
	Want     authorizer.AttributesRecord
	Decision authorizer.Decision
	Err      error
}

// DefaultNodes is what the node lister holds when a case says nothing.
func DefaultNodes() []*corev1.Node {
	return []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "mynode", UID: "mynode-uid"}}}
}

// The identities the cases use.
var (
	UserMyNode = &user.DefaultInfo{Name: "system:node:mynode", Groups: []string{user.NodesGroup}}
	UserBob    = &user.DefaultInfo{Name: "bob"}
)

var (
	gvrPods      = corev1.SchemeGroupVersion.WithResource("pods")
	gvrNodes     = corev1.SchemeGroupVersion.WithResource("nodes")
	gvrPVCs      = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	gvrSAs       = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	gvrConfigMap = corev1.SchemeGroupVersion.WithResource("configmaps")
	gvrLeases    = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	gvrCSINodes  = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "csinodes"}
	gvrSlices    = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"}
	gvrCSRs      = certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
	gvrPCRs      = certificatesv1beta1.SchemeGroupVersion.WithResource("podcertificaterequests")

	kindPod      = corev1.SchemeGroupVersion.WithKind("Pod")
	kindEviction = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
	kindNode     = corev1.SchemeGroupVersion.WithKind("Node")
	kindToken    = schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}
)

// Request builds admission attributes with the options object that matches
// the operation, so that cases read as the request they model.
func Request(obj, old runtime.Object, kind schema.GroupVersionKind, gvr schema.GroupVersionResource, namespace, name, subresource string, op admission.Operation, u user.Info) admission.Attributes {
	var opts runtime.Object
	switch op {
	case admission.Create:
		opts = &metav1.CreateOptions{}
	case admission.Update:
		opts = &metav1.UpdateOptions{}
	case admission.Delete:
		opts = &metav1.DeleteOptions{}
	}
	return admission.NewAttributesRecord(obj, old, kind, namespace, name, gvr, subresource, op, opts, false, u)
}

// newPod returns a pod with UID pod-uid; a mirror pod also carries the
// mirror annotation and a controller reference to its node, UID <node>-uid.
func newPod(namespace, name, node string, mirror bool) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: "pod-uid"}, Spec: corev1.PodSpec{NodeName: node}}
	if mirror {
		pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "true"}
		controller := true
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID(node + "-uid"), Controller: &controller}}
	}
	return pod
}

func podList(pods ...*corev1.Pod) []*corev1.Pod { return pods }

func nodeList(nodes ...*corev1.Node) []*corev1.Node { return nodes }

func relabeled(pod *corev1.Pod, labels map[string]string) *corev1.Pod {
	c := pod.DeepCopy()
	c.Labels = nil
	if labels != nil {
		c.Labels = map[string]string{}
		for k, v := range labels {
			c.Labels[k] = v
		}
	}
	return c
}

// audienceAuthorizer expects the token-audience question for mysa in ns.
func audienceAuthorizer(audience string, decision authorizer.Decision) *Authorizer {
	return &Authorizer{Decision: decision, Want: authorizer.AttributesRecord{
		User:            &user.DefaultInfo{Name: "system:node:mynode", Groups: []string{user.NodesGroup}},
		Verb:            "request-serviceaccounts-token-audience",
		APIVersion:      "v1",
		Resource:        audience,
		Namespace:       "ns",
		Name:            "mysa",
		ResourceRequest: true,
	}}
}

// signerAuthorizer expects the pod-certificate signer question.
func signerAuthorizer(u user.Info, decision authorizer.Decision) *Authorizer {
	return &Authorizer{Decision: decision, Want: authorizer.AttributesRecord{
		User:            &user.DefaultInfo{Name: u.GetName(), Groups: u.GetGroups()},
		Verb:            "request-serviceaccounts-podcertificate-signer",
		APIGroup:        "certificates.k8s.io",
		APIVersion:      "v1beta1",
		Resource:        "example.com:foo",
		Namespace:       "ns",
		Name:            "pcr-sa",
		ResourceRequest: true,
	}}
}

// Certificate requests for the common names the cases use, made once with
// a throwaway P-256 key: the plugin reads only the subject.
var csrPEMs = map[string]string{
	"system:node:mynode": `-----BEGIN CERTIFICATE REQUEST-----
MIHXMH8CAQAwHTEbMBkGA1UEAxMSc3lzdGVtOm5vZGU6bXlub2RlMFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAEXFzggNZRypW1+n7yMbgxA/Alyu8sGzOoAh0OBxu0
ylrvzrsXpwhD702fVSKuCzwrZrWcmR4ckfQM/C6AyD3saqAAMAoGCCqGSM49BAMC
A0gAMEUCIQCD8uuiUvEkuQpyOlpi+pW2QyorgUQJ9hPIhwoh+its0QIgIAe2bc6p
6kyKrT998gckAkkPHrkcZAfro9Mo6TG2MXQ=
-----END CERTIFICATE REQUEST-----
`,
	"system:node:othernode": `-----BEGIN CERTIFICATE REQUEST-----
MIHbMIGCAgEAMCAxHjAcBgNVBAMTFXN5c3RlbTpub2RlOm90aGVybm9kZTBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABFxc4IDWUcqVtfp+8jG4MQPwJcrvLBszqAId
DgcbtMpa7867F6cIQ+9Nn1Uirgs8K2a1nJkeHJH0DPwugMg97GqgADAKBggqhkjO
PQQDAgNIADBFAiBJjC/7XE9O/eWoEtfgy1evKKCvg8GfW6RWZz6gAQ7LHQIhAKGN
dUtJIVpn+EaWAxQmWGxDeKeeFBDv5fwZbcPGrEHv
-----END CERTIFICATE REQUEST-----
`,
	"some-other-identity": `-----BEGIN CERTIFICATE REQUEST-----
MIHZMIGAAgEAMB4xHDAaBgNVBAMTE3NvbWUtb3RoZXItaWRlbnRpdHkwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAARcXOCA1lHKlbX6fvIxuDED8CXK7ywbM6gCHQ4H
G7TKWu/OuxenCEPvTZ9VIq4LPCtmtZyZHhyR9Az8LoDIPexqoAAwCgYIKoZIzj0E
AwIDSAAwRQIgWB6p+8ERKnLHmPDnn3gbs4xhWtlujdYCKwo0B7CcQIkCIQDHQTVO
aLUVQQI2NvDGIAevZeeGUXrzYQOrLsvDiwYGKw==
-----END CERTIFICATE REQUEST-----
`,
}

// csrPEM returns a PEM certificate request for cn, or an empty PEM block.
func csrPEM(cn string, valid bool) []byte {
	if !valid {
		return []byte("-----BEGIN CERTIFICATE REQUEST-----\n-----END CERTIFICATE REQUEST-----")
	}
	return []byte(csrPEMs[cn])
}

func csrRequest(cn, signer string, valid bool, u user.Info) admission.Attributes {
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM(cn, valid), SignerName: signer}}
	return Request(csr, nil, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), gvrCSRs, "", "", "", admission.Create, u)
}

func pcrRequest(namespace, podName string, podUID types.UID, saName string, saUID types.UID, nodeName string, nodeUID types.UID, u user.Info) admission.Attributes {
	pcr := &certificatesv1beta1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "foo"},
		Spec: certificatesv1beta1.PodCertificateRequestSpec{
			SignerName:         "example.com/foo",
			PodName:            podName,
			PodUID:             podUID,
			ServiceAccountName: saName,
			ServiceAccountUID:  saUID,
			NodeName:           types.NodeName(nodeName),
			NodeUID:            nodeUID,
		},
	}
	return Request(pcr, nil, certificatesv1beta1.SchemeGroupVersion.WithKind("PodCertificateRequest"), gvrPCRs, namespace, "foo", "", admission.Create, u)
}
