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
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
)

// Stand-ins for kube-apiserver's internal types (k8s.io/kubernetes
// pkg/apis/...): distinct Go types, registered under the internal version,
// that the plugin cannot type-assert and must convert through the scheme.
// Defining them on the k8s.io/api structs keeps the conversions trivial
// while the types stay foreign to the plugin.
type (
	internalPod      corev1.Pod
	internalNode     corev1.Node
	internalEviction policyv1.Eviction
	internalLease    coordinationv1.Lease
)

func (p *internalPod) DeepCopyObject() runtime.Object {
	c := internalPod(*(*corev1.Pod)(p).DeepCopy())
	return &c
}

func (n *internalNode) DeepCopyObject() runtime.Object {
	c := internalNode(*(*corev1.Node)(n).DeepCopy())
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

// internalScheme knows the versioned types and the internal stand-ins,
// with conversions only from internal to versioned, which is all the
// plugin may use.
func internalScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, policyv1.AddToScheme, coordinationv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	internal := func(group, kind string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: group, Version: runtime.APIVersionInternal, Kind: kind}
	}
	s.AddKnownTypeWithName(internal("", "Pod"), &internalPod{})
	s.AddKnownTypeWithName(internal("", "Node"), &internalNode{})
	s.AddKnownTypeWithName(internal("policy", "Eviction"), &internalEviction{})
	s.AddKnownTypeWithName(internal("coordination.k8s.io", "Lease"), &internalLease{})
	for _, err := range []error{
		s.AddConversionFunc((*internalPod)(nil), (*corev1.Pod)(nil), func(a, b any, _ conversion.Scope) error {
			*b.(*corev1.Pod) = *(*corev1.Pod)(a.(*internalPod)).DeepCopy()
			return nil
		}),
		s.AddConversionFunc((*internalNode)(nil), (*corev1.Node)(nil), func(a, b any, _ conversion.Scope) error {
			*b.(*corev1.Node) = *(*corev1.Node)(a.(*internalNode)).DeepCopy()
			return nil
		}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestInternalObjects runs requests with internal objects through
// admission's ObjectInterfaces, as inside kube-apiserver.
func TestInternalObjects(t *testing.T) {
	objects := admission.NewObjectInterfacesFromScheme(internalScheme(t))
	mine := testPod("ns", "mypod", "mynode", false)
	others := testPod("ns", "otherpod", "othernode", false)
	pods := podLister(t, mine, others)
	asInternal := func(p *corev1.Pod) *internalPod { c := internalPod(*p.DeepCopy()); return &c }

	mirror := testPod("ns", "m", "mynode", true)
	mirrorWithSecret := mirror.DeepCopy()
	mirrorWithSecret.Spec.Volumes = []corev1.Volume{{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
	node := &internalNode{ObjectMeta: metav1.ObjectMeta{Name: "mynode"}}
	tainted := &internalNode{ObjectMeta: metav1.ObjectMeta{Name: "mynode"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}}}
	labelled := &internalNode{ObjectMeta: metav1.ObjectMeta{Name: "mynode", Labels: map[string]string{"node-role.kubernetes.io/x": ""}}}
	eviction := func(name string) *internalEviction {
		return &internalEviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	lease := func(name string) *internalLease {
		return &internalLease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name}}
	}

	runCases(t, []admitCase{
		{name: "internal mirror pod", objects: objects, pods: pods,
			attrs: request(asInternal(mirror), nil, kindPod, gvrPods, "ns", "m", "", admission.Create, userMyNode)},
		{name: "internal mirror pod with a secret", objects: objects, pods: pods, err: "can not create pods that reference secrets",
			attrs: request(asInternal(mirrorWithSecret), nil, kindPod, gvrPods, "ns", "m", "", admission.Create, userMyNode)},
		{name: "internal pod status update", objects: objects, pods: pods,
			attrs: request(asInternal(mine), asInternal(mine), kindPod, gvrPods, "ns", "mypod", "status", admission.Update, userMyNode)},
		{name: "internal pod status update with a label", objects: objects, pods: pods, err: "cannot update labels through pod status",
			attrs: request(asInternal(relabeled(mine, map[string]string{"a": "b"})), asInternal(mine), kindPod, gvrPods, "ns", "mypod", "status", admission.Update, userMyNode)},
		{name: "internal pod status of another node's pod", objects: objects, pods: pods, err: "can only update pod status for pods with spec.nodeName set to itself",
			attrs: request(asInternal(others), asInternal(others), kindPod, gvrPods, "ns", "otherpod", "status", admission.Update, userMyNode)},
		{name: "internal node update", objects: objects,
			attrs: request(node, node, kindNode, gvrNodes, "", "mynode", "", admission.Update, userMyNode)},
		{name: "internal node adding a taint", objects: objects, err: "is not allowed to modify taints",
			attrs: request(tainted, node, kindNode, gvrNodes, "", "mynode", "", admission.Update, userMyNode)},
		{name: "internal node registering with a forbidden label", objects: objects, err: "is not allowed to set the following labels: node-role.kubernetes.io/x",
			attrs: request(labelled, nil, kindNode, gvrNodes, "", "mynode", "", admission.Create, userMyNode)},
		{name: "internal eviction of my pod", objects: objects, pods: pods,
			attrs: request(eviction("mypod"), nil, kindEviction, gvrPods, "ns", "", "eviction", admission.Create, userMyNode)},
		{name: "internal eviction of another node's pod", objects: objects, pods: pods, err: "can only evict pods with spec.nodeName set to itself",
			attrs: request(eviction("otherpod"), nil, kindEviction, gvrPods, "ns", "", "eviction", admission.Create, userMyNode)},
		{name: "internal lease of my node", objects: objects,
			attrs: request(lease("mynode"), nil, schema.GroupVersionKind{}, gvrLeases, corev1.NamespaceNodeLease, "", "", admission.Create, userMyNode)},
		{name: "internal lease of another node", objects: objects, err: "can only access node lease with the same name as the requesting node",
			attrs: request(lease("othernode"), nil, schema.GroupVersionKind{}, gvrLeases, corev1.NamespaceNodeLease, "", "", admission.Create, userMyNode)},
		{name: "internal pod without object interfaces", pods: pods, err: "unexpected type *noderestriction.internalPod",
			attrs: request(asInternal(mine), asInternal(mine), kindPod, gvrPods, "ns", "mypod", "status", admission.Update, userMyNode)},
		{name: "internal eviction without object interfaces", pods: pods, err: "unexpected type *noderestriction.internalEviction",
			attrs: request(eviction("mypod"), nil, kindEviction, gvrPods, "ns", "", "eviction", admission.Create, userMyNode)},
		{name: "internal object the scheme cannot convert", objects: objects, err: "unexpected type *noderestriction.internalLease",
			attrs: request(lease("mynode"), lease("mynode"), kindNode, gvrNodes, "", "mynode", "", admission.Update, userMyNode)},
	})
}

// Stand-ins written out field by field, in another order than k8s.io/api's,
// with the internal types' field names: reading them proves the layout
// reader goes by name, not by the versioned layout.
type (
	reorderedTaint struct {
		TimeAdded *metav1.Time
		Effect    reorderedTaintEffect
		Value     string
		Key       string
	}
	reorderedTaintEffect string
	reorderedNodeSpec    struct {
		Unschedulable bool
		Taints        []reorderedTaint
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

// DeepCopyObject copies what the plugin reads; the stand-ins are never
// mutated, so sharing the rest is harmless.
func (n *reorderedNode) DeepCopyObject() runtime.Object { c := *n; return &c }

func (tr *reorderedTokenRequest) DeepCopyObject() runtime.Object { c := *tr; return &c }

func toReorderedNode(n *corev1.Node) *reorderedNode {
	if n == nil {
		return nil
	}
	r := &reorderedNode{ObjectMeta: *n.ObjectMeta.DeepCopy(), Spec: reorderedNodeSpec{
		Unschedulable: n.Spec.Unschedulable, ConfigSource: n.Spec.ConfigSource.DeepCopy(), PodCIDR: n.Spec.PodCIDR,
	}}
	for _, t := range n.Spec.Taints {
		r.Spec.Taints = append(r.Spec.Taints, reorderedTaint{TimeAdded: t.TimeAdded, Effect: reorderedTaintEffect(t.Effect), Value: t.Value, Key: t.Key})
	}
	return r
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

// readerScheme registers the stand-ins the layout reader serves, and no
// conversions: a rule that still converted them would fail.
func readerScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, authenticationv1.AddToScheme, policyv1.AddToScheme, coordinationv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	s.AddKnownTypeWithName(schema.GroupVersionKind{Version: runtime.APIVersionInternal, Kind: "Pod"}, &internalPod{})
	s.AddKnownTypeWithName(schema.GroupVersionKind{Version: runtime.APIVersionInternal, Kind: "Node"}, &reorderedNode{})
	s.AddKnownTypeWithName(schema.GroupVersionKind{Group: "authentication.k8s.io", Version: runtime.APIVersionInternal, Kind: "TokenRequest"}, &reorderedTokenRequest{})
	return s
}

// asReaderInternal turns a versioned pod, node or token request into its
// stand-in, keeping typed nils typed; anything else is left alone.
func asReaderInternal(obj runtime.Object) (runtime.Object, bool) {
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
	}
	return obj, false
}

// onReaderInternal is the request with its objects turned into their
// stand-ins, and whether any was.
func onReaderInternal(a admission.Attributes) (admission.Attributes, bool) {
	obj, newChanged := asReaderInternal(a.GetObject())
	old, oldChanged := asReaderInternal(a.GetOldObject())
	if !newChanged && !oldChanged {
		return a, false
	}
	return admission.NewAttributesRecord(obj, old, a.GetKind(), a.GetNamespace(), a.GetName(), a.GetResource(),
		a.GetSubresource(), a.GetOperation(), a.GetOperationOptions(), a.IsDryRun(), a.GetUserInfo()), true
}

// TestInternalMatchesVersioned replays every pod, node and token request
// case of the versioned suites on internal stand-ins: each rule read through
// the layout reader must decide exactly as on k8s.io/api objects.
func TestInternalMatchesVersioned(t *testing.T) {
	replayed := 0
	for _, group := range []struct {
		name  string
		cases []admitCase
	}{{"pods", podCases(t)}, {"nodes", nodeCases(t)}, {"tokens", tokenCases(t)}} {
		t.Run(group.name, func(t *testing.T) { replayed += replayOnInternal(t, group.cases) })
	}
	if replayed < 90 {
		t.Errorf("only %d cases replayed on internal objects", replayed)
	}
}

// replayOnInternal runs the cases whose objects have a stand-in with the
// stand-ins instead, and says how many it ran.
func replayOnInternal(t *testing.T, cases []admitCase) int {
	t.Helper()
	objects := admission.NewObjectInterfacesFromScheme(readerScheme(t))
	replayed := 0
	for _, c := range cases {
		if strings.Contains(c.err, "unexpected type") {
			continue // names the versioned type
		}
		internal, ok := onReaderInternal(c.attrs)
		if !ok {
			continue
		}
		c.attrs = internal
		c.objects = objects
		c.run(t)
		replayed++
	}
	return replayed
}
