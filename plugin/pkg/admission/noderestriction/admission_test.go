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
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	corev1listers "k8s.io/client-go/listers/core/v1"
	storagev1listers "k8s.io/client-go/listers/storage/v1"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
)

// TestValidate reproduces Kubernetes 1.37's Test_nodePlugin_Admit (188
// cases) on k8s.io/api objects. Its groups, with their case counts:
//
//	mirror pods bound to us 10, bound to another node 10, unbound 10;
//	normal pods bound to us 13, bound to another node 10, unbound 10;
//	missing pod 5; eviction for an unnamed pod 4; pods referencing objects 9;
//	my Node object 29; another Node object 5; service account tokens 5;
//	token audience restriction 21; unrelated objects 3; unrelated user 6;
//	node leases 9; CSINodes 10; CSRs 6; PodCertificateRequests 13.
//
// The other upstream tests are TestValidateMirrorPodOwner (11),
// TestModifiedLabels (10), TestValidatePVCStatus (5) and
// TestValidateResourceSlice (15): 229 in all.
func TestValidate(t *testing.T) {
	var cases []admitCase
	cases = append(cases, podCases(t)...)
	cases = append(cases, nodeCases(t)...)
	cases = append(cases, tokenCases(t)...)
	cases = append(cases, otherCases(t)...)
	cases = append(cases, podCertificateCases(t)...)
	if len(cases) != 188 {
		t.Errorf("the upstream table has 188 cases, this one %d", len(cases))
	}
	runCases(t, cases)
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
func podMatrix(what string, pod *corev1.Pod, existing, missing corev1listers.PodLister, want [10]string) []admitCase {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: pod.Name}}
	unnamed := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}
	ns, name := pod.Namespace, pod.Name
	return []admitCase{
		{name: "create " + what, pods: missing, err: want[0], attrs: request(pod, nil, kindPod, gvrPods, ns, name, "", admission.Create, userMyNode)},
		{name: "update " + what, pods: existing, err: want[1], attrs: request(pod, pod, kindPod, gvrPods, ns, name, "", admission.Update, userMyNode)},
		{name: "delete " + what, pods: existing, err: want[2], attrs: request(nil, nil, kindPod, gvrPods, ns, name, "", admission.Delete, userMyNode)},
		{name: "create status of " + what, pods: missing, err: want[3], attrs: request(pod, nil, kindPod, gvrPods, ns, name, "status", admission.Create, userMyNode)},
		{name: "update status of " + what, pods: existing, err: want[4], attrs: request(pod, pod, kindPod, gvrPods, ns, name, "status", admission.Update, userMyNode)},
		{name: "delete status of " + what, pods: existing, err: want[5], attrs: request(nil, nil, kindPod, gvrPods, ns, name, "status", admission.Delete, userMyNode)},
		{name: "create eviction of " + what, pods: existing, err: want[6], attrs: request(ev, nil, kindEviction, gvrPods, ns, name, "eviction", admission.Create, userMyNode)},
		{name: "update eviction of " + what, pods: existing, err: want[7], attrs: request(ev, nil, kindEviction, gvrPods, ns, name, "eviction", admission.Update, userMyNode)},
		{name: "delete eviction of " + what, pods: existing, err: want[8], attrs: request(ev, nil, kindEviction, gvrPods, ns, name, "eviction", admission.Delete, userMyNode)},
		{name: "create unnamed eviction of " + what, pods: existing, err: want[9], attrs: request(unnamed, nil, kindEviction, gvrPods, ns, name, "eviction", admission.Create, userMyNode)},
	}
}

func podCases(t *testing.T) []admitCase {
	var (
		myMirror      = testPod("ns", "mymirrorpod", "mynode", true)
		otherMirror   = testPod("ns", "othermirrorpod", "othernode", true)
		unboundMirror = testPod("ns", "unboundmirrorpod", "", true)
		mine          = testPod("ns", "mypod", "mynode", false)
		others        = testPod("ns", "otherpod", "othernode", false)
		unbound       = testPod("ns", "unboundpod", "", false)
		unnamedPod    = testPod("ns", "", "mynode", false)

		existing = podLister(t, myMirror, otherMirror, unboundMirror, mine, others, unbound)
		missing  = podLister(t)

		labelA  = relabeled(mine, map[string]string{"label-a": "value-a"})
		labelAB = relabeled(mine, map[string]string{"label-a": "value-a", "label-b": "value-b"})

		mineEviction    = &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mypod"}}
		unnamedEviction = &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}
	)

	// The same ten requests for a pod on another node and for an unbound pod.
	notMine := [10]string{errOwnBinding, errUnexpectedOp, errOwnBinding, errUnexpectedOp, errOwnBinding, errUnexpectedOp, errOwnBinding, errUnexpectedOp, errUnexpectedOp, errOwnBinding}
	normalNotMine := notMine
	normalNotMine[0] = errMirrorOnly

	var cases []admitCase
	cases = append(cases, podMatrix("mirror pod bound to me", myMirror, existing, missing,
		[10]string{"", errUnexpectedOp, "", errUnexpectedOp, "", errUnexpectedOp, "", errUnexpectedOp, errUnexpectedOp, ""})...)
	cases = append(cases, podMatrix("mirror pod bound to another node", otherMirror, existing, missing, notMine)...)
	cases = append(cases, podMatrix("unbound mirror pod", unboundMirror, existing, missing, notMine)...)

	// Normal pods bound to me: the matrix without the named eviction (it
	// is in the unnamed-pod group), plus label changes through status.
	status := func(name string, pod, old *corev1.Pod) admitCase {
		return admitCase{name: name, pods: existing, err: "cannot update labels through pod status",
			attrs: request(pod, old, kindPod, gvrPods, "ns", "mypod", "status", admission.Update, userMyNode)}
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
		admitCase{name: "delete unknown pod", pods: missing, err: "not found",
			attrs: request(nil, nil, kindPod, gvrPods, "ns", "unboundpod", "", admission.Delete, userMyNode)},
		admitCase{name: "evict unknown pod", pods: missing, err: "not found",
			attrs: request(mineEviction, nil, kindEviction, gvrPods, "ns", "mypod", "eviction", admission.Create, userMyNode)},
		admitCase{name: "update eviction of unknown pod", pods: missing, err: errUnexpectedOp,
			attrs: request(mineEviction, nil, kindEviction, gvrPods, "ns", "mypod", "eviction", admission.Update, userMyNode)},
		admitCase{name: "delete eviction of unknown pod", pods: missing, err: errUnexpectedOp,
			attrs: request(mineEviction, nil, kindEviction, gvrPods, "ns", "mypod", "eviction", admission.Delete, userMyNode)},
		admitCase{name: "unnamed eviction of unknown pod", pods: missing, err: "not found",
			attrs: request(unnamedEviction, nil, kindEviction, gvrPods, "ns", "mypod", "eviction", admission.Create, userMyNode)},
	)

	// The request names no pod: the eviction body's name is used.
	cases = append(cases,
		admitCase{name: "eviction naming the pod when the request does not", pods: existing,
			attrs: request(mineEviction, nil, kindEviction, gvrPods, "ns", unnamedPod.Name, "eviction", admission.Create, userMyNode)},
		admitCase{name: "update eviction without request name", pods: existing, err: errUnexpectedOp,
			attrs: request(mineEviction, nil, kindEviction, gvrPods, "ns", unnamedPod.Name, "eviction", admission.Update, userMyNode)},
		admitCase{name: "delete eviction without request name", pods: existing, err: errUnexpectedOp,
			attrs: request(mineEviction, nil, kindEviction, gvrPods, "ns", unnamedPod.Name, "eviction", admission.Delete, userMyNode)},
		admitCase{name: "eviction with no pod name anywhere", pods: existing, err: "could not determine pod from request data",
			attrs: request(unnamedEviction, nil, kindEviction, gvrPods, "ns", unnamedPod.Name, "eviction", admission.Create, userMyNode)},
	)

	// Mirror pods that reference API objects, and status updates that
	// touch resource claim records.
	withSpec := func(name string, edit func(*corev1.Pod)) *corev1.Pod {
		p := testPod("ns", name, "mynode", true)
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
	create := func(name string, pod *corev1.Pod, err string) admitCase {
		return admitCase{name: name, pods: missing, err: err, attrs: request(pod, nil, kindPod, gvrPods, "ns", pod.Name, "", admission.Create, userMyNode)}
	}
	statusFrom := func(name string, pod, old *corev1.Pod, err string) admitCase {
		return admitCase{name: name, pods: existing, err: err, attrs: request(pod, old, kindPod, gvrPods, "ns", pod.Name, "status", admission.Update, userMyNode)}
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

func nodeCases(t *testing.T) []admitCase {
	meta := metav1.ObjectMeta{Name: "mynode", UID: "mynode-uid"}
	owned := func(owner string) metav1.ObjectMeta {
		m := *meta.DeepCopy()
		m.OwnerReferences = []metav1.OwnerReference{{Name: owner, Controller: ptr.To(true)}}
		return m
	}
	configured := func(name, uid string) *corev1.Node {
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
		noPods     = podLister(t)
		createNode = func(name string, node *corev1.Node, requestName, err string) admitCase {
			return admitCase{name: name, pods: noPods, err: err, attrs: request(node, nil, kindNode, gvrNodes, "", requestName, "", admission.Create, userMyNode)}
		}
		updateNode = func(name string, node, old *corev1.Node, err string) admitCase {
			return admitCase{name: name, pods: noPods, err: err, attrs: request(node, old, kindNode, gvrNodes, "", node.Name, "", admission.Update, userMyNode)}
		}
	)
	const (
		errTaints = "is not allowed to modify taints"
		errConfig = "update configSource to a new non-nil configSource"
		errLabels = "is not allowed to modify labels: " + forbiddenLabelList
		errOwners = `node "mynode" is not allowed to modify ownerReferences`
		errOther  = "is not allowed to modify node"
	)
	return []admitCase{
		createNode("register my node", myNode, "mynode", ""),
		createNode("register my node, name from the object", myNode, "mynode", ""),
		createNode("register my node with taints", taintA, "mynode", ""),
		createNode("register my node with allowed labels", withAllowedLabels(myNode, ""), "mynode", ""),
		createNode("register my node with forbidden labels", withForbiddenLabels(myNode, ""), "mynode", "is not allowed to set the following labels: "+forbiddenLabelList),
		updateNode("update my node", myNode, myNode, ""),
		{name: "delete my node", pods: noPods, attrs: request(nil, nil, kindNode, gvrNodes, "", "mynode", "", admission.Delete, userMyNode)},
		{name: "update my node's status", pods: noPods, attrs: request(myNode, myNode, kindNode, gvrNodes, "", "mynode", "status", admission.Update, userMyNode)},
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
		{name: "delete another node", pods: noPods, err: errOther, attrs: request(nil, nil, kindNode, gvrNodes, "", "othernode", "", admission.Delete, userMyNode)},
		{name: "update another node's status", pods: noPods, err: errOther, attrs: request(otherNode, otherNode, kindNode, gvrNodes, "", "othernode", "status", admission.Update, userMyNode)},
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

func tokenCases(t *testing.T) []admitCase {
	withVolumes := func(name string, volumes ...corev1.Volume) *corev1.Pod {
		p := testPod("ns", name, "mynode", false)
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
		mine  = testPod("ns", "mypod", "mynode", false)
		other = testPod("ns", "otherpod", "othernode", false)
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

		pods   = podLister(t, testPod("ns", "mymirrorpod", "mynode", true), mine, other, emptyAudiencePod, fooAudiencePod, csiPod, claimPod, ephemeralPod, claimAndCSIPod, inlineAzurePod, azureClaimPod)
		noPods = podLister(t)

		drivers = storagev1listers.NewCSIDriverLister(indexer(t,
			&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "com.example.csi.mydriver"}, Spec: storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "foo"}}}},
			&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "file.csi.azure.com"}, Spec: storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "foo"}}}},
		))
		noDrivers = storagev1listers.NewCSIDriverLister(indexer(t))
		pvcs      = corev1listers.NewPersistentVolumeClaimLister(indexer(t,
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pvclaim"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pvname"}},
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pvclaim-azurefile"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pvname-azurefile"}},
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "myephemeralpod-myvol"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pvname"}},
		))
		noPVCs = corev1listers.NewPersistentVolumeClaimLister(indexer(t))
		pvs    = corev1listers.NewPersistentVolumeLister(indexer(t,
			&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvname"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "com.example.csi.mydriver"}}}},
			&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvname-azurefile"}, Spec: corev1.PersistentVolumeSpec{
				ClaimRef:               &corev1.ObjectReference{Namespace: "ns"},
				PersistentVolumeSource: corev1.PersistentVolumeSource{AzureFile: &corev1.AzureFilePersistentVolumeSource{ShareName: "default", SecretName: "secret"}},
			}},
		))
		noPVs = corev1listers.NewPersistentVolumeLister(indexer(t))
	)
	token := func(tr *authenticationv1.TokenRequest) admission.Attributes {
		return request(tr, nil, kindToken, gvrSAs, "ns", "mysa", "token", admission.Create, userMyNode)
	}
	restricted := map[featuregate.Feature]bool{ServiceAccountNodeAudienceRestriction: true}
	unrestricted := map[featuregate.Feature]bool{ServiceAccountNodeAudienceRestriction: false}
	const notAuthorizedFoo = `serviceaccounts "mysa" is forbidden: system:node:mynode is not authorized to request tokens for audience "foo"`
	const notAuthorizedBar = `system:node:mynode is not authorized to request tokens for audience "bar"`

	return []admitCase{
		// Binding rules, audience restriction not inspected (off).
		{name: "token bound to nothing", pods: noPods, err: "not bound to a pod", attrs: token(tokenRequest("", "", "foo"))},
		{name: "token bound to a pod that does not exist", pods: noPods, err: "not found", attrs: token(tokenRequest("nopod", "someuid", "foo"))},
		{name: "token bound to a pod without UID", pods: pods, err: "pod binding without a uid", attrs: token(tokenRequest("mypod", "", "foo"))},
		{name: "token bound to another node's pod", pods: pods, err: "pod scheduled on a different node", attrs: token(tokenRequest("otherpod", "pod-uid", "foo"))},
		{name: "token bound to my pod", pods: pods, attrs: token(tokenRequest("mypod", "pod-uid", "foo"))},

		// Audience restriction.
		{name: "audience of a projected token (the empty-audience pod was replaced)", pods: pods, gateChanges: restricted,
			attrs: token(tokenRequest(emptyAudiencePod.Name, "pod-uid", "foo"))},
		{name: "audience of a projected token", pods: pods, gateChanges: restricted,
			attrs: token(tokenRequest(fooAudiencePod.Name, "pod-uid", "foo"))},
		{name: "two audiences", pods: pods, gateChanges: restricted, err: "node may only request 0 or 1 audiences",
			attrs: token(tokenRequest(fooAudiencePod.Name, "pod-uid", "foo", "bar"))},
		{name: "audience the pod does not use, authorizer denies", pods: pods, gateChanges: restricted, err: notAuthorizedFoo,
			authz: audienceAuthorizer(t, "foo", authorizer.DecisionDeny), attrs: token(tokenRequest("mypod", "pod-uid", "foo"))},
		{name: "audience of an inline CSI driver", pods: pods, csiDrivers: drivers, gateChanges: restricted,
			attrs: token(tokenRequest(csiPod.Name, "pod-uid", "foo"))},
		{name: "audience an inline CSI driver does not request", pods: pods, csiDrivers: drivers, gateChanges: restricted, err: notAuthorizedBar,
			authz: audienceAuthorizer(t, "bar", authorizer.DecisionDeny), attrs: token(tokenRequest(csiPod.Name, "pod-uid", "bar"))},
		{name: "inline CSI driver not found", pods: pods, csiDrivers: noDrivers, gateChanges: restricted,
			err:   `error validating audience "foo": csidriver.storage.k8s.io "com.example.csi.mydriver" not found`,
			attrs: token(tokenRequest(csiPod.Name, "pod-uid", "foo"))},
		{name: "audience of a claim's CSI driver", pods: pods, csiDrivers: drivers, pvcs: pvcs, pvs: pvs, gateChanges: restricted,
			attrs: token(tokenRequest(claimPod.Name, "pod-uid", "foo"))},
		{name: "audience a claim's CSI driver does not request", pods: pods, csiDrivers: drivers, pvcs: pvcs, pvs: pvs, gateChanges: restricted, err: notAuthorizedBar,
			authz: audienceAuthorizer(t, "bar", authorizer.DecisionDeny), attrs: token(tokenRequest(claimPod.Name, "pod-uid", "bar"))},
		{name: "claim not found", pods: pods, csiDrivers: drivers, pvcs: noPVCs, pvs: pvs, gateChanges: restricted,
			err:   `error validating audience "foo": persistentvolumeclaim "pvclaim" not found`,
			attrs: token(tokenRequest(claimPod.Name, "pod-uid", "foo"))},
		{name: "claim's volume not found", pods: pods, csiDrivers: drivers, pvcs: pvcs, pvs: noPVs, gateChanges: restricted,
			err:   `error validating audience "foo": persistentvolume "pvname" not found`,
			attrs: token(tokenRequest(claimPod.Name, "pod-uid", "foo"))},
		{name: "audience of an ephemeral volume's CSI driver", pods: pods, csiDrivers: drivers, pvcs: pvcs, pvs: pvs, gateChanges: restricted,
			attrs: token(tokenRequest(ephemeralPod.Name, "pod-uid", "foo"))},
		{name: "audience an ephemeral volume's CSI driver does not request", pods: pods, csiDrivers: drivers, pvcs: pvcs, pvs: pvs, gateChanges: restricted, err: notAuthorizedBar,
			authz: audienceAuthorizer(t, "bar", authorizer.DecisionDeny), attrs: token(tokenRequest(ephemeralPod.Name, "pod-uid", "bar"))},
		// Upstream's name says the gate is off, but it is on: the inline
		// CSI volume matches after the missing claim.
		{name: "claim not found but a later CSI volume matches", pods: pods, csiDrivers: drivers, pvcs: noPVCs, gateChanges: restricted,
			attrs: token(tokenRequest(claimAndCSIPod.Name, "pod-uid", "foo"))},
		{name: "claim's volume not found but a later CSI volume matches", pods: pods, csiDrivers: drivers, pvcs: pvcs, pvs: noPVs, gateChanges: restricted,
			attrs: token(tokenRequest(claimAndCSIPod.Name, "pod-uid", "foo"))},
		{name: "restriction off: volumes are not looked up", pods: pods, csiDrivers: drivers, pvcs: pvcs, pvs: noPVs, gateChanges: unrestricted,
			attrs: token(tokenRequest(claimAndCSIPod.Name, "pod-uid", "foo"))},
		{name: "restriction off: drivers are not looked up", pods: pods, csiDrivers: noDrivers, gateChanges: unrestricted,
			attrs: token(tokenRequest(csiPod.Name, "pod-uid", "foo"))},
		{name: "audience of an in-tree volume's migrated CSI driver", pods: pods, csiDrivers: drivers, pvcs: pvcs, pvs: pvs, gateChanges: restricted,
			attrs: token(tokenRequest(azureClaimPod.Name, "pod-uid", "foo"))},
		{name: "audience of an inline in-tree volume's migrated CSI driver", pods: pods, csiDrivers: drivers, gateChanges: restricted,
			attrs: token(tokenRequest(inlineAzurePod.Name, "pod-uid", "foo"))},
		{name: "audience the pod does not use, authorizer allows", pods: pods, csiDrivers: noDrivers, pvcs: noPVCs, pvs: noPVs, gateChanges: restricted,
			authz: audienceAuthorizer(t, "foo", authorizer.DecisionAllow), attrs: token(tokenRequest("mypod", "pod-uid", "foo"))},
		{name: "audience the pod does not use, no role grants it", pods: pods, csiDrivers: noDrivers, pvcs: noPVCs, pvs: noPVs, gateChanges: restricted, err: notAuthorizedFoo,
			authz: audienceAuthorizer(t, "foo", authorizer.DecisionDeny), attrs: token(tokenRequest("mypod", "pod-uid", "foo"))},
	}
}

func otherCases(t *testing.T) []admitCase {
	var (
		pods     = podLister(t, testPod("ns", "unboundpod", "", false))
		noPods   = podLister(t)
		unbound  = testPod("ns", "unboundpod", "", false)
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
			return request(o, oo, leaseKind, gvrLeases, l.Namespace, l.Name, "", op, userMyNode)
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
			return request(obj, old, csiNodeKind, gvrCSINodes, "", name, sub, op, userMyNode)
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
		volumeHealth = map[featuregate.Feature]bool{CSIVolumeHealth: true}
	)
	return []admitCase{
		// Resources the plugin does not restrict.
		{name: "create a config map", pods: pods, attrs: request(&corev1.ConfigMap{}, nil, cmKind, gvrConfigMap, "myns", "mycm", "", admission.Create, userMyNode)},
		{name: "update a config map", pods: pods, attrs: request(&corev1.ConfigMap{}, &corev1.ConfigMap{}, cmKind, gvrConfigMap, "myns", "mycm", "", admission.Update, userMyNode)},
		{name: "delete a config map", pods: pods, attrs: request(nil, nil, cmKind, gvrConfigMap, "myns", "mycm", "", admission.Delete, userMyNode)},

		// Someone who is not a node.
		{name: "bob creates a pod", pods: noPods, attrs: request(unbound, nil, kindPod, gvrPods, "ns", "unboundpod", "", admission.Create, userBob)},
		{name: "bob updates a pod", pods: pods, attrs: request(unbound, unbound, kindPod, gvrPods, "ns", "unboundpod", "", admission.Update, userBob)},
		{name: "bob deletes a pod", pods: pods, attrs: request(nil, nil, kindPod, gvrPods, "ns", "unboundpod", "", admission.Delete, userBob)},
		{name: "bob creates pod status", pods: noPods, attrs: request(unbound, nil, kindPod, gvrPods, "ns", "unboundpod", "status", admission.Create, userBob)},
		{name: "bob updates pod status", pods: pods, attrs: request(unbound, unbound, kindPod, gvrPods, "ns", "unboundpod", "status", admission.Update, userBob)},
		{name: "bob deletes pod status", pods: pods, attrs: request(nil, nil, kindPod, gvrPods, "ns", "unboundpod", "status", admission.Delete, userBob)},

		// Node leases.
		{name: "create a lease outside kube-node-lease", err: "forbidden: ", attrs: leaseReq(leaseWrongNS, nil, leaseWrongNS, admission.Create)},
		{name: "update a lease outside kube-node-lease", err: "forbidden: ", attrs: leaseReq(leaseWrongNS, leaseWrongNS, leaseWrongNS, admission.Update)},
		{name: "delete a lease outside kube-node-lease", err: "forbidden: ", attrs: leaseReq(nil, nil, leaseWrongNS, admission.Delete)},
		{name: "create another node's lease", err: "forbidden: ", attrs: leaseReq(leaseWrongName, nil, leaseWrongName, admission.Create)},
		{name: "update another node's lease", err: "forbidden: ", attrs: leaseReq(leaseWrongName, leaseWrongName, leaseWrongName, admission.Update)},
		{name: "delete another node's lease", err: "forbidden: ", attrs: leaseReq(nil, nil, leaseWrongName, admission.Delete)},
		{name: "create my lease", attrs: leaseReq(lease, nil, lease, admission.Create)},
		{name: "update my lease", attrs: leaseReq(lease, lease, lease, admission.Update)},
		{name: "delete my lease", attrs: leaseReq(nil, nil, lease, admission.Delete)},

		// CSINodes.
		{name: "create another node's CSINode", err: "forbidden: ", attrs: csiReq(csiNodeOther, nil, "foo", "", admission.Create)},
		{name: "update another node's CSINode", err: "forbidden: ", attrs: csiReq(csiNodeOther, csiNodeOther, "foo", "", admission.Update)},
		{name: "delete another node's CSINode", err: "forbidden: ", attrs: csiReq(nil, nil, "foo", "", admission.Delete)},
		{name: "create my CSINode", attrs: csiReq(csiNode, nil, "mynode", "", admission.Create)},
		{name: "update my CSINode", attrs: csiReq(csiNode, csiNode, "mynode", "", admission.Update)},
		{name: "delete my CSINode", attrs: csiReq(nil, nil, "mynode", "", admission.Delete)},
		{name: "report storage health, gate off", err: "CSIVolumeHealth feature gate is disabled", attrs: csiReq(healthReport, csiNode, "mynode", "status", admission.Update)},
		{name: "report storage health", gateChanges: volumeHealth, attrs: csiReq(healthReport, csiNode, "mynode", "status", admission.Update)},
		{name: "report another node's storage health", gateChanges: volumeHealth, err: "forbidden: ", attrs: csiReq(csiNodeOther, csiNodeOther, "foo", "status", admission.Update)},
		{name: "change the CSINode spec through status", gateChanges: volumeHealth, err: "forbidden: ", attrs: csiReq(specChange, csiNode, "mynode", "status", admission.Update)},

		// Certificate signing requests.
		{name: "serving CSR for my node", attrs: csrRequest(t, "system:node:mynode", certificatesv1.KubeletServingSignerName, true, userMyNode)},
		{name: "client CSR for my node", attrs: csrRequest(t, "system:node:mynode", certificatesv1.KubeAPIServerClientKubeletSignerName, true, userMyNode)},
		{name: "CSR for another signer", attrs: csrRequest(t, "some-other-identity", certificatesv1.KubeAPIServerClientSignerName, true, userMyNode)},
		{name: "serving CSR for another node", err: "forbidden: can only create a node CSR with CN=system:node:mynode",
			attrs: csrRequest(t, "system:node:othernode", certificatesv1.KubeletServingSignerName, true, userMyNode)},
		{name: "serving CSR for another node, insecure CSRs allowed", gateChanges: map[featuregate.Feature]bool{AllowInsecureKubeletCertificateSigningRequests: true},
			attrs: csrRequest(t, "system:node:othernode", certificatesv1.KubeletServingSignerName, true, userMyNode)},
		{name: "CSR that does not parse", err: "unable to parse csr: asn1: syntax error: sequence truncated",
			attrs: csrRequest(t, "system:node:mynode", certificatesv1.KubeletServingSignerName, false, userMyNode)},
	}
}

func podCertificateCases(t *testing.T) []admitCase {
	node1User := &user.DefaultInfo{Name: "system:node:pcr-node-1", Groups: []string{user.NodesGroup}}
	node2User := &user.DefaultInfo{Name: "system:node:pcr-node-2", Groups: []string{user.NodesGroup}}
	sas := corev1listers.NewServiceAccountLister(indexer(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pcr-sa", UID: "pcr-sa-uid"}}))
	// Upstream's second node object repeats node 1's name and UID.
	nodes := nodeLister(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "pcr-node-1", UID: "pcr-node-1-uid"}})
	certPod := func(name, signer string) *corev1.Pod {
		p := testPod("ns", name, "pcr-node-1", false)
		p.Spec.ServiceAccountName = "pcr-sa"
		if signer != "" {
			p.Spec.Volumes = []corev1.Volume{{Name: "pod-cert", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{SignerName: signer}}},
			}}}}
		}
		return p
	}
	pods := podLister(t, certPod("pcrpod", "example.com/foo"), certPod("pcrpod-novolume", ""), certPod("pcrpod-wrongsigner", "example.com/other"))
	on := map[featuregate.Feature]bool{PodCertificateRequest: true}
	c := func(name string, attrs admission.Attributes, authz authorizer.UnconditionalAuthorizer, gates map[featuregate.Feature]bool, err string) admitCase {
		return admitCase{name: name, pods: pods, sas: sas, nodes: nodes, attrs: attrs, authz: authz, gateChanges: gates, err: err}
	}
	never := refusingAuthorizer{t}
	return []admitCase{
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
			signerAuthorizer(t, node1User, authorizer.DecisionDeny), on,
			`pod "ns/pcrpod-novolume" does not mount a podCertificate projected volume for signer "example.com/foo"`),
		c("no podCertificate volume, authorizer has no opinion", pcrRequest("ns", "pcrpod-novolume", "pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User),
			signerAuthorizer(t, node1User, authorizer.DecisionNoOpinion), on,
			`pod "ns/pcrpod-novolume" does not mount a podCertificate projected volume for signer "example.com/foo"`),
		c("podCertificate volume for another signer", pcrRequest("ns", "pcrpod-wrongsigner", "pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User),
			signerAuthorizer(t, node1User, authorizer.DecisionDeny), on,
			`pod "ns/pcrpod-wrongsigner" does not mount a podCertificate projected volume for signer "example.com/foo"`),
		c("no podCertificate volume, authorizer allows", pcrRequest("ns", "pcrpod-novolume", "pod-uid", "pcr-sa", "pcr-sa-uid", "pcr-node-1", "pcr-node-1-uid", node1User),
			signerAuthorizer(t, node1User, authorizer.DecisionAllow), on, ""),
	}
}
