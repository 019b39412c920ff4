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

package noderestrictiontest

import (
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/utils/ptr"
)

// Kubernetes' names of the feature gates the cases switch.
const (
	gateAudienceRestriction   = "ServiceAccountNodeAudienceRestriction"
	gatePodCertificateRequest = "PodCertificateRequest"
	gateCSIVolumeHealth       = "CSIVolumeHealth"
	gateInsecureKubeletCSRs   = "AllowInsecureKubeletCertificateSigningRequests"
	gateExpansionRecovery     = "RecoverVolumeExpansionFailure"
	gateDRA                   = "DynamicResourceAllocation"
)

// UpstreamCount is the number of cases in Kubernetes 1.37's tests of its
// NodeRestriction plugin.
const UpstreamCount = 229

// Upstream reproduces Kubernetes 1.37's tests of NodeRestriction as
// requests on k8s.io/api objects. Test_nodePlugin_Admit's 188 cases come
// in its groups, with their counts:
//
//	mirror pods bound to us 10, bound to another node 10, unbound 10;
//	normal pods bound to us 13, bound to another node 10, unbound 10;
//	missing pod 5; eviction for an unnamed pod 4; pods referencing objects 9;
//	my Node object 29; another Node object 5; service account tokens 5;
//	token audience restriction 21; unrelated objects 3; unrelated user 6;
//	node leases 9; CSINodes 10; CSRs 6; PodCertificateRequests 13.
//
// Then come the mirror-pod owner references (11), the label differences
// (10, as Node updates whose error lists the changed keys), PVC status (5)
// and ResourceSlices (15).
func Upstream() []Case {
	var cases []Case
	for _, group := range [][]Case{podCases(), nodeCases(), tokenCases(), otherCases(), podCertificateCases(),
		ownerReferenceCases(), modifiedLabelCases(), pvcStatusCases(), resourceSliceCases()} {
		cases = append(cases, group...)
	}
	return cases
}

const (
	errUnexpectedOp = "forbidden: unexpected operation"
	errOwnBinding   = "spec.nodeName set to itself"
	errMirrorOnly   = "can only create mirror pods"
)

// podMatrix is the ten requests upstream makes about one pod: create,
// update and delete of the pod, of its status, and of an eviction, plus an
// eviction whose body has no name. want holds the expected errors in that
// order.
func podMatrix(what string, pod *corev1.Pod, existing, missing []*corev1.Pod, want [10]string) []Case {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: pod.Name}}
	unnamed := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}
	ns, name := pod.Namespace, pod.Name
	return []Case{
		{Name: "create " + what, Pods: missing, Err: want[0], Attrs: Request(pod, nil, kindPod, gvrPods, ns, name, "", admission.Create, UserMyNode)},
		{Name: "update " + what, Pods: existing, Err: want[1], Attrs: Request(pod, pod, kindPod, gvrPods, ns, name, "", admission.Update, UserMyNode)},
		{Name: "delete " + what, Pods: existing, Err: want[2], Attrs: Request(nil, nil, kindPod, gvrPods, ns, name, "", admission.Delete, UserMyNode)},
		{Name: "create status of " + what, Pods: missing, Err: want[3], Attrs: Request(pod, nil, kindPod, gvrPods, ns, name, "status", admission.Create, UserMyNode)},
		{Name: "update status of " + what, Pods: existing, Err: want[4], Attrs: Request(pod, pod, kindPod, gvrPods, ns, name, "status", admission.Update, UserMyNode)},
		{Name: "delete status of " + what, Pods: existing, Err: want[5], Attrs: Request(nil, nil, kindPod, gvrPods, ns, name, "status", admission.Delete, UserMyNode)},
		{Name: "create eviction of " + what, Pods: existing, Err: want[6], Attrs: Request(ev, nil, kindEviction, gvrPods, ns, name, "eviction", admission.Create, UserMyNode)},
		{Name: "update eviction of " + what, Pods: existing, Err: want[7], Attrs: Request(ev, nil, kindEviction, gvrPods, ns, name, "eviction", admission.Update, UserMyNode)},
		{Name: "delete eviction of " + what, Pods: existing, Err: want[8], Attrs: Request(ev, nil, kindEviction, gvrPods, ns, name, "eviction", admission.Delete, UserMyNode)},
		{Name: "create unnamed eviction of " + what, Pods: existing, Err: want[9], Attrs: Request(unnamed, nil, kindEviction, gvrPods, ns, name, "eviction", admission.Create, UserMyNode)},
	}
}

func podCases() []Case {
	var (
		myMirror      = newPod("ns", "mymirrorpod", "mynode", true)
		otherMirror   = newPod("ns", "othermirrorpod", "othernode", true)
		unboundMirror = newPod("ns", "unboundmirrorpod", "", true)
		mine          = newPod("ns", "mypod", "mynode", false)
		others        = newPod("ns", "otherpod", "othernode", false)
		unbound       = newPod("ns", "unboundpod", "", false)
		unnamedPod    = newPod("ns", "", "mynode", false)

		existing = podList(myMirror, otherMirror, unboundMirror, mine, others, unbound)
		missing  = []*corev1.Pod{}

		labelA  = relabeled(mine, map[string]string{"label-a": "value-a"})
		labelAB = relabeled(mine, map[string]string{"label-a": "value-a", "label-b": "value-b"})

		mineEviction    = &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mypod"}}
		unnamedEviction = &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}
	)

	// The same ten requests for a pod on another node and for an unbound pod.
	notMine := [10]string{errOwnBinding, errUnexpectedOp, errOwnBinding, errUnexpectedOp, errOwnBinding, errUnexpectedOp, errOwnBinding, errUnexpectedOp, errUnexpectedOp, errOwnBinding}
	normalNotMine := notMine
	normalNotMine[0] = errMirrorOnly

	var cases []Case
	cases = append(cases, podMatrix("mirror pod bound to me", myMirror, existing, missing,
		[10]string{"", errUnexpectedOp, "", errUnexpectedOp, "", errUnexpectedOp, "", errUnexpectedOp, errUnexpectedOp, ""})...)
	cases = append(cases, podMatrix("mirror pod bound to another node", otherMirror, existing, missing, notMine)...)
	cases = append(cases, podMatrix("unbound mirror pod", unboundMirror, existing, missing, notMine)...)

	// Normal pods bound to me: the matrix without the named eviction (it
	// is in the unnamed-pod group), plus label changes through status.
	status := func(name string, pod, old *corev1.Pod) Case {
		return Case{Name: name, Pods: existing, Err: "cannot update labels through pod status",
			Attrs: Request(pod, old, kindPod, gvrPods, "ns", "mypod", "status", admission.Update, UserMyNode)}
	}
	mineMatrix := podMatrix("normal pod bound to me", mine, existing, missing,
		[10]string{errMirrorOnly, errUnexpectedOp, "", errUnexpectedOp, "", errUnexpectedOp, "", errUnexpectedOp, errUnexpectedOp, ""})
	cases = append(cases, mineMatrix[:6]...)
	cases = append(cases,
		status("status update adding a label to labelled pod", labelAB, labelA),
		status("status update removing a label", labelA, labelAB),
		status("status update removing every label", labelA, mine),
		status("status update adding labels to unlabelled pod", mine, labelA),
	)
	cases = append(cases, mineMatrix[7:]...)

	cases = append(cases, podMatrix("normal pod bound to another node", others, existing, missing, normalNotMine)...)
	cases = append(cases, podMatrix("unbound normal pod", unbound, existing, missing, normalNotMine)...)

	// A pod the informer does not know.
	cases = append(cases,
		Case{Name: "delete unknown pod", Pods: missing, Err: "not found",
			Attrs: Request(nil, nil, kindPod, gvrPods, "ns", "unboundpod", "", admission.Delete, UserMyNode)},
		Case{Name: "evict unknown pod", Pods: missing, Err: "not found",
			Attrs: Request(mineEviction, nil, kindEviction, gvrPods, "ns", "mypod", "eviction", admission.Create, UserMyNode)},
		Case{Name: "update eviction of unknown pod", Pods: missing, Err: errUnexpectedOp,
			Attrs: Request(mineEviction, nil, kindEviction, gvrPods, "ns", "mypod", "eviction", admission.Update, UserMyNode)},
		Case{Name: "delete eviction of unknown pod", Pods: missing, Err: errUnexpectedOp,
			Attrs: Request(mineEviction, nil, kindEviction, gvrPods, "ns", "mypod", "eviction", admission.Delete, UserMyNode)},
		Case{Name: "unnamed eviction of unknown pod", Pods: missing, Err: "not found",
			Attrs: Request(unnamedEviction, nil, kindEviction, gvrPods, "ns", "mypod", "eviction", admission.Create, UserMyNode)},
	)

	// The request names no pod: the eviction body's name is used.
	cases = append(cases,
		Case{Name: "eviction naming the pod when the request does not", Pods: existing,
			Attrs: Request(mineEviction, nil, kindEviction, gvrPods, "ns", unnamedPod.Name, "eviction", admission.Create, UserMyNode)},
		Case{Name: "update eviction without request name", Pods: existing, Err: errUnexpectedOp,
			Attrs: Request(mineEviction, nil, kindEviction, gvrPods, "ns", unnamedPod.Name, "eviction", admission.Update, UserMyNode)},
		Case{Name: "delete eviction without request name", Pods: existing, Err: errUnexpectedOp,
			Attrs: Request(mineEviction, nil, kindEviction, gvrPods, "ns", unnamedPod.Name, "eviction", admission.Delete, UserMyNode)},
		Case{Name: "eviction with no pod name anywhere", Pods: existing, Err: "could not determine pod from request data",
			Attrs: Request(unnamedEviction, nil, kindEviction, gvrPods, "ns", unnamedPod.Name, "eviction", admission.Create, UserMyNode)},
	)

	// Mirror pods that reference API objects, and status updates that
	// touch resource claim records.
	withSpec := func(name string, edit func(*corev1.Pod)) *corev1.Pod {
		p := newPod("ns", name, "mynode", true)
		edit(p)
		return p
	}
	saPod := withSpec("mysapod", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "foo" })
	secretPod := withSpec("mysecretpod", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "foo"}}}}
	})
	configMapPod := withSpec("myconfigmappod", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "foo"}}}}}
	})
	bundlePod := withSpec("myctbpod", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("foo")}}}}}}}
	})
	pvcPod := withSpec("mypvcpod", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "foo"}}}}
	})
	claimPod := withSpec("myclaimpod", func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "myclaim", ResourceClaimName: ptr.To("myexternalclaim")}}
	})
	extendedClaimPod := withSpec("myclaimpod", func(p *corev1.Pod) {
		p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "myclaim"}
	})
	allocatablePod := withSpec("myclaimpod", func(p *corev1.Pod) {
		p.Status.NodeAllocatableResourceClaimStatuses = []corev1.NodeAllocatableResourceClaimStatus{{
			ResourceClaimName: "myclaim",
			Containers:        []string{"mycontainer"},
			Mapping:           []corev1.NodeAllocatableMappedResources{{Name: corev1.ResourceCPU, Quantity: new(resource.MustParse("1"))}},
		}}
	})
	overheadPod := withSpec("myclaimpod", func(p *corev1.Pod) {
		p.Status.NodeAllocatableResourceClaimStatuses = []corev1.NodeAllocatableResourceClaimStatus{{
			ResourceClaimName: "myclaim",
			Containers:        []string{"mycontainer"},
			Overhead: []corev1.NodeAllocatableOverheadResources{{
				Name:         corev1.ResourceMemory,
				PerPod:       new(resource.MustParse("1Gi")),
				PerContainer: new(resource.MustParse("500Mi")),
			}},
		}}
	})
	create := func(name string, pod *corev1.Pod, err string) Case {
		return Case{Name: name, Pods: missing, Err: err, Attrs: Request(pod, nil, kindPod, gvrPods, "ns", pod.Name, "", admission.Create, UserMyNode)}
	}
	statusFrom := func(name string, pod, old *corev1.Pod, err string) Case {
		return Case{Name: name, Pods: existing, Err: err, Attrs: Request(pod, old, kindPod, gvrPods, "ns", pod.Name, "status", admission.Update, UserMyNode)}
	}
	cases = append(cases,
		create("mirror pod naming a service account", saPod, "can not create pods that reference serviceaccounts"),
		create("mirror pod with a secret volume", secretPod, "reference secrets"),
		create("mirror pod with a config map volume", configMapPod, "reference configmaps"),
		create("mirror pod with a cluster trust bundle", bundlePod, "reference clustertrustbundles"),
		create("mirror pod with a claim volume", pvcPod, "can not create pods that reference persistentvolumeclaims"),
		create("mirror pod with a resource claim", claimPod, "reference resourceclaim"),
		statusFrom("status setting an extended resource claim", extendedClaimPod, claimPod, "annot update extended resource claim status"),
		statusFrom("status setting a node-allocatable claim mapping", allocatablePod, claimPod, "cannot update node allocatable resource claim statuses"),
		statusFrom("status setting a node-allocatable claim overhead", overheadPod, claimPod, "cannot update node allocatable resource claim statuses"),
	)
	return cases
}

// Label sets for Node cases: allowedLabelKeys are those a kubelet may always
// set, forbiddenLabelKeys those it may never add, change or remove.
var (
	allowedLabelKeys = []string{
		"foo", "example.com/foo", // not Kubernetes' business
		"kubelet.kubernetes.io/foo", "foo.kubelet.kubernetes.io/foo", // kubelet namespaces
		"node.kubernetes.io/foo", "foo.node.kubernetes.io/foo",
		// The kubelet's well-known labels, as k8s.io/kubelet lists them.
		"kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
		"topology.kubernetes.io/zone", "topology.kubernetes.io/region",
		"failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
		"beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
		"beta.kubernetes.io/os", "beta.kubernetes.io/arch",
	}
	forbiddenLabelKeys = []string{
		"node-restriction.kubernetes.io/foo", "foo.node-restriction.kubernetes.io/foo",
		"other.kubernetes.io/foo", "other.k8s.io/foo",
	}
)

// withLabels is a copy of node with keys set to value ("value" when empty).
func withLabels(node *corev1.Node, value string, keys []string) *corev1.Node {
	node = node.DeepCopy()
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	if value == "" {
		value = "value"
	}
	for _, key := range keys {
		node.Labels[key] = value
	}
	return node
}

func withAllowedLabels(node *corev1.Node, value string) *corev1.Node {
	return withLabels(node, value, allowedLabelKeys)
}

func withForbiddenLabels(node *corev1.Node, value string) *corev1.Node {
	return withLabels(node, value, forbiddenLabelKeys)
}

func withAllLabels(node *corev1.Node, value string) *corev1.Node {
	return withForbiddenLabels(withAllowedLabels(node, value), value)
}

const forbiddenLabelList = "foo.node-restriction.kubernetes.io/foo, node-restriction.kubernetes.io/foo, other.k8s.io/foo, other.kubernetes.io/foo"

func nodeCases() []Case {
	meta := metav1.ObjectMeta{Name: "mynode", UID: "mynode-uid"}
	owned := func(owner string) metav1.ObjectMeta {
		m := *meta.DeepCopy()
		m.OwnerReferences = []metav1.OwnerReference{{Name: owner, Controller: ptr.To(true)}}
		return m
	}
	configured := func(name, uid string) *corev1.Node {
		//lint:ignore SA1019 Kubernetes' cases set the removed DynamicKubeletConfig field
		return &corev1.Node{ObjectMeta: meta, Spec: corev1.NodeSpec{ConfigSource: &corev1.NodeConfigSource{
			ConfigMap: &corev1.ConfigMapNodeConfigSource{Name: name, Namespace: "bar", UID: "fooUID", KubeletConfigKey: "kubelet"},
		}}}
	}
	tainted := func(value string) *corev1.Node {
		return &corev1.Node{ObjectMeta: meta, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "mykey", Value: value}}}}
	}
	var (
		myNode     = &corev1.Node{ObjectMeta: meta}
		configA    = configured("foo", "fooUID")
		configB    = configured("qux", "quxUID")
		taintA     = tainted("A")
		taintB     = tainted("B")
		ownedA     = &corev1.Node{ObjectMeta: owned("fooerA")}
		ownedB     = &corev1.Node{ObjectMeta: owned("fooerB")}
		otherNode  = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "othernode"}}
		noPods     = []*corev1.Pod{}
		createNode = func(name string, node *corev1.Node, requestName, err string) Case {
			return Case{Name: name, Pods: noPods, Err: err, Attrs: Request(node, nil, kindNode, gvrNodes, "", requestName, "", admission.Create, UserMyNode)}
		}
		updateNode = func(name string, node, old *corev1.Node, err string) Case {
			return Case{Name: name, Pods: noPods, Err: err, Attrs: Request(node, old, kindNode, gvrNodes, "", node.Name, "", admission.Update, UserMyNode)}
		}
	)
	const (
		errTaints = "is not allowed to modify taints"
		errConfig = "update configSource to a new non-nil configSource"
		errLabels = "is not allowed to modify labels: " + forbiddenLabelList
		errOwners = `node "mynode" is not allowed to modify ownerReferences`
		errOther  = "is not allowed to modify node"
	)
	return []Case{
		createNode("register my node", myNode, "mynode", ""),
		createNode("register my node, name from the object", myNode, "mynode", ""),
		createNode("register my node with taints", taintA, "mynode", ""),
		createNode("register my node with allowed labels", withAllowedLabels(myNode, ""), "mynode", ""),
		createNode("register my node with forbidden labels", withForbiddenLabels(myNode, ""), "mynode", "is not allowed to set the following labels: "+forbiddenLabelList),
		updateNode("update my node", myNode, myNode, ""),
		{Name: "delete my node", Pods: noPods, Attrs: Request(nil, nil, kindNode, gvrNodes, "", "mynode", "", admission.Delete, UserMyNode)},
		{Name: "update my node's status", Pods: noPods, Attrs: Request(myNode, myNode, kindNode, gvrNodes, "", "mynode", "status", admission.Update, UserMyNode)},
		createNode("register my node with a configSource", configA, "mynode", "is not allowed to create pods with a non-nil configSource"),
		updateNode("set configSource", configA, myNode, errConfig),
		updateNode("change configSource", configB, configA, errConfig),
		updateNode("keep configSource", configA, configA, ""),
		updateNode("drop configSource", myNode, configA, ""),
		updateNode("keep taints", taintA, taintA, ""),
		updateNode("add allowed labels", withAllowedLabels(myNode, ""), myNode, ""),
		updateNode("remove allowed labels", myNode, withAllowedLabels(myNode, ""), ""),
		updateNode("change allowed labels", withAllowedLabels(myNode, "b"), withAllowedLabels(myNode, "a"), ""),
		updateNode("keep every label", withAllLabels(myNode, ""), withAllLabels(myNode, ""), ""),
		updateNode("add allowed labels next to unchanged forbidden ones", withAllLabels(myNode, ""), withForbiddenLabels(myNode, ""), ""),
		updateNode("remove allowed labels next to unchanged forbidden ones", withForbiddenLabels(myNode, ""), withAllLabels(myNode, ""), ""),
		updateNode("add a taint", taintA, myNode, errTaints),
		updateNode("remove a taint", myNode, taintA, errTaints),
		updateNode("change a taint", taintA, taintB, errTaints),
		updateNode("add forbidden labels", withForbiddenLabels(myNode, ""), myNode, errLabels),
		updateNode("remove forbidden labels", myNode, withForbiddenLabels(myNode, ""), errLabels),
		updateNode("change forbidden labels", withForbiddenLabels(myNode, "new"), withForbiddenLabels(myNode, "old"), errLabels),
		updateNode("add an owner reference", ownedA, myNode, errOwners),
		updateNode("remove the owner reference", myNode, ownedA, errOwners),
		updateNode("change the owner reference", ownedA, ownedB, errOwners),

		createNode("register another node", otherNode, "othernode", errOther),
		createNode("register another node, no request name", otherNode, "", errOther),
		updateNode("update another node", otherNode, otherNode, errOther),
		{Name: "delete another node", Pods: noPods, Err: errOther, Attrs: Request(nil, nil, kindNode, gvrNodes, "", "othernode", "", admission.Delete, UserMyNode)},
		{Name: "update another node's status", Pods: noPods, Err: errOther, Attrs: Request(otherNode, otherNode, kindNode, gvrNodes, "", "othernode", "status", admission.Update, UserMyNode)},
	}
}

func tokenRequest(podName string, podUID string, audiences ...string) *authenticationv1.TokenRequest {
	tr := &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns"},
		Spec:       authenticationv1.TokenRequestSpec{Audiences: audiences},
	}
	if podName != "" {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: podName, UID: types.UID(podUID)}
	}
	return tr
}

func tokenCases() []Case {
	withVolumes := func(name string, volumes ...corev1.Volume) *corev1.Pod {
		p := newPod("ns", name, "mynode", false)
		p.Spec.Volumes = volumes
		return p
	}
	projected := func(audience string) corev1.Volume {
		return corev1.Volume{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: audience}}}}}}
	}
	csi := corev1.Volume{VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "com.example.csi.mydriver"}}}
	claim := func(name string) corev1.Volume {
		return corev1.Volume{VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	var (
		mine  = newPod("ns", "mypod", "mynode", false)
		other = newPod("ns", "otherpod", "othernode", false)
		// Upstream registers two pods named mysapod; the second (audience
		// foo) replaces the first in the store, so both cases see it.
		emptyAudiencePod = withVolumes("mysapod", projected(""))
		fooAudiencePod   = withVolumes("mysapod", projected("foo"))
		csiPod           = withVolumes("mycsipod", csi)
		claimPod         = withVolumes("mypvcpod", claim("pvclaim"))
		ephemeralPod     = withVolumes("myephemeralpod", corev1.Volume{Name: "myvol", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}})
		claimAndCSIPod   = withVolumes("mypvcandcsipod", claim("pvclaim"), csi)
		inlineAzurePod   = withVolumes("myintreeinlinevoltocsipod", corev1.Volume{VolumeSource: corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{ShareName: "default", SecretName: "secret"}}})
		azureClaimPod    = withVolumes("myintreepvtocsipod", claim("pvclaim-azurefile"))

		pods   = podList(newPod("ns", "mymirrorpod", "mynode", true), mine, other, emptyAudiencePod, fooAudiencePod, csiPod, claimPod, ephemeralPod, claimAndCSIPod, inlineAzurePod, azureClaimPod)
		noPods = []*corev1.Pod{}

		drivers = []*storagev1.CSIDriver{
			{ObjectMeta: metav1.ObjectMeta{Name: "com.example.csi.mydriver"}, Spec: storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "foo"}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "file.csi.azure.com"}, Spec: storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "foo"}}}},
		}
		noDrivers = []*storagev1.CSIDriver{}
		pvcs      = []*corev1.PersistentVolumeClaim{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pvclaim"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pvname"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pvclaim-azurefile"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pvname-azurefile"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "myephemeralpod-myvol"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pvname"}},
		}
		noPVCs = []*corev1.PersistentVolumeClaim{}
		pvs    = []*corev1.PersistentVolume{
			{ObjectMeta: metav1.ObjectMeta{Name: "pvname"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "com.example.csi.mydriver"}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "pvname-azurefile"}, Spec: corev1.PersistentVolumeSpec{
				ClaimRef:               &corev1.ObjectReference{Namespace: "ns"},
				PersistentVolumeSource: corev1.PersistentVolumeSource{AzureFile: &corev1.AzureFilePersistentVolumeSource{ShareName: "default", SecretName: "secret"}},
			}},
		}
		noPVs = []*corev1.PersistentVolume{}
	)
	token := func(tr *authenticationv1.TokenRequest) admission.Attributes {
		return Request(tr, nil, kindToken, gvrSAs, "ns", "mysa", "token", admission.Create, UserMyNode)
	}
	restricted := map[string]bool{gateAudienceRestriction: true}
	unrestricted := map[string]bool{gateAudienceRestriction: false}
	const notAuthorizedFoo = `serviceaccounts "mysa" is forbidden: system:node:mynode is not authorized to request tokens for audience "foo"`
	const notAuthorizedBar = `system:node:mynode is not authorized to request tokens for audience "bar"`

	return []Case{
		// Binding rules, audience restriction not inspected (off).
		{Name: "token bound to nothing", Pods: noPods, Err: "not bound to a pod", Attrs: token(tokenRequest("", "", "foo"))},
		{Name: "token bound to a pod that does not exist", Pods: noPods, Err: "not found", Attrs: token(tokenRequest("nopod", "someuid", "foo"))},
		{Name: "token bound to a pod without UID", Pods: pods, Err: "pod binding without a uid", Attrs: token(tokenRequest("mypod", "", "foo"))},
		{Name: "token bound to another node's pod", Pods: pods, Err: "pod scheduled on a different node", Attrs: token(tokenRequest("otherpod", "pod-uid", "foo"))},
		{Name: "token bound to my pod", Pods: pods, Attrs: token(tokenRequest("mypod", "pod-uid", "foo"))},

		// Audience restriction.
		{Name: "audience of a projected token (the empty-audience pod was replaced)", Pods: pods, Gates: restricted,
			Attrs: token(tokenRequest(emptyAudiencePod.Name, "pod-uid", "foo"))},
		{Name: "audience of a projected token", Pods: pods, Gates: restricted,
			Attrs: token(tokenRequest(fooAudiencePod.Name, "pod-uid", "foo"))},
		{Name: "two audiences", Pods: pods, Gates: restricted, Err: "node may only request 0 or 1 audiences",
			Attrs: token(tokenRequest(fooAudiencePod.Name, "pod-uid", "foo", "bar"))},
		{Name: "audience the pod does not use, authorizer denies", Pods: pods, Gates: restricted, Err: notAuthorizedFoo,
			Authorizer: audienceAuthorizer("foo", authorizer.DecisionDeny), Attrs: token(tokenRequest("mypod", "pod-uid", "foo"))},
		{Name: "audience of an inline CSI driver", Pods: pods, CSIDrivers: drivers, Gates: restricted,
			Attrs: token(tokenRequest(csiPod.Name, "pod-uid", "foo"))},
		{Name: "audience an inline CSI driver does not request", Pods: pods, CSIDrivers: drivers, Gates: restricted, Err: notAuthorizedBar,
			Authorizer: audienceAuthorizer("bar", authorizer.DecisionDeny), Attrs: token(tokenRequest(csiPod.Name, "pod-uid", "bar"))},
		{Name: "inline CSI driver not found", Pods: pods, CSIDrivers: noDrivers, Gates: restricted,
			Err:   `error validating audience "foo": csidriver.storage.k8s.io "com.example.csi.mydriver" not found`,
			Attrs: token(tokenRequest(csiPod.Name, "pod-uid", "foo"))},
		{Name: "audience of a claim's CSI driver", Pods: pods, CSIDrivers: drivers, PVCs: pvcs, PVs: pvs, Gates: restricted,
			Attrs: token(tokenRequest(claimPod.Name, "pod-uid", "foo"))},
		{Name: "audience a claim's CSI driver does not request", Pods: pods, CSIDrivers: drivers, PVCs: pvcs, PVs: pvs, Gates: restricted, Err: notAuthorizedBar,
			Authorizer: audienceAuthorizer("bar", authorizer.DecisionDeny), Attrs: token(tokenRequest(claimPod.Name, "pod-uid", "bar"))},
		{Name: "claim not found", Pods: pods, CSIDrivers: drivers, PVCs: noPVCs, PVs: pvs, Gates: restricted,
			Err:   `error validating audience "foo": persistentvolumeclaim "pvclaim" not found`,
			Attrs: token(tokenRequest(claimPod.Name, "pod-uid", "foo"))},
		{Name: "claim's volume not found", Pods: pods, CSIDrivers: drivers, PVCs: pvcs, PVs: noPVs, Gates: restricted,
			Err:   `error validating audience "foo": persistentvolume "pvname" not found`,
			Attrs: token(tokenRequest(claimPod.Name, "pod-uid", "foo"))},
		{Name: "audience of an ephemeral volume's CSI driver", Pods: pods, CSIDrivers: drivers, PVCs: pvcs, PVs: pvs, Gates: restricted,
			Attrs: token(tokenRequest(ephemeralPod.Name, "pod-uid", "foo"))},
		{Name: "audience an ephemeral volume's CSI driver does not request", Pods: pods, CSIDrivers: drivers, PVCs: pvcs, PVs: pvs, Gates: restricted, Err: notAuthorizedBar,
			Authorizer: audienceAuthorizer("bar", authorizer.DecisionDeny), Attrs: token(tokenRequest(ephemeralPod.Name, "pod-uid", "bar"))},
		// Upstream's name says the gate is off, but it is on: the inline
		// CSI volume matches after the missing claim.
		{Name: "claim not found but a later CSI volume matches", Pods: pods, CSIDrivers: drivers, PVCs: noPVCs, Gates: restricted,
			Attrs: token(tokenRequest(claimAndCSIPod.Name, "pod-uid", "foo"))},
		{Name: "claim's volume not found but a later CSI volume matches", Pods: pods, CSIDrivers: drivers, PVCs: pvcs, PVs: noPVs, Gates: restricted,
			Attrs: token(tokenRequest(claimAndCSIPod.Name, "pod-uid", "foo"))},
		{Name: "restriction off: volumes are not looked up", Pods: pods, CSIDrivers: drivers, PVCs: pvcs, PVs: noPVs, Gates: unrestricted,
			Attrs: token(tokenRequest(claimAndCSIPod.Name, "pod-uid", "foo"))},
		{Name: "restriction off: drivers are not looked up", Pods: pods, CSIDrivers: noDrivers, Gates: unrestricted,
			Attrs: token(tokenRequest(csiPod.Name, "pod-uid", "foo"))},
		{Name: "audience of an in-tree volume's migrated CSI driver", Pods: pods, CSIDrivers: drivers, PVCs: pvcs, PVs: pvs, Gates: restricted,
			Attrs: token(tokenRequest(azureClaimPod.Name, "pod-uid", "foo"))},
		{Name: "audience of an inline in-tree volume's migrated CSI driver", Pods: pods, CSIDrivers: drivers, Gates: restricted,
			Attrs: token(tokenRequest(inlineAzurePod.Name, "pod-uid", "foo"))},
		{Name: "audience the pod does not use, authorizer allows", Pods: pods, CSIDrivers: noDrivers, PVCs: noPVCs, PVs: noPVs, Gates: restricted,
			Authorizer: audienceAuthorizer("foo", authorizer.DecisionAllow), Attrs: token(tokenRequest("mypod", "pod-uid", "foo"))},
		{Name: "audience the pod does not use, no role grants it", Pods: pods, CSIDrivers: noDrivers, PVCs: noPVCs, PVs: noPVs, Gates: restricted, Err: notAuthorizedFoo,
			Authorizer: audienceAuthorizer("foo", authorizer.DecisionDeny), Attrs: token(tokenRequest("mypod", "pod-uid", "foo"))},
	}
}

func otherCases() []Case {
	var (
		pods     = podList(newPod("ns", "unboundpod", "", false))
		noPods   = []*corev1.Pod{}
		unbound  = newPod("ns", "unboundpod", "", false)
		cmKind   = corev1.SchemeGroupVersion.WithKind("ConfigMap")
		leaseFor = func(namespace, name string) *coordinationv1.Lease {
			return &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity:       ptr.To("mynode"),
					LeaseDurationSeconds: ptr.To[int32](40),
					RenewTime:            &metav1.MicroTime{Time: time.Now()},
				},
			}
		}
		lease          = leaseFor(corev1.NamespaceNodeLease, "mynode")
		leaseWrongNS   = leaseFor("foo", "mynode")
		leaseWrongName = leaseFor(corev1.NamespaceNodeLease, "foo")
		leaseKind      = coordinationv1.SchemeGroupVersion.WithKind("Lease")
		leaseReq       = func(obj, old *coordinationv1.Lease, l *coordinationv1.Lease, op admission.Operation) admission.Attributes {
			var o, oo runtime.Object
			if obj != nil {
				o = obj
			}
			if old != nil {
				oo = old
			}
			return Request(o, oo, leaseKind, gvrLeases, l.Namespace, l.Name, "", op, UserMyNode)
		}

		csiNodeFor = func(name, nodeID string) *storagev1.CSINode {
			return &storagev1.CSINode{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
					Name: "com.example.csi/mydriver", NodeID: nodeID, TopologyKeys: []string{"com.example.csi/zone"},
				}}},
			}
		}
		csiNode      = csiNodeFor("mynode", "com.example.csi/mynode")
		csiNodeOther = csiNodeFor("foo", "com.example.csi/foo")
		csiNodeKind  = storagev1.SchemeGroupVersion.WithKind("CSINode")
		csiReq       = func(obj, old runtime.Object, name, sub string, op admission.Operation) admission.Attributes {
			return Request(obj, old, csiNodeKind, gvrCSINodes, "", name, sub, op, UserMyNode)
		}
		degraded = storagev1.CSINodeStatus{StorageHealth: []storagev1.StorageHealth{{
			Name:             "com.example.csi/mydriver",
			HealthConditions: []storagev1.StorageHealthCondition{{Status: storagev1.StorageDegraded, Reason: "DiskSlow"}},
		}}}
		healthReport = &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "mynode"}, Spec: csiNode.Spec, Status: degraded}
		specChange   = &storagev1.CSINode{
			ObjectMeta: metav1.ObjectMeta{Name: "mynode"},
			Spec:       storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "com.example.csi/evil", NodeID: "evil", TopologyKeys: []string{"evil"}}}},
			Status:     degraded,
		}
		volumeHealth = map[string]bool{gateCSIVolumeHealth: true}
	)
	return []Case{
		// Resources the plugin does not restrict.
		{Name: "create a config map", Pods: pods, Attrs: Request(&corev1.ConfigMap{}, nil, cmKind, gvrConfigMap, "myns", "mycm", "", admission.Create, UserMyNode)},
		{Name: "update a config map", Pods: pods, Attrs: Request(&corev1.ConfigMap{}, &corev1.ConfigMap{}, cmKind, gvrConfigMap, "myns", "mycm", "", admission.Update, UserMyNode)},
		{Name: "delete a config map", Pods: pods, Attrs: Request(nil, nil, cmKind, gvrConfigMap, "myns", "mycm", "", admission.Delete, UserMyNode)},

		// Someone who is not a node.
		{Name: "bob creates a pod", Pods: noPods, Attrs: Request(unbound, nil, kindPod, gvrPods, "ns", "unboundpod", "", admission.Create, UserBob)},
		{Name: "bob updates a pod", Pods: pods, Attrs: Request(unbound, unbound, kindPod, gvrPods, "ns", "unboundpod", "", admission.Update, UserBob)},
		{Name: "bob deletes a pod", Pods: pods, Attrs: Request(nil, nil, kindPod, gvrPods, "ns", "unboundpod", "", admission.Delete, UserBob)},
		{Name: "bob creates pod status", Pods: noPods, Attrs: Request(unbound, nil, kindPod, gvrPods, "ns", "unboundpod", "status", admission.Create, UserBob)},
		{Name: "bob updates pod status", Pods: pods, Attrs: Request(unbound, unbound, kindPod, gvrPods, "ns", "unboundpod", "status", admission.Update, UserBob)},
		{Name: "bob deletes pod status", Pods: pods, Attrs: Request(nil, nil, kindPod, gvrPods, "ns", "unboundpod", "status", admission.Delete, UserBob)},

		// Node leases.
		{Name: "create a lease outside kube-node-lease", Err: "forbidden: ", Attrs: leaseReq(leaseWrongNS, nil, leaseWrongNS, admission.Create)},
		{Name: "update a lease outside kube-node-lease", Err: "forbidden: ", Attrs: leaseReq(leaseWrongNS, leaseWrongNS, leaseWrongNS, admission.Update)},
		{Name: "delete a lease outside kube-node-lease", Err: "forbidden: ", Attrs: leaseReq(nil, nil, leaseWrongNS, admission.Delete)},
		{Name: "create another node's lease", Err: "forbidden: ", Attrs: leaseReq(leaseWrongName, nil, leaseWrongName, admission.Create)},
		{Name: "update another node's lease", Err: "forbidden: ", Attrs: leaseReq(leaseWrongName, leaseWrongName, leaseWrongName, admission.Update)},
		{Name: "delete another node's lease", Err: "forbidden: ", Attrs: leaseReq(nil, nil, leaseWrongName, admission.Delete)},
		{Name: "create my lease", Attrs: leaseReq(lease, nil, lease, admission.Create)},
		{Name: "update my lease", Attrs: leaseReq(lease, lease, lease, admission.Update)},
		{Name: "delete my lease", Attrs: leaseReq(nil, nil, lease, admission.Delete)},

		// CSINodes.
		{Name: "create another node's CSINode", Err: "forbidden: ", Attrs: csiReq(csiNodeOther, nil, "foo", "", admission.Create)},
		{Name: "update another node's CSINode", Err: "forbidden: ", Attrs: csiReq(csiNodeOther, csiNodeOther, "foo", "", admission.Update)},
		{Name: "delete another node's CSINode", Err: "forbidden: ", Attrs: csiReq(nil, nil, "foo", "", admission.Delete)},
		{Name: "create my CSINode", Attrs: csiReq(csiNode, nil, "mynode", "", admission.Create)},
		{Name: "update my CSINode", Attrs: csiReq(csiNode, csiNode, "mynode", "", admission.Update)},
		{Name: "delete my CSINode", Attrs: csiReq(nil, nil, "mynode", "", admission.Delete)},
		{Name: "report storage health, gate off", Err: "CSIVolumeHealth feature gate is disabled", Attrs: csiReq(healthReport, csiNode, "mynode", "status", admission.Update)},
		{Name: "report storage health", Gates: volumeHealth, Attrs: csiReq(healthReport, csiNode, "mynode", "status", admission.Update)},
		{Name: "report another node's storage health", Gates: volumeHealth, Err: "forbidden: ", Attrs: csiReq(csiNodeOther, csiNodeOther, "foo", "status", admission.Update)},
		{Name: "change the CSINode spec through status", Gates: volumeHealth, Err: "forbidden: ", Attrs: csiReq(specChange, csiNode, "mynode", "status", admission.Update)},

		// Certificate signing requests.
		{Name: "serving CSR for my node", Attrs: csrRequest("system:node:mynode", certificatesv1.KubeletServingSignerName, true, UserMyNode)},
		{Name: "client CSR for my node", Attrs: csrRequest("system:node:mynode", certificatesv1.KubeAPIServerClientKubeletSignerName, true, UserMyNode)},
		{Name: "CSR for another signer", Attrs: csrRequest("some-other-identity", certificatesv1.KubeAPIServerClientSignerName, true, UserMyNode)},
		{Name: "serving CSR for another node", Err: "forbidden: can only create a node CSR with CN=system:node:mynode",
			Attrs: csrRequest("system:node:othernode", certificatesv1.KubeletServingSignerName, true, UserMyNode)},
		{Name: "serving CSR for another node, insecure CSRs allowed", Gates: map[string]bool{gateInsecureKubeletCSRs: true},
			Attrs: csrRequest("system:node:othernode", certificatesv1.KubeletServingSignerName, true, UserMyNode)},
		{Name: "CSR that does not parse", Err: "unable to parse csr: asn1: syntax error: sequence truncated",
			Attrs: csrRequest("system:node:mynode", certificatesv1.KubeletServingSignerName, false, UserMyNode)},
	}
}

func podCertificateCases() []Case {
	node1User := &user.DefaultInfo{Name: "system:node:pcr-node-1", Groups: []string{user.NodesGroup}}
	node2User := &user.DefaultInfo{Name: "system:node:pcr-node-2", Groups: []string{user.NodesGroup}}
	sas := []*corev1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pcr-sa", UID: "pcr-sa-uid"}}}
	// Upstream's second node object repeats node 1's name and UID.
	nodes := nodeList(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "pcr-node-1", UID: "pcr-node-1-uid"}})
	certPod := func(name, signer string) *corev1.Pod {
		p := newPod("ns", name, "pcr-node-1", false)
		p.Spec.ServiceAccountName = "pcr-sa"
		if signer != "" {
			p.Spec.Volumes = []corev1.Volume{{Name: "pod-cert", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{SignerName: signer}}},
			}}}}
		}
		return p
	}
	pods := podList(certPod("pcrpod", "example.com/foo"), certPod("pcrpod-novolume", ""), certPod("pcrpod-wrongsigner", "example.com/other"))
	on := map[string]bool{gatePodCertificateRequest: true}
	c := func(name string, attrs admission.Attributes, authz *Authorizer, gates map[string]bool, err string) Case {
		return Case{Name: name, Pods: pods, ServiceAccounts: sas, Nodes: nodes, Attrs: attrs, Authorizer: authz, Gates: gates, Err: err}
	}
	never := (*Authorizer)(nil)
	return []Case{
		c("gate off", pcrRequest("ns", "pcrpod", "pod-uid", "pcr-sa", "", "pcr-node-1", "pcr-node-1-uid", node1User), never, nil,
			"PodCertificateRequest feature gate is disabled"),
		c("pod on my node", pcrRequest("ns", "pcrpod", "pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User), never, on, ""),
		c("naming another node", pcrRequest("ns", "pcrpod", "pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node2User), never, on,
			`PodCertificateRequest.Spec.NodeName="pcr-node-1", which is not the requesting node "pcr-node-2"`),
		c("pod that does not exist", pcrRequest("ns", "nonexistent-pod", "nonexistent-pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User), never, on,
			`pod "nonexistent-pod" not found`),
		c("service account the pod does not use", pcrRequest("ns", "pcrpod", "pod-uid", "nonexistent-sa", "nonexistent-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User), never, on,
			`PodCertificateRequest for pod "ns/pcrpod" contains serviceAccountName ("nonexistent-sa") that differs from running pod ("pcr-sa")`),
		c("node that does not exist", pcrRequest("ns", "pcrpod", "pod-uid", "pcr-sa", "pcr-sa-uid", "nonexistent-node", "nonexistent-node-uid", node1User), never, on,
			`PodCertificateRequest.Spec.NodeName="nonexistent-node", which is not the requesting node "pcr-node-1"`),
		c("pod UID mismatch", pcrRequest("ns", "pcrpod", "wrong-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User), never, on,
			`PodCertificateRequest for pod "ns/pcrpod" contains pod UID ("wrong-uid") which differs from running pod "pod-uid"`),
		c("service account UID mismatch", pcrRequest("ns", "pcrpod", "pod-uid", "pcr-sa", "wrong-uid", "pcr-node-1", "pcr-node-1-uid", node1User), never, on,
			`PodCertificateRequest for pod "ns/pcrpod" names service account UID "wrong-uid", which differs from the running service account ("pcr-sa-uid")`),
		c("node UID mismatch", pcrRequest("ns", "pcrpod", "pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "wrong-uid", node1User), never, on,
			`PodCertificateRequest for pod "ns/pcrpod" names node UID "wrong-uid", inconsistent with the running node ("pcr-node-1-uid")`),
		c("no podCertificate volume, authorizer denies", pcrRequest("ns", "pcrpod-novolume", "pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User),
			signerAuthorizer(node1User, authorizer.DecisionDeny), on,
			`pod "ns/pcrpod-novolume" does not mount a podCertificate projected volume for signer "example.com/foo"`),
		c("no podCertificate volume, authorizer has no opinion", pcrRequest("ns", "pcrpod-novolume", "pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User),
			signerAuthorizer(node1User, authorizer.DecisionNoOpinion), on,
			`pod "ns/pcrpod-novolume" does not mount a podCertificate projected volume for signer "example.com/foo"`),
		c("podCertificate volume for another signer", pcrRequest("ns", "pcrpod-wrongsigner", "pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User),
			signerAuthorizer(node1User, authorizer.DecisionDeny), on,
			`pod "ns/pcrpod-wrongsigner" does not mount a podCertificate projected volume for signer "example.com/foo"`),
		c("no podCertificate volume, authorizer allows", pcrRequest("ns", "pcrpod-novolume", "pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User),
			signerAuthorizer(node1User, authorizer.DecisionAllow), on, ""),
	}
}

// ownerReferenceCases cover the owner reference of a mirror pod.
func ownerReferenceCases() []Case {
	sameUID := nodeList(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode", UID: "mynode-uid"}})
	otherUID := nodeList(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode", UID: "mynode-unexpected-uid"}})
	noNodes := []*corev1.Node{}

	good := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "mynode", UID: "mynode-uid", Controller: ptr.To(true)}
	edit := func(f func(*metav1.OwnerReference)) metav1.OwnerReference {
		r := good
		f(&r)
		return r
	}
	const wrongOwner = "can only create pods with an owner reference set to itself"
	const notController = "can only create pods with a controller owner reference set to itself"
	owned := func(name string, nodes []*corev1.Node, err string, owners ...metav1.OwnerReference) Case {
		pod := newPod("ns", "test", "mynode", true)
		pod.OwnerReferences = owners
		return Case{Name: "mirror pod owner: " + name, Pods: podList(), Nodes: nodes, Err: err,
			Attrs: Request(pod, nil, kindPod, gvrPods, pod.Namespace, pod.Name, "", admission.Create, UserMyNode)}
	}
	return []Case{
		owned("no owner", sameUID, `pods "test" is forbidden: node "mynode" can only create pods with an owner reference set to itself`),
		owned("my node", sameUID, "", good),
		owned("my node twice", sameUID, "can only create pods with a single owner reference set to itself", good, good),
		owned("another node's name", sameUID, wrongOwner, edit(func(r *metav1.OwnerReference) { r.Name = "other" })),
		owned("a stale UID", otherUID, "UID mismatch", good),
		owned("node not in the informer", noNodes, "not found", good),
		owned("apiVersion v2", sameUID, wrongOwner, edit(func(r *metav1.OwnerReference) { r.APIVersion = "v2" })),
		owned("kind Pod", sameUID, wrongOwner, edit(func(r *metav1.OwnerReference) { r.Kind = "Pod" })),
		owned("controller unset", sameUID, notController, edit(func(r *metav1.OwnerReference) { r.Controller = nil })),
		owned("controller false", sameUID, notController, edit(func(r *metav1.OwnerReference) { r.Controller = ptr.To(false) })),
		owned("blockOwnerDeletion", sameUID, "must not set blockOwnerDeletion on an owner reference",
			edit(func(r *metav1.OwnerReference) { r.BlockOwnerDeletion = ptr.To(true) })),
	}
}

// modifiedLabelCases are Kubernetes' label-difference cases as Node
// updates: the keys, put in a namespace no node may write, come back in
// the error as exactly the set of keys added, removed or changed.
func modifiedLabelCases() []Case {
	const ns = "other.k8s.io/"
	labels := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[ns+kv[i]] = kv[i+1]
		}
		return m
	}
	update := func(name string, a, b map[string]string, changed ...string) Case {
		node := func(l map[string]string) *corev1.Node {
			return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode", Labels: l}}
		}
		c := Case{Name: "label difference: " + name, Pods: podList(),
			Attrs: Request(node(a), node(b), kindNode, gvrNodes, "", "mynode", "", admission.Update, UserMyNode)}
		if len(changed) > 0 {
			c.Err = "is not allowed to modify labels: "
			for i, k := range changed {
				if i > 0 {
					c.Err += ", "
				}
				c.Err += ns + k
			}
		}
		return c
	}
	return []Case{
		update("both nil", nil, nil),
		update("same labels", labels("x", "1", "y", "2", "z", "3"), labels("x", "1", "y", "2", "z", "3")),
		update("one added", labels(), labels("a", "0"), "a"),
		update("one removed", labels("z", "3"), labels(), "z"),
		update("one changed", labels("z", "3"), labels("z", "4"), "z"),
		update("empty value added", labels(), labels("a", ""), "a"),
		update("empty value removed", labels("z", ""), labels(), "z"),
		update("value emptied", labels("z", "3"), labels("z", ""), "z"),
		update("empty value filled", labels("z", ""), labels("z", "3"), "z"),
		update("added, removed and changed at once", labels("a", "1", "b", "2"), labels("a", "2", "c", "3"), "a", "b", "c"),
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

// pvcStatusCases cover claim status updates. Emulating 1.33 unlocks
// RecoverVolumeExpansionFailure so that it can be turned off.
func pvcStatusCases() []Case {
	infeasible := corev1.PersistentVolumeClaimNodeResizeInfeasible
	update := func(name, subresource string, obj, old *corev1.PersistentVolumeClaim, recovery bool, err string) Case {
		return Case{Name: "PVC: " + name, Pods: podList(), Emulation: "1.33", Gates: map[string]bool{gateExpansionRecovery: recovery}, Err: err,
			Attrs: Request(obj, old, schema.GroupVersionKind{}, gvrPVCs, metav1.NamespaceDefault, "foo", subresource, admission.Update, UserMyNode)}
	}
	return []Case{
		update("update of the whole claim", "", testPVC("", "10G", nil), testPVC(corev1.PersistentVolumeClaimResizing, "10G", nil), false,
			"is forbidden: may only update PVC status"),
		update("capacity and conditions", "status",
			testPVC(corev1.PersistentVolumeClaimFileSystemResizePending, "10G", nil), testPVC(corev1.PersistentVolumeClaimResizing, "10G", nil), false, ""),
		update("allocated resources without recovery", "status",
			testPVC(corev1.PersistentVolumeClaimFileSystemResizePending, "15G", nil), testPVC(corev1.PersistentVolumeClaimResizing, "10G", nil), false,
			"is not allowed to update fields other than"),
		update("allocated resources with recovery", "status",
			testPVC(corev1.PersistentVolumeClaimFileSystemResizePending, "15G", nil), testPVC(corev1.PersistentVolumeClaimResizing, "10G", nil), true, ""),
		update("resize status with recovery", "status",
			testPVC(corev1.PersistentVolumeClaimResizing, "10G", &infeasible), testPVC(corev1.PersistentVolumeClaimResizing, "10G", nil), true, ""),
	}
}

// resourceSliceCases cover ResourceSlice writes, each with the
// DynamicResourceAllocation gate on and off (emulating 1.34, where it
// could still be turned off), to show that the gate changes nothing.
func resourceSliceCases() []Case {
	slice := func(node *string) *resourcev1.ResourceSlice {
		return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "something"}, Spec: resourcev1.ResourceSliceSpec{NodeName: node}}
	}
	mine, other, none := slice(ptr.To("mynode")), slice(ptr.To("mynode-other")), slice(nil)
	const createErr = "can only create ResourceSlice with the same NodeName as the requesting node"
	const deleteErr = "can only delete ResourceSlice with the same NodeName as the requesting node"
	c := func(name string, op admission.Operation, obj, old *resourcev1.ResourceSlice, dra bool, err string) Case {
		var o, oo runtime.Object
		if obj != nil {
			o = obj
		}
		if old != nil {
			oo = old
		}
		emulation := ""
		if !dra {
			emulation = "1.34"
		}
		return Case{Name: "ResourceSlice: " + name, Emulation: emulation, Gates: map[string]bool{gateDRA: dra}, Err: err,
			Attrs: Request(o, oo, schema.GroupVersionKind{}, gvrSlices, "", "foo", "", op, UserMyNode)}
	}
	return []Case{
		c("create for my node, DRA on", admission.Create, mine, nil, true, ""),
		c("create for another node, DRA on", admission.Create, other, nil, true, createErr),
		c("create without node, DRA on", admission.Create, none, nil, true, createErr),
		c("create for my node, DRA off", admission.Create, mine, nil, false, ""),
		c("create for another node, DRA off", admission.Create, other, nil, false, createErr),
		c("create without node, DRA off", admission.Create, none, nil, false, createErr),
		c("update for my node", admission.Update, mine, nil, true, ""),
		c("update for another node", admission.Update, other, nil, true, ""),
		c("update without node", admission.Update, none, nil, true, ""),
		c("delete my node's, DRA on", admission.Delete, nil, mine, true, ""),
		c("delete another node's, DRA on", admission.Delete, nil, other, true, deleteErr),
		c("delete one without node, DRA on", admission.Delete, nil, none, true, deleteErr),
		c("delete my node's, DRA off", admission.Delete, nil, mine, false, ""),
		c("delete another node's, DRA off", admission.Delete, nil, other, false, deleteErr),
		c("delete one without node, DRA off", admission.Delete, nil, none, false, deleteErr),
	}
}
