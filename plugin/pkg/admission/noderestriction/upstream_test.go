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
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
)

// TestValidateMirrorPodOwner covers the owner reference of a mirror pod (11 cases).
func TestValidateMirrorPodOwner(t *testing.T) {
	sameUID := nodeLister(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode", UID: "mynode-uid"}})
	otherUID := nodeLister(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode", UID: "mynode-unexpected-uid"}})
	noNodes := nodeLister(t)

	good := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "mynode", UID: "mynode-uid", Controller: ptr.To(true)}
	edit := func(f func(*metav1.OwnerReference)) metav1.OwnerReference {
		r := good
		f(&r)
		return r
	}
	const wrongOwner = "can only create pods with an owner reference set to itself"
	const notController = "can only create pods with a controller owner reference set to itself"
	tests := []struct {
		name   string
		owners []metav1.OwnerReference
		err    string
	}{
		{name: "no owner", err: `pods "test" is forbidden: node "mynode" can only create pods with an owner reference set to itself`},
		{name: "my node", owners: []metav1.OwnerReference{good}},
		{name: "my node twice", owners: []metav1.OwnerReference{good, good}, err: "can only create pods with a single owner reference set to itself"},
		{name: "another node's name", owners: []metav1.OwnerReference{edit(func(r *metav1.OwnerReference) { r.Name = "other" })}, err: wrongOwner},
		{name: "a stale UID", owners: []metav1.OwnerReference{good}, err: "UID mismatch"},
		{name: "node not in the informer", owners: []metav1.OwnerReference{good}, err: "not found"},
		{name: "apiVersion v2", owners: []metav1.OwnerReference{edit(func(r *metav1.OwnerReference) { r.APIVersion = "v2" })}, err: wrongOwner},
		{name: "kind Pod", owners: []metav1.OwnerReference{edit(func(r *metav1.OwnerReference) { r.Kind = "Pod" })}, err: wrongOwner},
		{name: "controller unset", owners: []metav1.OwnerReference{edit(func(r *metav1.OwnerReference) { r.Controller = nil })}, err: notController},
		{name: "controller false", owners: []metav1.OwnerReference{edit(func(r *metav1.OwnerReference) { r.Controller = ptr.To(false) })}, err: notController},
		{name: "blockOwnerDeletion", owners: []metav1.OwnerReference{edit(func(r *metav1.OwnerReference) { r.BlockOwnerDeletion = ptr.To(true) })},
			err: "must not set blockOwnerDeletion on an owner reference"},
	}
	for _, tt := range tests {
		nodes := sameUID
		switch tt.name {
		case "a stale UID":
			nodes = otherUID
		case "node not in the informer":
			nodes = noNodes
		}
		pod := testPod("ns", "test", "mynode", true)
		pod.OwnerReferences = tt.owners
		admitCase{
			name:  tt.name,
			pods:  podLister(t),
			nodes: nodes,
			attrs: request(pod, nil, kindPod, gvrPods, pod.Namespace, pod.Name, "", admission.Create, userMyNode),
			err:   tt.err,
		}.run(t)
	}
}

// TestModifiedLabels covers the label difference (10 cases).
func TestModifiedLabels(t *testing.T) {
	tests := []struct {
		name string
		a, b map[string]string
		want sets.Set[string]
	}{
		{name: "both nil", want: sets.New[string]()},
		{name: "same labels", a: map[string]string{"x": "1", "y": "2", "z": "3"}, b: map[string]string{"x": "1", "y": "2", "z": "3"}, want: sets.New[string]()},
		{name: "one added", a: map[string]string{}, b: map[string]string{"a": "0"}, want: sets.New("a")},
		{name: "one removed", a: map[string]string{"z": "3"}, b: map[string]string{}, want: sets.New("z")},
		{name: "one changed", a: map[string]string{"z": "3"}, b: map[string]string{"z": "4"}, want: sets.New("z")},
		{name: "empty value added", a: map[string]string{}, b: map[string]string{"a": ""}, want: sets.New("a")},
		{name: "empty value removed", a: map[string]string{"z": ""}, b: map[string]string{}, want: sets.New("z")},
		{name: "value emptied", a: map[string]string{"z": "3"}, b: map[string]string{"z": ""}, want: sets.New("z")},
		{name: "empty value filled", a: map[string]string{"z": ""}, b: map[string]string{"z": "3"}, want: sets.New("z")},
		{name: "added, removed and changed at once", a: map[string]string{"a": "1", "b": "2"}, b: map[string]string{"a": "2", "c": "3"}, want: sets.New("a", "b", "c")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := modifiedLabels(tt.a, tt.b); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("modifiedLabels() = %v, want %v", sets.List(got), sets.List(tt.want))
			}
		})
	}
}

// testPVC returns a bound claim with allocated size and capacity equal.
func testPVC(condition corev1.PersistentVolumeClaimConditionType, allocated string, resizeStatus *corev1.ClaimResourceStatus) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		Spec: corev1.PersistentVolumeClaimSpec{
			VolumeName: "volume1",
			Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10G")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{
			Phase:              corev1.ClaimBound,
			Capacity:           corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(allocated)},
			AllocatedResources: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(allocated)},
		},
	}
	if resizeStatus != nil {
		pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: *resizeStatus}
	}
	if condition != "" {
		pvc.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: condition, Status: corev1.ConditionTrue}}
	}
	return pvc
}

// TestValidatePVCStatus covers claim status updates (5 cases). Emulating
// 1.33 unlocks RecoverVolumeExpansionFailure so it can be turned off.
func TestValidatePVCStatus(t *testing.T) {
	infeasible := corev1.PersistentVolumeClaimNodeResizeInfeasible
	tests := []struct {
		name        string
		subresource string
		obj, old    *corev1.PersistentVolumeClaim
		recovery    bool
		err         string
	}{
		{name: "update of the whole claim", old: testPVC(corev1.PersistentVolumeClaimResizing, "10G", nil), obj: testPVC("", "10G", nil),
			err: "is forbidden: may only update PVC status"},
		{name: "capacity and conditions", subresource: "status",
			old: testPVC(corev1.PersistentVolumeClaimResizing, "10G", nil), obj: testPVC(corev1.PersistentVolumeClaimFileSystemResizePending, "10G", nil)},
		{name: "allocated resources without recovery", subresource: "status",
			old: testPVC(corev1.PersistentVolumeClaimResizing, "10G", nil), obj: testPVC(corev1.PersistentVolumeClaimFileSystemResizePending, "15G", nil),
			err: "is not allowed to update fields other than"},
		{name: "allocated resources with recovery", subresource: "status", recovery: true,
			old: testPVC(corev1.PersistentVolumeClaimResizing, "10G", nil), obj: testPVC(corev1.PersistentVolumeClaimFileSystemResizePending, "15G", nil)},
		{name: "resize status with recovery", subresource: "status", recovery: true,
			old: testPVC(corev1.PersistentVolumeClaimResizing, "10G", nil), obj: testPVC(corev1.PersistentVolumeClaimResizing, "10G", &infeasible)},
	}
	for _, tt := range tests {
		admitCase{
			name:        tt.name,
			pods:        podLister(t),
			emulation:   "1.33",
			gateChanges: map[featuregate.Feature]bool{RecoverVolumeExpansionFailure: tt.recovery},
			attrs:       request(tt.obj, tt.old, schema.GroupVersionKind{}, gvrPVCs, metav1.NamespaceDefault, "foo", tt.subresource, admission.Update, userMyNode),
			err:         tt.err,
		}.run(t)
	}
}

// TestValidateResourceSlice covers ResourceSlice writes (15 cases), each
// also run with a DynamicResourceAllocation gate switched as upstream
// does, to show that the gate changes nothing.
func TestValidateResourceSlice(t *testing.T) {
	slice := func(node *string) *resourcev1.ResourceSlice {
		return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "something"}, Spec: resourcev1.ResourceSliceSpec{NodeName: node}}
	}
	mine, other, none := slice(ptr.To("mynode")), slice(ptr.To("mynode-other")), slice(nil)
	const createErr = "can only create ResourceSlice with the same NodeName as the requesting node"
	const deleteErr = "can only delete ResourceSlice with the same NodeName as the requesting node"
	tests := []struct {
		name     string
		op       admission.Operation
		obj, old *resourcev1.ResourceSlice
		dra      bool
		err      string
	}{
		{name: "create for my node, DRA on", op: admission.Create, obj: mine, dra: true},
		{name: "create for another node, DRA on", op: admission.Create, obj: other, dra: true, err: createErr},
		{name: "create without node, DRA on", op: admission.Create, obj: none, dra: true, err: createErr},
		{name: "create for my node, DRA off", op: admission.Create, obj: mine},
		{name: "create for another node, DRA off", op: admission.Create, obj: other, err: createErr},
		{name: "create without node, DRA off", op: admission.Create, obj: none, err: createErr},
		{name: "update for my node", op: admission.Update, obj: mine, dra: true},
		{name: "update for another node", op: admission.Update, obj: other, dra: true},
		{name: "update without node", op: admission.Update, obj: none, dra: true},
		{name: "delete my node's, DRA on", op: admission.Delete, old: mine, dra: true},
		{name: "delete another node's, DRA on", op: admission.Delete, old: other, dra: true, err: deleteErr},
		{name: "delete one without node, DRA on", op: admission.Delete, old: none, dra: true, err: deleteErr},
		{name: "delete my node's, DRA off", op: admission.Delete, old: mine},
		{name: "delete another node's, DRA off", op: admission.Delete, old: other, err: deleteErr},
		{name: "delete one without node, DRA off", op: admission.Delete, old: none, err: deleteErr},
	}
	for _, tt := range tests {
		var obj, old runtime.Object
		if tt.obj != nil {
			obj = tt.obj
		}
		if tt.old != nil {
			old = tt.old
		}
		t.Run(tt.name, func(t *testing.T) {
			gates := newGates(t, "", nil)
			if err := gates.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
				"DynamicResourceAllocation": {{Version: version.MustParse("1.30"), Default: false, PreRelease: featuregate.Beta}},
			}); err != nil {
				t.Fatal(err)
			}
			if err := gates.SetFromMap(map[string]bool{"DynamicResourceAllocation": tt.dra}); err != nil {
				t.Fatal(err)
			}
			c := admitCase{name: "request", err: tt.err,
				attrs: request(obj, old, schema.GroupVersionKind{}, gvrSlices, "", "foo", "", tt.op, userMyNode)}
			p := c.plugin(t)
			p.InspectFeatureGates(gates)
			err := p.Validate(t.Context(), c.attrs, nil)
			checkErr(t, err, tt.err)
		})
	}
}
