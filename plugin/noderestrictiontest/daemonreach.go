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
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// daemonReachCases judge what a node-scoped account reaches beyond
// writes to Nodes, pods and slices: CONNECT into pods and kubelets, node
// Leases, CSINodes, the items of a DeleteCollection, ResourceClaim status
// and, without a node, its self reviews. Kubelets' requests beside them
// show that the kubelets keep Kubernetes' behaviour.
func daemonReachCases() []Case {
	return append(append(append(connectCases(), heartbeatCases()...), collectionCases()...), append(claimStatusCases(), selfReviewCases()...)...)
}

func connectCases() []Case {
	cfg := DaemonConfig()
	agent := DaemonUser("kube-system", "agent", "mynode")
	legacy := DaemonUser("kube-system", "agent", "")
	pods := podList(newPod("ns", "mypod", "mynode", false), newPod("ns", "otherpod", "othernode", false))
	const heldTo = `service account kube-system/agent is held to node "mynode": `

	podConnect := func(name, sub, target string, u user.Info, err string) Case {
		var opts runtime.Object
		var kind string
		switch sub {
		case "exec":
			opts, kind = &corev1.PodExecOptions{Command: []string{"sh"}}, "PodExecOptions"
		case "attach":
			opts, kind = &corev1.PodAttachOptions{Stdin: true}, "PodAttachOptions"
		case "portforward":
			opts, kind = &corev1.PodPortForwardOptions{Ports: []int32{8080}}, "PodPortForwardOptions"
		default:
			opts, kind = &corev1.PodProxyOptions{Path: "/"}, "PodProxyOptions"
		}
		return Case{Name: name, Config: cfg, Pods: pods, Err: err,
			Attrs: Request(opts, nil, corev1.SchemeGroupVersion.WithKind(kind), gvrPods, "ns", target, sub, admission.Connect, u)}
	}
	nodeProxy := func(name, target string, u user.Info, err string) Case {
		return Case{Name: name, Config: cfg, Err: err,
			Attrs: Request(&corev1.NodeProxyOptions{Path: "/pods"}, nil, corev1.SchemeGroupVersion.WithKind("NodeProxyOptions"), gvrNodes, "", target, "proxy", admission.Connect, u)}
	}
	return []Case{
		podConnect("daemon: exec into a pod on its node", "exec", "mypod", agent, ""),
		podConnect("daemon: exec into a pod on another node", "exec", "otherpod", agent,
			heldTo+`can only use pods/exec on pods with spec.nodeName set to its node, not "othernode"`),
		podConnect("daemon: attach to a pod on its node", "attach", "mypod", agent, ""),
		podConnect("daemon: attach to a pod on another node", "attach", "otherpod", agent, `can only use pods/attach on pods with spec.nodeName set to its node, not "othernode"`),
		podConnect("daemon: port-forward to a pod on its node", "portforward", "mypod", agent, ""),
		podConnect("daemon: port-forward to a pod on another node", "portforward", "otherpod", agent, `can only use pods/portforward on pods with spec.nodeName set to its node, not "othernode"`),
		podConnect("daemon: proxy to a pod on its node, by port", "proxy", "mypod:8080", agent, ""),
		podConnect("daemon: proxy to a pod on another node, by scheme and port", "proxy", "https:otherpod:8443", agent,
			`can only use pods/proxy on pods with spec.nodeName set to its node, not "othernode"`),
		podConnect("daemon: proxy with a malformed name", "proxy", "a:b:c:d", agent, `invalid proxy request name "a:b:c:d"`),
		podConnect("daemon: exec into a pod the informer has not seen", "exec", "newpod", agent, `pod "newpod" not found`),
		podConnect("daemon without a node: exec into a pod on its node", "exec", "mypod", legacy, "this credential names no single node"),
		podConnect("kubelet: exec into a pod on another node is not judged, as Kubernetes' plugin never sees CONNECT", "exec", "otherpod", UserMyNode, ""),
		podConnect("kubelet without a name: CONNECT is not judged either", "exec", "otherpod", &user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}, ""),
		nodeProxy("daemon: its own kubelet's API", "mynode", agent, ""),
		nodeProxy("daemon: its own kubelet's API, by scheme and port", "https:mynode:10250", agent, ""),
		nodeProxy("daemon: another node's kubelet API", "othernode", agent, heldTo+`can only use nodes/proxy on its own node, not on node "othernode"`),
		nodeProxy("daemon: another node's kubelet API, by port", "othernode:10250", agent, `not on node "othernode"`),
		nodeProxy("kubelet: another node's kubelet API is not judged", "othernode", UserMyNode, ""),
	}
}

func heartbeatCases() []Case {
	cfg := DaemonConfig()
	agent := DaemonUser("kube-system", "agent", "mynode")
	kindLease := coordinationv1.SchemeGroupVersion.WithKind("Lease")
	lease := func(namespace, name string) *coordinationv1.Lease {
		holder := name
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	}
	leaseRequest := func(name string, l *coordinationv1.Lease, op admission.Operation, err string) Case {
		var obj, old runtime.Object = l, nil
		switch op {
		case admission.Update:
			old = l
		case admission.Delete:
			obj, old = nil, l
		}
		return Case{Name: name, Config: cfg, Err: err, Attrs: Request(obj, old, kindLease, gvrLeases, l.Namespace, l.Name, "", op, agent)}
	}
	kindCSINode := storagev1.SchemeGroupVersion.WithKind("CSINode")
	csiNode := func(name string) *storagev1.CSINode {
		return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "csi.example.com", NodeID: name}}}}
	}
	csiRequest := func(name string, n *storagev1.CSINode, op admission.Operation, err string) Case {
		var old runtime.Object
		if op == admission.Update {
			old = csiNode(n.Name)
		}
		return Case{Name: name, Config: cfg, Err: err, Attrs: Request(n, old, kindCSINode, gvrCSINodes, "", n.Name, "", op, agent)}
	}
	return []Case{
		leaseRequest("daemon: renews its node's lease", lease(corev1.NamespaceNodeLease, "mynode"), admission.Update, ""),
		leaseRequest("daemon: renews another node's lease", lease(corev1.NamespaceNodeLease, "othernode"), admission.Update,
			`service account kube-system/agent is held to node "mynode": can only access node lease with the same name as the requesting node`),
		leaseRequest("daemon: creates another node's lease", lease(corev1.NamespaceNodeLease, "othernode"), admission.Create, "can only access node lease with the same name"),
		leaseRequest("daemon: deletes another node's lease", lease(corev1.NamespaceNodeLease, "othernode"), admission.Delete, "can only access node lease with the same name"),
		leaseRequest("daemon: its leader election lease elsewhere is RBAC's", lease("kube-system", "agent-leader"), admission.Update, ""),
		csiRequest("daemon: registers a driver on its node's CSINode", csiNode("mynode"), admission.Update, ""),
		csiRequest("daemon: another node's CSINode", csiNode("othernode"), admission.Update,
			`service account kube-system/agent is held to node "mynode": can only access CSINode with the same name as the requesting node`),
		csiRequest("daemon: creates another node's CSINode", csiNode("othernode"), admission.Create, "can only access CSINode with the same name"),
	}
}

// collectionCases are the items of a DeleteCollection of pods, which the
// server admits one by one with no name and the item as the old object.
func collectionCases() []Case {
	cfg := DaemonConfig()
	agent := DaemonUser("kube-system", "agent", "mynode")
	mine := newPod("ns", "mypod", "mynode", false)
	theirs := newPod("ns", "otherpod", "othernode", false)
	pods := podList(mine, theirs)
	item := func(name string, pod *corev1.Pod, u user.Info, c *Case) Case {
		c.Name, c.Pods = name, pods
		c.Attrs = Request(nil, pod, kindPod, gvrPods, "ns", "", "", admission.Delete, u)
		return *c
	}
	return []Case{
		item("daemon: a collection's pod on its node", mine, agent, &Case{Config: cfg}),
		item("daemon: a collection's pod on another node", theirs, agent, &Case{Config: cfg,
			Err: `service account kube-system/agent is held to node "mynode": node "mynode" can only delete pods with spec.nodeName set to itself`}),
		// Kubernetes' plugin looks the pod up by the empty name, and so
		// refuses with a not-found error, which the server's
		// DeleteCollection drops: a kubelet keeps that.
		item("kubelet: a collection's pod on its node", mine, UserMyNode, &Case{Err: `pod "" not found`}),
	}
}

func claimStatusCases() []Case {
	cfg := DaemonConfig()
	agent := DaemonUser("kube-system", "agent", "mynode")
	kindClaim := resourcev1.SchemeGroupVersion.WithKind("ResourceClaim")
	gvrClaims := schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"}
	byName := func(node string) *corev1.NodeSelector {
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}
	}
	byLabel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}}}}}}
	claim := func(selector *corev1.NodeSelector, allocated bool) *resourcev1.ResourceClaim {
		c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gpu"}}
		if allocated {
			c.Status.Allocation = &resourcev1.AllocationResult{NodeSelector: selector, Devices: resourcev1.DeviceAllocationResult{
				Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "p", Device: "gpu-0"}}}}
		}
		return c
	}
	withDeviceStatus := func(c *resourcev1.ResourceClaim) *resourcev1.ResourceClaim {
		c = c.DeepCopy()
		c.Status.Devices = []resourcev1.AllocatedDeviceStatus{{Driver: "gpu.example.com", Pool: "p", Device: "gpu-0",
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Up"}}}}
		return c
	}
	status := func(name string, obj, old *resourcev1.ResourceClaim, sub string, u user.Info, err string) Case {
		return Case{Name: name, Config: cfg, Err: err, Attrs: Request(obj, old, kindClaim, gvrClaims, "ns", "gpu", sub, admission.Update, u)}
	}
	mine, theirs := claim(byName("mynode"), true), claim(byName("othernode"), true)
	return []Case{
		status("daemon: device status of a claim allocated on its node", withDeviceStatus(mine), mine, "status", agent, ""),
		status("daemon: device status of a claim allocated on another node", withDeviceStatus(theirs), theirs, "status", agent,
			`service account kube-system/agent is held to node "mynode": can only update the status of ResourceClaims allocated on its node (status.allocation.nodeSelector selecting metadata.name "mynode" alone), not of a claim allocated on node "othernode"`),
		status("daemon: status of a claim not allocated", withDeviceStatus(claim(nil, false)), claim(nil, false), "status", agent, "not of a claim allocated on no single named node"),
		status("daemon: status of a claim allocated by node label", withDeviceStatus(claim(byLabel, true)), claim(byLabel, true), "status", agent, "not of a claim allocated on no single named node"),
		status("daemon: status of a claim allocated on every node", withDeviceStatus(claim(nil, true)), claim(nil, true), "status", agent, "not of a claim allocated on no single named node"),
		status("daemon: moving another node's allocation to its own", withDeviceStatus(mine), theirs, "status", agent, `not of a claim allocated on node "othernode"`),
		status("daemon: deallocating a claim of its node", claim(nil, false), mine, "status", agent, "not of a claim allocated on no single named node"),
		status("daemon: the claim itself is RBAC's", theirs, theirs, "", agent, ""),
		status("kubelet: claim status has no kubelet rule", withDeviceStatus(theirs), theirs, "status", UserMyNode, ""),
	}
}

func selfReviewCases() []Case {
	cfg := DaemonConfig()
	legacy := DaemonUser("kube-system", "agent", "")
	review := func(name string, obj runtime.Object, gvk schema.GroupVersionKind, resource, err string) Case {
		gvr := gvk.GroupVersion().WithResource(resource)
		return Case{Name: name, Config: cfg, Err: err, Attrs: Request(obj, nil, gvk, gvr, "", "", "", admission.Create, legacy)}
	}
	return []Case{
		review("daemon without a node: kubectl auth whoami", &authenticationv1.SelfSubjectReview{},
			authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), "selfsubjectreviews", ""),
		review("daemon without a node: kubectl auth can-i", &authorizationv1.SelfSubjectAccessReview{},
			authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), "selfsubjectaccessreviews", ""),
		review("daemon without a node: kubectl auth can-i --list", &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns"}},
			authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"), "selfsubjectrulesreviews", ""),
		review("daemon without a node: a review of another subject", &authorizationv1.SubjectAccessReview{},
			authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"), "subjectaccessreviews", "this credential names no single node"),
	}
}
