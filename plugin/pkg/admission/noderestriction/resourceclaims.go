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
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/internal/versioned"
)

var resourceClaimGVK = resourcev1.SchemeGroupVersion.WithKind("ResourceClaim")

// validateResourceClaimStatus lets a requester held to node nodeName
// update the status of a ResourceClaim (the device conditions and data a
// node-local DRA driver reports) only while the claim is allocated on that
// node, before and after the update. Kubernetes 1.37 authorizes such
// writes per driver (resourceclaims/driver, with the associated-node: and
// arbitrary-node: verbs), but a role granting arbitrary-node reaches every
// node's claims; and the allocation and reservedFor need
// resourceclaims/binding, which no daemon should hold.
func validateResourceClaimStatus(nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if a.GetOperation() != admission.Update {
		return forbid(reasonUnsupportedRequest, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	for _, obj := range []runtime.Object{a.GetOldObject(), a.GetObject()} {
		claimNode, err := claimAllocationNode(obj, o)
		if err != nil {
			return forbid(reasonUnreadableObject, err)
		}
		if claimNode != nodeName {
			return forbid(reasonOtherNodeObject, fmt.Errorf("can only update the status of ResourceClaims allocated on its node (status.allocation.nodeSelector selecting metadata.name %q alone), not %s", nodeName, describeClaimNode(claimNode)))
		}
	}
	return nil
}

func describeClaimNode(claimNode string) string {
	if claimNode == "" {
		return "of a claim allocated on no single named node"
	}
	return fmt.Sprintf("of a claim allocated on node %q", claimNode)
}

// claimAllocationNode returns the node a ResourceClaim in any served
// version is allocated on, "" when it is not allocated or its allocation
// does not name a single node.
func claimAllocationNode(obj runtime.Object, o admission.ObjectInterfaces) (string, error) {
	if versioned.IsNil(obj) {
		return "", unexpectedType(obj)
	}
	if selector, ok := versionedClaimNodeSelector(obj); ok {
		return singleNodeName(selector), nil
	}
	status, _, err := readPart(obj, resourceClaimGVK, o, "Status", func(c *resourcev1.ResourceClaim) *resourcev1.ResourceClaimStatus { return &c.Status })
	if err != nil {
		return "", err
	}
	if status.Allocation == nil {
		return "", nil
	}
	return singleNodeName(status.Allocation.NodeSelector), nil
}

// versionedClaimNodeSelector reads status.allocation.nodeSelector of a
// claim of a served version; ok is false for any other type.
func versionedClaimNodeSelector(obj runtime.Object) (selector *corev1.NodeSelector, ok bool) {
	switch c := obj.(type) {
	case *resourcev1.ResourceClaim:
		if c.Status.Allocation != nil {
			selector = c.Status.Allocation.NodeSelector
		}
	case *resourcev1beta2.ResourceClaim:
		if c.Status.Allocation != nil {
			selector = c.Status.Allocation.NodeSelector
		}
	case *resourcev1beta1.ResourceClaim:
		if c.Status.Allocation != nil {
			selector = c.Status.Allocation.NodeSelector
		}
	default:
		return nil, false
	}
	return selector, true
}

// singleNodeName is the node a selector picks by name and nothing else:
// one term, matching metadata.name In exactly one value, which is how the
// scheduler writes the allocation of devices local to a node. Any other
// selector (devices reachable from many nodes, or chosen by label) names
// no single node.
func singleNodeName(s *corev1.NodeSelector) string {
	if s == nil || len(s.NodeSelectorTerms) != 1 {
		return ""
	}
	term := s.NodeSelectorTerms[0]
	if len(term.MatchExpressions) != 0 || len(term.MatchFields) != 1 {
		return ""
	}
	f := term.MatchFields[0]
	if f.Key != "metadata.name" || f.Operator != corev1.NodeSelectorOpIn || len(f.Values) != 1 {
		return ""
	}
	return f.Values[0]
}
