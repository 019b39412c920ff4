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
	"reflect"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/internal/versioned"
)

var (
	pvcGVK     = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
	csiNodeGVK = storagev1.SchemeGroupVersion.WithKind("CSINode")
)

// validatePVCStatus lets a node report a volume expansion on a PVC's
// status (capacity and conditions, and with expansion recovery the
// allocated resources), nothing else: the rest of the claim, labels and
// finalizers included, is the user's and the controllers'.
func (p *Plugin) validatePVCStatus(nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if a.GetOperation() != admission.Update {
		return forbid(reasonUnsupportedRequest, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	oldPVC, err := asVersioned[corev1.PersistentVolumeClaim](a.GetOldObject(), pvcGVK, o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	newPVC, err := asVersioned[corev1.PersistentVolumeClaim](a.GetObject(), pvcGVK, o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	oldPVC = p.pvcWithoutNodeFields(oldPVC)
	newPVC = p.pvcWithoutNodeFields(newPVC)
	if !apiequality.Semantic.DeepEqual(oldPVC, newPVC) {
		return forbid(reasonForbiddenField, fmt.Errorf("node %q is not allowed to update fields other than status.quantity and status.conditions: %v", nodeName, pvcDiff(oldPVC, newPVC, a.GetObject(), o)))
	}
	return nil
}

// pvcDiff shows the difference in the types of the request's objects, as
// Kubernetes does: inside kube-apiserver those are internal claims, whose
// printed form (field names, order) differs from v1's.
func pvcDiff(oldPVC, newPVC *corev1.PersistentVolumeClaim, original runtime.Object, o admission.ObjectInterfaces) string {
	if _, ok := original.(*corev1.PersistentVolumeClaim); ok || versioned.IsNil(original) || o == nil || reflect.TypeOf(original).Kind() != reflect.Pointer {
		return diff.Diff(oldPVC, newPVC)
	}
	oldOut := reflect.New(reflect.TypeOf(original).Elem()).Interface().(runtime.Object)
	newOut := reflect.New(reflect.TypeOf(original).Elem()).Interface().(runtime.Object)
	if versioned.Back(oldPVC, oldOut, o) != nil || versioned.Back(newPVC, newOut, o) != nil {
		return diff.Diff(oldPVC, newPVC)
	}
	return diff.Diff(oldOut, newOut)
}

// pvcWithoutNodeFields returns a copy without the fields a node may write,
// and without resourceVersion (an unconditional update leaves it empty) and
// managedFields (which follow whatever changed).
func (p *Plugin) pvcWithoutNodeFields(pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	c := pvc.DeepCopy()
	c.ResourceVersion = ""
	c.ManagedFields = nil
	c.Status.Capacity = nil
	c.Status.Conditions = nil
	if p.gates.expansionRecovery {
		c.Status.AllocatedResources = nil
		c.Status.AllocatedResourceStatuses = nil
	}
	return c
}

// validateCSINode lets a node write only its own CSINode, and with
// CSIVolumeHealth report storage health through csinodes/status without
// changing the driver list that the spec holds.
func (p *Plugin) validateCSINode(nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	name := a.GetName()
	if a.GetOperation() == admission.Create {
		// The request name is not reliable on create; the object's is.
		n, err := objectName(a.GetObject())
		if err != nil {
			return forbid(reasonUnreadableObject, fmt.Errorf("unable to access the object name"))
		}
		name = n
	}
	if name != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("can only access CSINode with the same name as the requesting node"))
	}
	if a.GetSubresource() != "status" {
		return nil
	}
	if !p.gates.csiVolumeHealth {
		return forbid(reasonFeatureDisabled, fmt.Errorf("CSIVolumeHealth feature gate is disabled"))
	}
	if a.GetOperation() != admission.Update {
		return forbid(reasonUnsupportedRequest, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	oldSpec, err := csiNodeSpec(a.GetOldObject(), o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	newSpec, err := csiNodeSpec(a.GetObject(), o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	if !apiequality.Semantic.DeepEqual(oldSpec, newSpec) {
		return forbid(reasonForbiddenField, fmt.Errorf("node %q is not allowed to modify CSINode spec via status", nodeName))
	}
	return nil
}

// csiNodeSpec returns a CSINode's spec in storage/v1 form, the only
// version csinodes are served in.
func csiNodeSpec(obj runtime.Object, o admission.ObjectInterfaces) (*storagev1.CSINodeSpec, error) {
	n, err := asVersioned[storagev1.CSINode](obj, csiNodeGVK, o)
	if err != nil {
		return nil, err
	}
	return &n.Spec, nil
}
