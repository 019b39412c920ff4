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
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

// DaemonConfig holds service account kube-system/agent to its node, with
// its own allowances next to the kubelets' ones, so that the cases can
// tell the two apart.
func DaemonConfig() *v1alpha1.Configuration {
	return &v1alpha1.Configuration{
		TypeMeta:         metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind},
		AllowedTaintKeys: []string{"example.com/maintenance"},
		NodeScopedServiceAccounts: []v1alpha1.NodeScopedServiceAccount{{
			Namespace:            "kube-system",
			Name:                 "agent",
			AllowedLabelPrefixes: []string{"feature.node.kubernetes.io"},
			AllowedTaintKeys:     []string{"agent.example.com/not-ready"},
		}},
	}
}

// DaemonUser is service account ns/name authenticated with a token bound
// to a pod on node (no node at all when node is empty), with the extras
// kube-apiserver 1.37 gives such a token.
func DaemonUser(namespace, name, node string) *user.DefaultInfo {
	u := &user.DefaultInfo{
		Name:   serviceaccount.MakeUsername(namespace, name),
		Groups: []string{serviceaccount.AllServiceAccountsGroup, serviceaccount.MakeNamespaceGroupName(namespace), user.AllAuthenticated},
		Extra:  map[string][]string{},
	}
	if node != "" {
		u.Extra[serviceaccount.PodNameKey] = []string{name + "-x7k2p"}
		u.Extra[serviceaccount.PodUIDKey] = []string{"daemon-pod-uid"}
		u.Extra[serviceaccount.NodeNameKey] = []string{node}
		u.Extra[serviceaccount.NodeUIDKey] = []string{node + "-uid"}
	}
	return u
}

// daemonCases judge the requests of a node-scoped service account.
func daemonCases() []Case {
	cfg := DaemonConfig()
	agent := DaemonUser("kube-system", "agent", "mynode")
	legacy := DaemonUser("kube-system", "agent", "")
	twoNodes := DaemonUser("kube-system", "agent", "mynode")
	twoNodes.Extra[serviceaccount.NodeNameKey] = []string{"mynode", "othernode"}
	unlisted := DaemonUser("kube-system", "other-agent", "mynode")
	// As long as the listed name, which the plugin's length filter lets
	// through to the lookup.
	sameLength := DaemonUser("kube-system", "agenx", "mynode")
	elsewhere := DaemonUser("default", "agent", "mynode")

	node := func(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	notReady := corev1.Taint{Key: "agent.example.com/not-ready", Effect: corev1.TaintEffectNoSchedule}
	maint := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}
	nodeUpdate := func(name string, u user.Info, obj, old *corev1.Node, sub, err string) Case {
		return Case{Name: name, Config: cfg, Err: err, Attrs: Request(obj, old, kindNode, gvrNodes, "", old.Name, sub, admission.Update, u)}
	}

	mine := newPod("ns", "mypod", "mynode", false)
	theirs := newPod("ns", "otherpod", "othernode", false)
	pods := podList(mine, theirs)
	podUpdate := func(name string, pod *corev1.Pod, sub, err string) Case {
		changed := pod.DeepCopy()
		changed.Spec.Containers = []corev1.Container{{Name: "c", Image: "registry.example.com/c:2"}}
		changed.Status.Phase = corev1.PodFailed
		return Case{Name: name, Config: cfg, Pods: pods, Err: err, Attrs: Request(changed, pod, kindPod, gvrPods, "ns", pod.Name, sub, admission.Update, agent)}
	}
	eviction := func(pod string) *policyv1.Eviction {
		return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: pod}}
	}

	slice := func(node *string) *resourcev1.ResourceSlice {
		return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: node}}
	}
	kindSlice := resourcev1.SchemeGroupVersion.WithKind("ResourceSlice")
	sliceRequest := func(name string, obj, old *resourcev1.ResourceSlice, op admission.Operation, err string) Case {
		// A nil *ResourceSlice would reach the plugin as a non-nil object.
		object := func(s *resourcev1.ResourceSlice) runtime.Object {
			if s == nil {
				return nil
			}
			return s
		}
		return Case{Name: name, Config: cfg, Err: err, Attrs: Request(object(obj), object(old), kindSlice, gvrSlices, "", "s", "", op, agent)}
	}
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent-state"}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent"}}
	gvrLeasesV1 := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

	const heldTo = `service account kube-system/agent is held to node "mynode": `
	return []Case{
		// Its own Node: the kubelet's rules, with its own allowances.
		nodeUpdate("daemon: label under its allowed prefix on its node", agent,
			node("mynode", map[string]string{"feature.node.kubernetes.io/cpu-avx2": "true"}), node("mynode", nil), "", ""),
		nodeUpdate("daemon: label outside kubernetes.io on its node", agent,
			node("mynode", map[string]string{"gpu.example.com/present": "true"}), node("mynode", nil), "", ""),
		nodeUpdate("daemon: kubernetes.io label it is not allowed", agent,
			node("mynode", map[string]string{"node-role.kubernetes.io/gpu": ""}), node("mynode", nil), "",
			heldTo+"is not allowed to modify labels: node-role.kubernetes.io/gpu"),
		nodeUpdate("daemon: reserved label", agent,
			node("mynode", map[string]string{"node-restriction.kubernetes.io/trusted": "yes"}), node("mynode", nil), "",
			"is not allowed to modify labels: node-restriction.kubernetes.io/trusted"),
		nodeUpdate("daemon: removes its allowed taint", agent, node("mynode", nil), node("mynode", nil, notReady), "", ""),
		nodeUpdate("daemon: removes its allowed taint through status", agent, node("mynode", nil), node("mynode", nil, notReady), "status", ""),
		nodeUpdate("daemon: the kubelets' allowed taint is not its own", agent, node("mynode", nil), node("mynode", nil, maint), "",
			heldTo+`node "mynode" is not allowed to modify taints`),
		nodeUpdate("kubelet: a daemon's allowed taint is not the kubelet's", UserMyNode, node("mynode", nil), node("mynode", nil, notReady), "",
			`node "mynode" is not allowed to modify taints`),
		nodeUpdate("daemon: ownerReferences", agent, func() *corev1.Node {
			n := node("mynode", nil)
			n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "othernode", UID: "x"}}
			return n
		}(), node("mynode", nil), "", "is not allowed to modify ownerReferences"),
		nodeUpdate("daemon: another node", agent,
			node("othernode", map[string]string{"gpu.example.com/present": "true"}), node("othernode", nil), "",
			heldTo+`node "mynode" is not allowed to modify node "othernode"`),
		nodeUpdate("daemon: another node's status", agent, node("othernode", nil), node("othernode", nil, notReady), "status",
			`is not allowed to modify node "othernode"`),
		{Name: "daemon: registering a node", Config: cfg, Err: heldTo + "may not create or delete nodes, only update its own",
			Attrs: Request(node("mynode", nil), nil, kindNode, gvrNodes, "", "mynode", "", admission.Create, agent)},
		{Name: "daemon: deleting its own node", Config: cfg, Err: "may not create or delete nodes",
			Attrs: Request(nil, node("mynode", nil), kindNode, gvrNodes, "", "mynode", "", admission.Delete, agent)},

		// Pods bound to its node, and only those.
		podUpdate("daemon: updates a pod on its node", mine, "", ""),
		podUpdate("daemon: updates a pod on another node", theirs, "", heldTo+`can only update pods with spec.nodeName set to its node, not "othernode"`),
		podUpdate("daemon: ephemeral container in a pod on another node", theirs, "ephemeralcontainers", `spec.nodeName set to its node, not "othernode"`),
		podUpdate("daemon: resizes a pod on its node", mine, "resize", ""),
		podUpdate("daemon: status of a pod on its node", mine, "status", ""),
		podUpdate("daemon: status of a pod on another node", theirs, "status",
			heldTo+`node "mynode" can only update pod status for pods with spec.nodeName set to itself`),
		{Name: "daemon: pod status cannot relabel", Config: cfg, Pods: pods, Err: `node "mynode" cannot update labels through pod status`,
			Attrs: Request(relabeled(mine, map[string]string{"app": "x"}), mine, kindPod, gvrPods, "ns", "mypod", "status", admission.Update, agent)},
		{Name: "daemon: deletes a pod on its node", Config: cfg, Pods: pods,
			Attrs: Request(nil, mine, kindPod, gvrPods, "ns", "mypod", "", admission.Delete, agent)},
		{Name: "daemon: deletes a pod on another node", Config: cfg, Pods: pods, Err: `node "mynode" can only delete pods with spec.nodeName set to itself`,
			Attrs: Request(nil, theirs, kindPod, gvrPods, "ns", "otherpod", "", admission.Delete, agent)},
		{Name: "daemon: evicts a pod on its node", Config: cfg, Pods: pods,
			Attrs: Request(eviction("mypod"), nil, kindEviction, gvrPods, "ns", "mypod", "eviction", admission.Create, agent)},
		{Name: "daemon: evicts a pod on another node", Config: cfg, Pods: pods, Err: "node mynode can only evict pods with spec.nodeName set to itself",
			Attrs: Request(eviction("otherpod"), nil, kindEviction, gvrPods, "ns", "otherpod", "eviction", admission.Create, agent)},
		{Name: "daemon: creates a pod on its node", Config: cfg, Pods: pods, Err: heldTo + "may not create pods, only update, evict and delete pods bound to its node",
			Attrs: Request(newPod("ns", "new", "mynode", false), nil, kindPod, gvrPods, "ns", "new", "", admission.Create, agent)},
		{Name: "daemon: binds a pod", Config: cfg, Pods: pods, Err: "may not create pods/binding",
			Attrs: Request(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mypod"}, Target: corev1.ObjectReference{Kind: "Node", Name: "mynode"}},
				nil, corev1.SchemeGroupVersion.WithKind("Binding"), gvrPods, "ns", "mypod", "binding", admission.Create, agent)},

		// ResourceSlices of its node, and only those.
		sliceRequest("daemon: publishes a slice of its node", slice(ptr.To("mynode")), nil, admission.Create, ""),
		sliceRequest("daemon: publishes a slice of another node", slice(ptr.To("othernode")), nil, admission.Create,
			heldTo+"can only create ResourceSlice with the same NodeName as the requesting node"),
		sliceRequest("daemon: publishes a slice for no node", slice(nil), nil, admission.Create, "can only create ResourceSlice with the same NodeName"),
		sliceRequest("daemon: updates a slice of its node", slice(ptr.To("mynode")), slice(ptr.To("mynode")), admission.Update, ""),
		sliceRequest("daemon: updates a slice of another node", slice(ptr.To("othernode")), slice(ptr.To("othernode")), admission.Update,
			"can only update ResourceSlice with the same NodeName as the requesting node"),
		sliceRequest("daemon: takes over another node's slice", slice(ptr.To("mynode")), slice(ptr.To("othernode")), admission.Update,
			"can only update ResourceSlice with the same NodeName"),
		sliceRequest("daemon: deletes a slice of its node", nil, slice(ptr.To("mynode")), admission.Delete, ""),
		sliceRequest("daemon: deletes a slice of another node", nil, slice(ptr.To("othernode")), admission.Delete,
			"can only delete ResourceSlice with the same NodeName as the requesting node"),
		{Name: "kubelet: updates to another node's slice stay the Node authorizer's", Config: cfg,
			Attrs: Request(slice(ptr.To("othernode")), slice(ptr.To("othernode")), kindSlice, gvrSlices, "", "s", "", admission.Update, UserMyNode)},

		// A credential that names no node.
		{Name: "daemon without a node: updates a pod", Config: cfg, Pods: pods,
			Err:   "NodeRestriction holds service account kube-system/agent to the node its pod runs on, but this credential names no single node in its authentication.kubernetes.io/node-name extra",
			Attrs: Request(mine, mine, kindPod, gvrPods, "ns", "mypod", "", admission.Update, legacy)},
		{Name: "daemon without a node: writes a config map", Config: cfg, Err: "this credential names no single node",
			Attrs: Request(configMap, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), gvrConfigMap, "kube-system", "agent-state", "", admission.Create, legacy)},
		{Name: "daemon naming two nodes", Config: cfg, Err: "this credential names no single node",
			Attrs: Request(node("mynode", nil), node("mynode", nil), kindNode, gvrNodes, "", "mynode", "", admission.Update, twoNodes)},

		// What no daemon rule covers, and accounts that are not listed.
		{Name: "daemon: writes a config map", Config: cfg,
			Attrs: Request(configMap, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), gvrConfigMap, "kube-system", "agent-state", "", admission.Create, agent)},
		{Name: "daemon: takes a lease", Config: cfg,
			Attrs: Request(lease, nil, coordinationv1.SchemeGroupVersion.WithKind("Lease"), gvrLeasesV1, "kube-system", "agent", "", admission.Create, agent)},
		{Name: "unlisted service account on a node: another node", Config: cfg,
			Attrs: Request(node("othernode", map[string]string{"x": "y"}), node("othernode", nil), kindNode, gvrNodes, "", "othernode", "", admission.Update, unlisted)},
		{Name: "unlisted service account named as long as the listed one: another node", Config: cfg,
			Attrs: Request(node("othernode", map[string]string{"x": "y"}), node("othernode", nil), kindNode, gvrNodes, "", "othernode", "", admission.Update, sameLength)},
		{Name: "same name in another namespace: another node's pod", Config: cfg, Pods: pods,
			Attrs: Request(theirs, theirs, kindPod, gvrPods, "ns", "otherpod", "", admission.Update, elsewhere)},
		{Name: "listed account without a configuration of daemons", Pods: pods,
			Attrs: Request(theirs, theirs, kindPod, gvrPods, "ns", "otherpod", "", admission.Update, agent)},
	}
}
