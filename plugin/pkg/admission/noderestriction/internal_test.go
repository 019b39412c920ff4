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
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/internal/admissiontest"
	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
)

// Stand-ins for kube-apiserver's internal types (k8s.io/kubernetes
// pkg/apis/...): Go types the plugin cannot type-assert, registered under
// the internal version, that it must read through the scheme. The pod,
// eviction and lease share k8s.io/api's layout; the node and the token
// request do not: their fields are in another order, with one more, as a
// Kubernetes release may change its internal types. Only the registered
// conversions know how they map to k8s.io/api.
type (
	internalPod      corev1.Pod
	internalEviction policyv1.Eviction
	internalLease    coordinationv1.Lease

	reorderedTaint struct {
		TimeAdded *metav1.Time
		Effect    string
		Value     string
		Key       string
	}
	reorderedNodeSpec struct {
		Unschedulable bool
		Taints        []reorderedTaint
		ProviderHint  string // not in any released version
		ConfigSource  *corev1.NodeConfigSource
		PodCIDR       string
	}
	reorderedNode struct {
		Spec reorderedNodeSpec
		metav1.TypeMeta
		metav1.ObjectMeta
	}

	reorderedBoundObjectReference struct {
		UID        types.UID
		Name       string
		APIVersion string
		Kind       string
	}
	reorderedTokenRequestSpec struct {
		ExpirationSeconds int64
		BoundObjectRef    *reorderedBoundObjectReference
		Audiences         []string
	}
	reorderedTokenRequest struct {
		metav1.TypeMeta
		Spec reorderedTokenRequestSpec
		metav1.ObjectMeta
	}
)

func (p *internalPod) DeepCopyObject() runtime.Object {
	c := internalPod(*(*corev1.Pod)(p).DeepCopy())
	return &c
}

func (e *internalEviction) DeepCopyObject() runtime.Object {
	c := internalEviction(*(*policyv1.Eviction)(e).DeepCopy())
	return &c
}

func (l *internalLease) DeepCopyObject() runtime.Object {
	c := internalLease(*(*coordinationv1.Lease)(l).DeepCopy())
	return &c
}

// The reordered stand-ins are never mutated, so a shallow copy will do.
func (n *reorderedNode) DeepCopyObject() runtime.Object { c := *n; return &c }

func (tr *reorderedTokenRequest) DeepCopyObject() runtime.Object { c := *tr; return &c }

func toReorderedNode(n *corev1.Node) *reorderedNode {
	if n == nil {
		return nil
	}
	//lint:ignore SA1019 the stand-in carries the field the rule judges
	configSource := n.Spec.ConfigSource.DeepCopy()
	r := &reorderedNode{ObjectMeta: *n.ObjectMeta.DeepCopy(), Spec: reorderedNodeSpec{
		Unschedulable: n.Spec.Unschedulable, ConfigSource: configSource, PodCIDR: n.Spec.PodCIDR, ProviderHint: "x",
	}}
	for _, t := range n.Spec.Taints {
		r.Spec.Taints = append(r.Spec.Taints, reorderedTaint{TimeAdded: t.TimeAdded, Effect: string(t.Effect), Value: t.Value, Key: t.Key})
	}
	return r
}

func fromReorderedNode(r *reorderedNode, n *corev1.Node) {
	*n = corev1.Node{ObjectMeta: *r.ObjectMeta.DeepCopy(), Spec: corev1.NodeSpec{Unschedulable: r.Spec.Unschedulable, PodCIDR: r.Spec.PodCIDR}}
	//lint:ignore SA1019 the stand-in carries the field the rule judges
	n.Spec.ConfigSource = r.Spec.ConfigSource.DeepCopy()
	for _, t := range r.Spec.Taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{TimeAdded: t.TimeAdded, Effect: corev1.TaintEffect(t.Effect), Value: t.Value, Key: t.Key})
	}
}

func toReorderedTokenRequest(tr *authenticationv1.TokenRequest) *reorderedTokenRequest {
	if tr == nil {
		return nil
	}
	r := &reorderedTokenRequest{ObjectMeta: *tr.ObjectMeta.DeepCopy(), Spec: reorderedTokenRequestSpec{Audiences: tr.Spec.Audiences}}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		r.Spec.BoundObjectRef = &reorderedBoundObjectReference{UID: ref.UID, Name: ref.Name, APIVersion: ref.APIVersion, Kind: ref.Kind}
	}
	if tr.Spec.ExpirationSeconds != nil {
		r.Spec.ExpirationSeconds = *tr.Spec.ExpirationSeconds
	}
	return r
}

func fromReorderedTokenRequest(r *reorderedTokenRequest, tr *authenticationv1.TokenRequest) {
	*tr = authenticationv1.TokenRequest{ObjectMeta: *r.ObjectMeta.DeepCopy(), Spec: authenticationv1.TokenRequestSpec{
		Audiences: r.Spec.Audiences, ExpirationSeconds: &r.Spec.ExpirationSeconds,
	}}
	if ref := r.Spec.BoundObjectRef; ref != nil {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{UID: ref.UID, Name: ref.Name, APIVersion: ref.APIVersion, Kind: ref.Kind}
	}
}

// internalScheme knows the versioned types and the stand-ins, with
// conversions only from stand-in to versioned, which is all the plugin may
// use. The eviction and the lease have none: their rules read metadata only.
func internalScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := admissiontest.Scheme(t, corev1.AddToScheme, authenticationv1.AddToScheme, policyv1.AddToScheme, coordinationv1.AddToScheme)
	admissiontest.StandIn(t, s, schema.GroupKind{Kind: "Pod"}, &internalPod{},
		func(in *internalPod, out *corev1.Pod) { *out = *(*corev1.Pod)(in).DeepCopy() }, nil)
	admissiontest.StandIn(t, s, schema.GroupKind{Kind: "Node"}, &reorderedNode{}, fromReorderedNode, nil)
	admissiontest.StandIn(t, s, schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}, &reorderedTokenRequest{}, fromReorderedTokenRequest, nil)
	admissiontest.StandIn[*internalEviction, *policyv1.Eviction](t, s, schema.GroupKind{Group: "policy", Kind: "Eviction"}, &internalEviction{}, nil, nil)
	admissiontest.StandIn[*internalLease, *coordinationv1.Lease](t, s, schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}, &internalLease{}, nil, nil)
	return s
}

// asInternal turns a versioned object that has a stand-in into it, keeping
// typed nils typed; anything else is left alone.
func asInternal(obj runtime.Object) (runtime.Object, bool) {
	switch o := obj.(type) {
	case *corev1.Pod:
		if o == nil {
			return (*internalPod)(nil), true
		}
		c := internalPod(*o.DeepCopy())
		return &c, true
	case *corev1.Node:
		return toReorderedNode(o), true
	case *authenticationv1.TokenRequest:
		return toReorderedTokenRequest(o), true
	case *policyv1.Eviction:
		if o == nil {
			return (*internalEviction)(nil), true
		}
		c := internalEviction(*o.DeepCopy())
		return &c, true
	case *coordinationv1.Lease:
		if o == nil {
			return (*internalLease)(nil), true
		}
		c := internalLease(*o.DeepCopy())
		return &c, true
	}
	return obj, false
}

// onInternal is the request with its objects turned into their stand-ins,
// and whether any was.
func onInternal(a admission.Attributes) (admission.Attributes, bool) {
	obj, newChanged := asInternal(a.GetObject())
	old, oldChanged := asInternal(a.GetOldObject())
	if !newChanged && !oldChanged {
		return a, false
	}
	return admission.NewAttributesRecord(obj, old, a.GetKind(), a.GetNamespace(), a.GetName(), a.GetResource(),
		a.GetSubresource(), a.GetOperation(), a.GetOperationOptions(), a.IsDryRun(), a.GetUserInfo()), true
}

// TestInternalObjects replays every case of the table whose objects have a
// stand-in with the stand-ins, through the chain's ObjectInterfaces as
// inside kube-apiserver: each must be decided as on k8s.io/api objects.
// test/bench/noderestriction does the same with kube-apiserver's real
// internal types.
func TestInternalObjects(t *testing.T) {
	objects := admission.NewObjectInterfacesFromScheme(internalScheme(t))
	replayed := 0
	for _, c := range append(noderestrictiontest.Upstream(), noderestrictiontest.Admitkit()...) {
		if strings.Contains(c.Err, "unexpected type") {
			continue // names the versioned type
		}
		internal, ok := onInternal(c.Attrs)
		if !ok {
			continue
		}
		c.Attrs = internal
		runCase(t, c, objects)
		replayed++
	}
	if replayed < 150 {
		t.Errorf("only %d cases replayed on internal objects", replayed)
	}
}

// TestInternalObjectsRefused covers what no conversion can read.
func TestInternalObjectsRefused(t *testing.T) {
	objects := admission.NewObjectInterfacesFromScheme(internalScheme(t))
	pod, _ := asInternal(testPod("ns", "mypod", "mynode"))
	eviction := &internalEviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mypod"}}
	lease := &internalLease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: "mynode"}}
	for _, c := range []noderestrictiontest.Case{
		{Name: "internal pod without object interfaces", Err: "unexpected type *noderestriction.internalPod",
			Attrs: noderestrictiontest.Request(pod, pod, kindPod, gvrPods, "ns", "mypod", "status", admission.Update, noderestrictiontest.UserMyNode)},
		{Name: "internal eviction without object interfaces", Err: "unexpected type *noderestriction.internalEviction",
			Attrs: noderestrictiontest.Request(eviction, nil, kindEviction, gvrPods, "ns", "", "eviction", admission.Create, noderestrictiontest.UserMyNode)},
		{Name: "internal object the scheme cannot convert", Err: "unexpected type *noderestriction.internalLease",
			Attrs: noderestrictiontest.Request(lease, lease, kindNode, gvrNodes, "", "mynode", "", admission.Update, noderestrictiontest.UserMyNode)},
	} {
		var o admission.ObjectInterfaces
		if !strings.Contains(c.Name, "without object interfaces") {
			o = objects
		}
		runCase(t, c, o)
	}
}
