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

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// validateLease lets a node write only its own heartbeat Lease, in the
// namespace reserved for them.
func (p *Plugin) validateLease(nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if a.GetNamespace() != corev1.NamespaceNodeLease {
		return forbid(reasonOtherNodeObject, fmt.Errorf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease))
	}
	name := a.GetName()
	if a.GetOperation() == admission.Create {
		// The request name is not reliable on create; the object's is, and
		// reading it needs only the metadata.
		if !isKind(a.GetObject(), schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}, o, isVersionedLease) {
			return forbid(reasonUnreadableObject, unexpectedType(a.GetObject()))
		}
		n, err := objectName(a.GetObject())
		if err != nil {
			return forbid(reasonUnreadableObject, unexpectedType(a.GetObject()))
		}
		name = n
	}
	if name != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("can only access node lease with the same name as the requesting node"))
	}
	return nil
}

func isVersionedLease(obj runtime.Object) bool {
	switch obj.(type) {
	case *coordinationv1.Lease, *coordinationv1beta1.Lease:
		return true
	}
	return false
}
