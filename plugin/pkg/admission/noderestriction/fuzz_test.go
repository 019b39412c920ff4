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
	"flag"
	"strings"
	"sync/atomic"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"sigs.k8s.io/randfill"

	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
)

// fuzzTarget is one resource the plugin handles, with a fresh object of a
// type a node might send for it (nil for none).
type fuzzTarget struct {
	gvr    schema.GroupVersionResource
	newObj func() runtime.Object
	subs   []string
}

var fuzzTargets = []fuzzTarget{
	{gvr: gvrPods, newObj: func() runtime.Object { return &corev1.Pod{} }, subs: []string{"", "status", "resize"}},
	{gvr: gvrPods, newObj: func() runtime.Object { return &policyv1.Eviction{} }, subs: []string{"eviction"}},
	{gvr: gvrPods, newObj: func() runtime.Object { return &policyv1beta1.Eviction{} }, subs: []string{"eviction"}},
	{gvr: gvrNodes, newObj: func() runtime.Object { return &corev1.Node{} }, subs: []string{"", "status"}},
	{gvr: gvrPVCs, newObj: func() runtime.Object { return &corev1.PersistentVolumeClaim{} }, subs: []string{"", "status"}},
	{gvr: gvrSAs, newObj: func() runtime.Object { return &authenticationv1.TokenRequest{} }, subs: []string{"token", ""}},
	{gvr: gvrLeases, newObj: func() runtime.Object { return &coordinationv1.Lease{} }, subs: []string{""}},
	{gvr: gvrCSINodes, newObj: func() runtime.Object { return &storagev1.CSINode{} }, subs: []string{"", "status"}},
	{gvr: gvrSlices, newObj: func() runtime.Object { return &resourcev1.ResourceSlice{} }, subs: []string{""}},
	{gvr: gvrSlices, newObj: func() runtime.Object { return &resourcev1beta1.ResourceSlice{} }, subs: []string{""}},
	{gvr: gvrCSRs, newObj: func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} }, subs: []string{""}},
	{gvr: gvrCSRs, newObj: func() runtime.Object { return &certificatesv1beta1.CertificateSigningRequest{} }, subs: []string{""}},
	{gvr: gvrPCRs, newObj: func() runtime.Object { return &certificatesv1beta1.PodCertificateRequest{} }, subs: []string{""}},
	{gvr: gvrPCRs, newObj: func() runtime.Object { return &certificatesv1.PodCertificateRequest{} }, subs: []string{""}},
	// The wrong type for the resource, and no object at all.
	{gvr: gvrNodes, newObj: func() runtime.Object { return &corev1.Pod{} }, subs: []string{""}},
	{gvr: gvrPods, newObj: func() runtime.Object { return nil }, subs: []string{"", "status", "eviction"}},
}

var fuzzNames = []string{"mynode", "othernode", "", "mypod", "otherpod"}

// fuzzPlugin has every gate on and listers holding a pod, a node, a claim
// and a driver for both nodes.
func fuzzPlugin(t testing.TB) *Plugin {
	p := newCasePlugin(t, noderestrictiontest.Case{
		Pods: []*corev1.Pod{testPod("ns", "mypod", "mynode"), testPod("ns", "otherpod", "othernode"),
			mirrorPod("mynode"), mirrorPod("othernode")},
		Nodes:           []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "mynode", UID: "mynode-uid"}}, {ObjectMeta: metav1.ObjectMeta{Name: "othernode", UID: "othernode-uid"}}},
		ServiceAccounts: []*corev1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}}},
		CSIDrivers:      []*storagev1.CSIDriver{{ObjectMeta: metav1.ObjectMeta{Name: "d"}}},
	})
	p.InspectFeatureGates(newGates(t, "", nil))
	p.gates.csiVolumeHealth = true
	p.authz = denyAll{}
	return p
}

// mirrorPod is a mirror pod named after its node.
func mirrorPod(node string) *corev1.Pod {
	pod := testPod("ns", node, node)
	pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "true"}
	return pod
}

// FuzzValidate sends random requests from node mynode. Whatever the
// object, the plugin must not panic, and it must never let the node write
// another node's Node or a pod bound elsewhere. Those checks hold of a
// plugin that refuses everything, so the run must also reach them: some
// of its inputs (seeds and corpus files alike; two of the seeds) allowed.
func FuzzValidate(f *testing.F) {
	const seeds = 10 // the f.Add calls below
	var inputs, allowed atomic.Int64
	f.Cleanup(func() {
		// A fuzzing worker sees a part of the inputs; a -run that picks
		// one input leaves too few to count.
		if fuzzing := flag.Lookup("test.fuzz"); fuzzing != nil && fuzzing.Value.String() != "" {
			return
		}
		f.Logf("%d of %d inputs allowed", allowed.Load(), inputs.Load())
		if inputs.Load() >= seeds && allowed.Load() == 0 {
			f.Errorf("none of %d inputs was allowed: the checks of what is allowed check nothing", inputs.Load())
		}
	})
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), []byte("mirror pod"))
	f.Add(uint8(0), uint8(1), uint8(1), uint8(3), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint8(1), uint8(0), uint8(0), uint8(4), []byte("evict"))
	f.Add(uint8(3), uint8(1), uint8(0), uint8(1), []byte("another node"))
	f.Add(uint8(3), uint8(0), uint8(0), uint8(0), []byte("register"))
	f.Add(uint8(5), uint8(0), uint8(0), uint8(3), []byte("token token token"))
	f.Add(uint8(7), uint8(1), uint8(1), uint8(0), []byte("csinode status"))
	f.Add(uint8(10), uint8(0), uint8(0), uint8(0), []byte("csr"))
	f.Add(uint8(12), uint8(0), uint8(0), uint8(2), []byte("pcr"))
	f.Add(uint8(15), uint8(2), uint8(2), uint8(1), []byte{})

	p := fuzzPlugin(f)
	internalObjects := admission.NewObjectInterfacesFromScheme(internalScheme(f))
	ops := []admission.Operation{admission.Create, admission.Update, admission.Delete, admission.Connect}
	f.Fuzz(func(t *testing.T, targetSel, opSel, subSel, names uint8, data []byte) {
		target := fuzzTargets[int(targetSel)%len(fuzzTargets)]
		op := ops[int(opSel)%len(ops)]
		sub := target.subs[int(subSel)%len(target.subs)]
		name := fuzzNames[int(names)%len(fuzzNames)]

		filler := randfill.NewFromGoFuzz(data).NilChance(0.2).NumElements(0, 2).MaxDepth(6).Funcs(
			func(q *resource.Quantity, c randfill.Continue) {
				*q = *resource.NewQuantity(int64(c.Uint64()%1000), resource.DecimalSI)
			},
		)
		obj, old := target.newObj(), target.newObj()
		if obj != nil {
			filler.Fill(obj)
			filler.Fill(old)
			steer(obj, names)
			steer(old, names>>3)
		}
		attrs := noderestrictiontest.Request(obj, old, schema.GroupVersionKind{}, target.gvr, "ns", name, sub, op, noderestrictiontest.UserMyNode)
		inputs.Add(1)
		err := p.Validate(t.Context(), attrs, nil)
		checkInternalDecides(t, p, attrs, err, internalObjects)
		if err != nil {
			return
		}
		allowed.Add(1)
		switch target.gvr.GroupResource() {
		case nodeResource:
			if name != "mynode" {
				t.Fatalf("allowed %s of node %q (subresource %q)", op, name, sub)
			}
		case podResource:
			checkPodAllowed(t, op, sub, name, obj, old)
		}
	})
}

// checkInternalDecides replays a request whose objects have internal
// stand-ins with the stand-ins, which the rules convert through the
// scheme: the decision must be the versioned one, word for word.
func checkInternalDecides(t *testing.T, p *Plugin, attrs admission.Attributes, versionedErr error, objects admission.ObjectInterfaces) {
	t.Helper()
	internal, ok := onInternal(attrs)
	if !ok {
		return
	}
	internalErr := p.Validate(t.Context(), internal, objects)
	text := func(err error) string {
		if err == nil {
			return "allowed"
		}
		return err.Error()
	}
	if strings.Contains(text(versionedErr), "unexpected type") {
		return // names the versioned type
	}
	if text(internalErr) != text(versionedErr) {
		t.Fatalf("%s %s/%s: internal objects %q, versioned %q", attrs.GetOperation(), attrs.GetResource().Resource, attrs.GetSubresource(), text(internalErr), text(versionedErr))
	}
}

type denyAll struct{}

func (denyAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", nil
}

// checkPodAllowed fails when an allowed pod request touched a pod that is
// not bound to mynode.
func checkPodAllowed(t *testing.T, op admission.Operation, sub, name string, obj, old runtime.Object) {
	boundTo := func(o runtime.Object) string {
		if p, ok := o.(*corev1.Pod); ok && p != nil {
			return p.Spec.NodeName
		}
		return "?"
	}
	switch {
	case sub == "" && op == admission.Create:
		if boundTo(obj) != "mynode" {
			t.Fatalf("allowed creating a pod bound to %q", boundTo(obj))
		}
	case sub == "status":
		if boundTo(old) != "mynode" {
			t.Fatalf("allowed a status update of a pod bound to %q", boundTo(old))
		}
	case sub == "" && op == admission.Delete, sub == "eviction":
		if sub == "eviction" && name == "" {
			name, _ = objectName(obj)
		}
		// The lister holds mypod and mynode on mynode, the rest elsewhere.
		if name != "mypod" && name != "mynode" {
			t.Fatalf("allowed %s %q of pod %q", op, sub, name)
		}
	case sub != "" && sub != "status" && sub != "eviction":
		t.Fatalf("allowed pod subresource %q", sub)
	}
}

// steer sets, from a few bits, the fields the rules key on, so that random
// objects often get past the first checks.
func steer(obj runtime.Object, bits uint8) {
	node := "mynode"
	if bits&1 != 0 {
		node = "othernode"
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Spec.NodeName = node
		if bits&2 != 0 {
			o.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: ""}
			o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: "mynode-uid", Controller: &[]bool{true}[0]}}
		}
	case *corev1.Node:
		o.Name = node
	case *authenticationv1.TokenRequest:
		if bits&2 != 0 {
			o.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "mypod", UID: "pod-uid"}
		}
	case *resourcev1.ResourceSlice:
		o.Spec.NodeName = &node
	case *certificatesv1beta1.PodCertificateRequest:
		o.Spec.NodeName = "mynode"
		o.Spec.NodeUID = "mynode-uid"
	}
}
