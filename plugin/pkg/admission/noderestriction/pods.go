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
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

// validatePod lets a node create mirror pods for its static pods and delete
// pods bound to it. Everything else about a pod's spec belongs to the
// scheduler and controllers, so other writes are refused.
func (p *Plugin) validatePod(ctx context.Context, nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	switch a.GetOperation() {
	case admission.Create:
		return p.validateMirrorPodCreate(ctx, nodeName, a, o)
	case admission.Delete:
		return p.validatePodDelete(ctx, nodeName, a)
	default:
		return forbid(reasonUnsupportedRequest, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.GetOperation(), nodeName))
	}
}

// validatePodDelete lets a requester held to node nodeName delete only the
// pods bound to that node. The pod is looked up, since a delete carries no
// body to judge.
func (p *Plugin) validatePodDelete(ctx context.Context, nodeName string, a admission.Attributes) *denial {
	pod, err := p.objects.pods.get(ctx, a.GetNamespace(), a.GetName())
	if err != nil {
		return lookupDenial(err)
	}
	if pod.Spec.NodeName != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nodeName))
	}
	return nil
}

// validateMirrorPodCreate: a mirror pod must be bound to the node, be owned
// by (and only by) the node's current Node object, so that it is garbage
// collected with the node, and reference no API object, since a static pod
// manifest could otherwise be used to reach secrets the node has no pod for.
func (p *Plugin) validateMirrorPodCreate(ctx context.Context, nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	pod, err := asVersioned[corev1.Pod](a.GetObject(), podGVK, o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return forbid(reasonNotMirrorPod, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, nodeName))
	}
	if pod.Spec.NodeName != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", nodeName))
	}
	switch len(pod.OwnerReferences) {
	case 0:
		return forbid(reasonUnownedMirrorPod, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
	case 1:
	default:
		return forbid(reasonUnownedMirrorPod, fmt.Errorf("node %q can only create pods with a single owner reference set to itself", nodeName))
	}
	owner := &pod.OwnerReferences[0]
	if owner.APIVersion != corev1.SchemeGroupVersion.String() || owner.Kind != "Node" || owner.Name != nodeName {
		return forbid(reasonUnownedMirrorPod, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
	}
	if owner.Controller == nil || !*owner.Controller {
		return forbid(reasonUnownedMirrorPod, fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", nodeName))
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return forbid(reasonUnownedMirrorPod, fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", nodeName))
	}
	// The UID pins the owner to this incarnation of the Node: a reference to
	// a deleted and re-registered node would orphan the pod.
	node, err := p.objects.nodes.get(ctx, "", nodeName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return refuse(reasonObjectNotFound, err)
		}
		return forbid(reasonLookupFailed, fmt.Errorf("error looking up node %s to verify uid: %v", nodeName, err))
	}
	if owner.UID != node.UID {
		// Upstream prints the owner reference's UID as "expected".
		return forbid(reasonUnownedMirrorPod, fmt.Errorf("node %s UID mismatch: expected %s got %s", nodeName, owner.UID, node.UID))
	}

	referenced, what, err := podReferencesAPIObjects(pod)
	if err != nil {
		return forbid(reasonAPIReferenceInMirrorPod, fmt.Errorf("error checking mirror pod for API references: %w", err))
	}
	if referenced {
		return forbid(reasonAPIReferenceInMirrorPod, fmt.Errorf("node %q can not create pods that reference %s", nodeName, what))
	}
	return nil
}

// validatePodStatus lets a node update the status of pods bound to it, but
// not, through status, the labels (which select services and policies) or
// the resource claim records the scheduler and DRA controller own.
func (p *Plugin) validatePodStatus(nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if a.GetOperation() != admission.Update {
		return forbid(reasonUnsupportedRequest, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	oldPod, err := asVersioned[corev1.Pod](a.GetOldObject(), podGVK, o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	// The old object is what is stored, so the binding is not the node's claim.
	if oldPod.Spec.NodeName != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", nodeName))
	}
	// Of the new pod only the metadata and status are read.
	newStatus, newMeta, err := readPart(a.GetObject(), podGVK, o, "Status", func(p *corev1.Pod) *corev1.PodStatus { return &p.Status })
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	if !labels.Equals(oldPod.Labels, newMeta.GetLabels()) {
		return forbid(reasonForbiddenLabel, fmt.Errorf("node %q cannot update labels through pod status", nodeName))
	}
	if !claimStatusesEqual(oldPod.Status.ResourceClaimStatuses, newStatus.ResourceClaimStatuses) {
		return forbid(reasonForbiddenField, fmt.Errorf("node %q cannot update resource claim statues", nodeName))
	}
	if !extendedClaimStatusEqual(oldPod.Status.ExtendedResourceClaimStatus, newStatus.ExtendedResourceClaimStatus) {
		return forbid(reasonForbiddenField, fmt.Errorf("node %q cannot update extended resource claim status", nodeName))
	}
	if !nodeAllocatableClaimStatusesEqual(oldPod.Status.NodeAllocatableResourceClaimStatuses, newStatus.NodeAllocatableResourceClaimStatuses) {
		return forbid(reasonForbiddenField, fmt.Errorf("node %q cannot update node allocatable resource claim statuses", nodeName))
	}
	return nil
}

// claimStatusesEqual and the comparisons below it read the fields
// Kubernetes 1.37 compares, element by element, no more and no less: they
// are its rule, not a deep equality, so Semantic.DeepEqual would judge
// differently.
func claimStatusesEqual(x, y []corev1.PodResourceClaimStatus) bool {
	return slices.EqualFunc(x, y, func(a, b corev1.PodResourceClaimStatus) bool {
		return a.Name == b.Name && stringPtrEqual(a.ResourceClaimName, b.ResourceClaimName)
	})
}

func extendedClaimStatusEqual(x, y *corev1.PodExtendedResourceClaimStatus) bool {
	if x == nil || y == nil {
		return x == y
	}
	return x.ResourceClaimName == y.ResourceClaimName && slices.Equal(x.RequestMappings, y.RequestMappings)
}

func nodeAllocatableClaimStatusesEqual(x, y []corev1.NodeAllocatableResourceClaimStatus) bool {
	return slices.EqualFunc(x, y, func(a, b corev1.NodeAllocatableResourceClaimStatus) bool {
		return a.ResourceClaimName == b.ResourceClaimName &&
			slices.Equal(a.Containers, b.Containers) &&
			slices.EqualFunc(a.Mapping, b.Mapping, func(m, n corev1.NodeAllocatableMappedResources) bool {
				return m.Name == n.Name && resource.QuantityPtrEqual(m.Quantity, n.Quantity)
			}) &&
			slices.EqualFunc(a.Overhead, b.Overhead, func(m, n corev1.NodeAllocatableOverheadResources) bool {
				return m.Name == n.Name &&
					resource.QuantityPtrEqual(m.PerPod, n.PerPod) &&
					resource.QuantityPtrEqual(m.PerContainer, n.PerContainer)
			})
	})
}

func stringPtrEqual(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// validatePodEviction lets a node evict pods bound to it, as the kubelet
// does under node pressure. The pod is looked up, not taken from the
// request, so that the binding is the stored one.
func (p *Plugin) validatePodEviction(ctx context.Context, nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if a.GetOperation() != admission.Create {
		return forbid(reasonUnsupportedRequest, fmt.Errorf("unexpected operation %s", a.GetOperation()))
	}
	evictionName, err := evictionObjectName(a.GetObject(), o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	// The URL names the pod; the body's name is the fallback.
	podName := a.GetName()
	if podName == "" {
		if evictionName == "" {
			return forbid(reasonUnreadableObject, fmt.Errorf("could not determine pod from request data"))
		}
		podName = evictionName
	}
	pod, err := p.objects.pods.get(ctx, a.GetNamespace(), podName)
	if err != nil {
		return lookupDenial(err)
	}
	if pod.Spec.NodeName != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", nodeName))
	}
	return nil
}

// evictionObjectName returns the name of an Eviction in any version; only
// its metadata is needed, so internal objects are not converted.
func evictionObjectName(obj runtime.Object, o admission.ObjectInterfaces) (string, error) {
	isEviction := isKind(obj, schema.GroupKind{Group: policyv1.GroupName, Kind: "Eviction"}, o, func(obj runtime.Object) bool {
		switch obj.(type) {
		case *policyv1.Eviction, *policyv1beta1.Eviction:
			return true
		}
		return false
	})
	if !isEviction {
		return "", unexpectedType(obj)
	}
	name, err := objectName(obj)
	if err != nil {
		return "", unexpectedType(obj)
	}
	return name, nil
}
