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
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

var (
	csrGVK = certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest")
	pcrGVK = certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest")
)

// signerVerb is the RBAC verb that lets a node request pod certificates
// from a signer none of the pod's volumes names.
const signerVerb = "request-serviceaccounts-podcertificate-signer"

// validateCSR keeps a node from asking the kubelet signers for a
// certificate in another node's name: such a certificate would carry that
// node's identity, and the approver trusts the common name.
func (p *Plugin) validateCSR(nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if a.GetOperation() != admission.Create {
		return nil
	}
	signer, request, err := csrSignerAndRequest(a.GetObject(), o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	if signer != certificatesv1.KubeletServingSignerName && signer != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	csr, err := parseCSR(request)
	if err != nil {
		return forbid(reasonUnreadableObject, fmt.Errorf("unable to parse csr: %w", err))
	}
	if csr.Subject.CommonName != nodeUserNamePrefix+nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("can only create a node CSR with CN=system:node:%s", nodeName))
	}
	return nil
}

// csrSignerAndRequest reads a CSR in either served version; v1beta1's
// signer is optional.
func csrSignerAndRequest(obj runtime.Object, o admission.ObjectInterfaces) (string, []byte, error) {
	if b, ok := obj.(*certificatesv1beta1.CertificateSigningRequest); ok && b != nil {
		return derefString(b.Spec.SignerName), b.Spec.Request, nil
	}
	csr, err := asVersioned[certificatesv1.CertificateSigningRequest](obj, csrGVK, o)
	if err != nil {
		return "", nil, err
	}
	return csr.Spec.SignerName, csr.Spec.Request, nil
}

// parseCSR decodes the PEM-encoded request the way the certificates API does.
func parseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// pcrSpec is the part of a PodCertificateRequest the rule reads, the same
// in v1 and v1beta1.
type pcrSpec struct {
	signerName         string
	podName            string
	podUID             types.UID
	serviceAccountName string
	serviceAccountUID  types.UID
	nodeName           types.NodeName
	nodeUID            types.UID
}

func podCertificateRequestSpec(obj runtime.Object, o admission.ObjectInterfaces) (pcrSpec, error) {
	if b, ok := obj.(*certificatesv1beta1.PodCertificateRequest); ok && b != nil {
		s := &b.Spec
		return pcrSpec{s.SignerName, s.PodName, s.PodUID, s.ServiceAccountName, s.ServiceAccountUID, s.NodeName, s.NodeUID}, nil
	}
	pcr, err := asVersioned[certificatesv1.PodCertificateRequest](obj, pcrGVK, o)
	if err != nil {
		return pcrSpec{}, err
	}
	s := &pcr.Spec
	return pcrSpec{s.SignerName, s.PodName, s.PodUID, s.ServiceAccountName, s.ServiceAccountUID, s.NodeName, s.NodeUID}, nil
}

// validatePodCertificateRequest lets a node request a pod certificate only
// for a pod that runs on it, under the pod's own service account, from a
// signer the pod mounts (or the authorizer grants). Mismatches that informer
// lag can explain (not found, other UID) are plain errors, which clients
// retry; the others are Forbidden.
func (p *Plugin) validatePodCertificateRequest(ctx context.Context, nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if !p.gates.podCertificateRequests {
		return forbid(reasonFeatureDisabled, fmt.Errorf("PodCertificateRequest feature gate is disabled"))
	}
	if a.GetOperation() != admission.Create {
		return forbid(reasonUnsupportedRequest, fmt.Errorf("unexpected operation %v", a.GetOperation()))
	}
	if a.GetSubresource() != "" {
		return forbid(reasonUnsupportedRequest, fmt.Errorf("unexpected subresource %v", a.GetSubresource()))
	}
	req, err := podCertificateRequestSpec(a.GetObject(), o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	namespace := a.GetNamespace()
	podKey := namespace + "/" + req.podName

	if string(req.nodeName) != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("PodCertificateRequest.Spec.NodeName=%q, which is not the requesting node %q", req.nodeName, nodeName))
	}
	node, err := p.objects.nodes.get(ctx, "", string(req.nodeName))
	if err != nil {
		if apierrors.IsNotFound(err) {
			return refuse(reasonObjectNotFound, fmt.Errorf("while retrieving node %q named in the PodCertificateRequest: %w", req.nodeName, err))
		}
		return forbid(reasonLookupFailed, fmt.Errorf("while retrieving node %q named in the PodCertificateRequest: %w", req.nodeName, err))
	}
	if node.UID != req.nodeUID {
		return refuse(reasonUIDMismatch, fmt.Errorf("PodCertificateRequest for pod %q names node UID %q, inconsistent with the running node (%q)", podKey, req.nodeUID, node.UID))
	}

	pod, err := p.objects.pods.get(ctx, namespace, req.podName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return refuse(reasonObjectNotFound, fmt.Errorf("while retrieving pod %q named in the PodCertificateRequest: %w", podKey, err))
		}
		return forbid(reasonLookupFailed, fmt.Errorf("while retrieving pod %q named in the PodCertificateRequest: %w", podKey, err))
	}
	if req.podUID != pod.UID {
		return refuse(reasonUIDMismatch, fmt.Errorf("PodCertificateRequest for pod %q contains pod UID (%q) which differs from running pod %q", podKey, req.podUID, string(pod.UID)))
	}
	if pod.Spec.NodeName != string(req.nodeName) {
		return forbid(reasonOtherNodeObject, fmt.Errorf("pod %q is not running on node %q named in the PodCertificateRequest", podKey, req.nodeName))
	}
	// A mirror pod's spec comes from the node itself, so it proves nothing.
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return forbid(reasonMirrorPodCertificate, fmt.Errorf("pod %q is a mirror pod", podKey))
	}
	// The UIDs matched, so a different name is no informer lag.
	if req.serviceAccountName != pod.Spec.ServiceAccountName {
		return forbid(reasonServiceAccountMismatch, fmt.Errorf("PodCertificateRequest for pod %q contains serviceAccountName (%q) that differs from running pod (%q)", podKey, req.serviceAccountName, pod.Spec.ServiceAccountName))
	}
	sa, err := p.objects.serviceAccounts.get(ctx, namespace, req.serviceAccountName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return refuse(reasonObjectNotFound, fmt.Errorf("while retrieving service account %q named in the PodCertificateRequest: %w", namespace+"/"+req.serviceAccountName, err))
		}
		return forbid(reasonLookupFailed, fmt.Errorf("while retrieving service account %q named in the PodCertificateRequest: %w", namespace+"/"+req.serviceAccountName, err))
	}
	if req.serviceAccountUID != sa.UID {
		return refuse(reasonUIDMismatch, fmt.Errorf("PodCertificateRequest for pod %q names service account UID %q, which differs from the running service account (%q)", podKey, req.serviceAccountUID, sa.UID))
	}
	if err := p.validatePodCertificateSigner(ctx, pod, req, a); err != nil {
		return forbid(reasonCertificateSigner, err)
	}
	return nil
}

// validatePodCertificateSigner: the pod must mount a podCertificate volume
// for the signer, or the authorizer must let the node ask that signer for
// the service account anyway.
func (p *Plugin) validatePodCertificateSigner(ctx context.Context, pod *corev1.Pod, req pcrSpec, a admission.Attributes) error {
	if podMountsSigner(pod, req.signerName) {
		return nil
	}
	notMounted := fmt.Errorf("pod %q does not mount a podCertificate projected volume for signer %q", a.GetNamespace()+"/"+req.podName, req.signerName)
	if p.authz == nil {
		return notMounted
	}
	// RBAC resource names cannot hold "/", so signer names are written with
	// ":" the way ClusterTrustBundle names encode them.
	resource := strings.ReplaceAll(req.signerName, "/", ":")
	decision, _, err := p.authz.Authorize(ctx, authorizerAttributes(a, signerVerb, resource, req.serviceAccountName))
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error authorizing %s to request podcertificaterequests for signer %q: %w", a.GetUserInfo().GetName(), req.signerName, err)
	}
	return notMounted
}

func podMountsSigner(pod *corev1.Pod, signerName string) bool {
	for i := range pod.Spec.Volumes {
		projected := pod.Spec.Volumes[i].Projected
		if projected == nil {
			continue
		}
		for j := range projected.Sources {
			if pc := projected.Sources[j].PodCertificate; pc != nil && pc.SignerName == signerName {
				return true
			}
		}
	}
	return false
}
