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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
)

// denyReason says which rule refused a request; it is the reason label.
type denyReason string

const (
	// reasonUnknownNode: a node credential that names no node.
	reasonUnknownNode denyReason = "unknown_node"
	// reasonUnsupportedRequest: an operation or subresource a node may
	// never use on the resource.
	reasonUnsupportedRequest denyReason = "unsupported_request"
	// reasonUnreadableObject: the object is not of the kind the rule
	// reads, cannot be parsed, or lacks the name the rule needs.
	reasonUnreadableObject denyReason = "unreadable_object"
	// reasonOtherNodeObject: the object is another node's (bound, named or
	// certified for it), or no node's.
	reasonOtherNodeObject denyReason = "other_node_object"
	// reasonNotMirrorPod: a pod create without the mirror pod annotation.
	reasonNotMirrorPod denyReason = "not_mirror_pod"
	// reasonUnownedMirrorPod: a mirror pod without a single controller
	// owner reference to the node's current Node object.
	reasonUnownedMirrorPod denyReason = "unowned_mirror_pod"
	// reasonAPIReferenceInMirrorPod: a mirror pod that names API objects,
	// or a volume type whose references are not known.
	reasonAPIReferenceInMirrorPod denyReason = "api_reference_in_mirror_pod"
	// reasonForbiddenLabel: a Node label outside the kubelet's own and the
	// configured ones, or any pod label changed through pod status.
	reasonForbiddenLabel denyReason = "forbidden_label"
	// reasonTaintChange: Node taints changed.
	reasonTaintChange denyReason = "taint_change"
	// reasonConfigSource: a Node's spec.configSource set or changed.
	reasonConfigSource denyReason = "config_source"
	// reasonOwnerReferenceChange: a Node's ownerReferences changed.
	reasonOwnerReferenceChange denyReason = "owner_reference_change"
	// reasonForbiddenField: a field a node may not write through a status
	// subresource (pod resource claim statuses, PVC fields other than the
	// expansion status, a CSINode's spec).
	reasonForbiddenField denyReason = "forbidden_field"
	// reasonFeatureDisabled: a request its feature gate leaves refused.
	reasonFeatureDisabled denyReason = "feature_disabled"
	// reasonUnboundToken: a service account token not bound to a pod by
	// name and UID.
	reasonUnboundToken denyReason = "unbound_token"
	// reasonTokenAudience: a token audience no pod on the node uses and
	// the authorizer does not grant.
	reasonTokenAudience denyReason = "token_audience"
	// reasonCertificateSigner: a pod certificate signer the pod does not
	// mount and the authorizer does not grant.
	reasonCertificateSigner denyReason = "certificate_signer"
	// reasonMirrorPodCertificate: a pod certificate for a mirror pod.
	reasonMirrorPodCertificate denyReason = "mirror_pod_certificate"
	// reasonServiceAccountMismatch: a pod certificate for a service account
	// the pod does not run as.
	reasonServiceAccountMismatch denyReason = "service_account_mismatch"
	// reasonObjectNotFound: an object the request names (a pod, the node,
	// a service account) is not in the informer's cache.
	reasonObjectNotFound denyReason = "object_not_found"
	// reasonUIDMismatch: the request names an object by a UID that is not
	// the cached one's: deleted and recreated, or a lagging informer.
	reasonUIDMismatch denyReason = "uid_mismatch"
	// reasonLookupFailed: the informer's cache could not answer.
	reasonLookupFailed denyReason = "lookup_failed"
)

// denial is a rule's refusal: its cause and the reason the metrics
// record. Rules return it instead of a bare error, so that no refusal goes
// without a reason.
type denial struct {
	reason denyReason
	cause  error
	// forbidden makes the client's error a Forbidden one about the
	// request's object; otherwise the cause is passed on as it is.
	forbidden bool
}

// forbid refuses with a Forbidden error about err.
func forbid(reason denyReason, err error) *denial {
	return &denial{reason: reason, cause: err, forbidden: true}
}

// refuse refuses with err as it is: not-found errors and informer lag,
// which clients retry, are not Forbidden.
func refuse(reason denyReason, err error) *denial {
	return &denial{reason: reason, cause: err}
}

// errorFor is the error the client gets for request a. who, when not
// empty, says which scoped service account and node the rules held the
// request to: the same rule reads the same for kubelets and daemons, and
// the daemon's error says why a node is involved at all.
func (d *denial) errorFor(a admission.Attributes, who string) error {
	if !d.forbidden {
		return d.cause
	}
	if who != "" {
		return admission.NewForbidden(a, fmt.Errorf("%s: %w", who, d.cause))
	}
	return admission.NewForbidden(a, d.cause)
}

// lookupDenial refuses a request whose object lookup in an informer's cache
// failed: not found is passed on as it is, since clients retry it; any
// other failure is Forbidden.
func lookupDenial(err error) *denial {
	if apierrors.IsNotFound(err) {
		return refuse(reasonObjectNotFound, err)
	}
	return forbid(reasonLookupFailed, err)
}
