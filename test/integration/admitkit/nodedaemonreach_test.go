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

package admitkit

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// heldTo is how every refusal of the agent begins, after the object.
const heldTo = `service account nr-daemon/agent is held to node "node-1"`

// whenSeen retries request while it is answered NotFound: in-process,
// requests judged on the plugin's pod informer (deletes, CONNECT) get
// NotFound for a pod the informer has not seen yet. (The webhook server's
// NodeRestriction GETs the pod instead, and sees it at once.)
func whenSeen(request func(ctx context.Context) error) error {
	var last error
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = request(ctx)
		return !apierrors.IsNotFound(last), nil
	})
	return last
}

// expectAdmitted checks that a request admission let through failed, if
// at all, for another reason: no kubelet runs here, so CONNECT requests
// end when kube-apiserver looks for the node's address.
func expectAdmitted(t *testing.T, what string, err error) {
	t.Helper()
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || (err != nil && strings.Contains(err.Error(), "is held to node")) {
		t.Errorf("%s: %v, want it past admission", what, err)
	}
}

// connectRequest is a CONNECT request of the agent on a subresource of a
// pod (namespace set) or a Node, by the verb kubectl uses for it.
type connectRequest struct {
	verb, subresource string
	params            map[string]string
}

var podConnects = []connectRequest{
	{verb: "POST", subresource: "exec", params: map[string]string{"container": "c", "command": "true", "stdout": "true"}},
	{verb: "POST", subresource: "attach", params: map[string]string{"container": "c", "stdout": "true"}},
	{verb: "POST", subresource: "portforward", params: map[string]string{"ports": "8080"}},
	{verb: "GET", subresource: "proxy"},
}

func (c connectRequest) do(ctx context.Context, client kubernetes.Interface, namespace, resource, name string) error {
	var req *rest.Request
	if c.verb == "GET" {
		req = client.CoreV1().RESTClient().Get()
	} else {
		req = client.CoreV1().RESTClient().Post()
	}
	if namespace != "" {
		req = req.Namespace(namespace)
	}
	req = req.Resource(resource).Name(name).SubResource(c.subresource)
	for k, v := range c.params {
		req = req.Param(k, v)
	}
	return req.Do(ctx).Error()
}

// testDaemonConnect: exec, attach, port-forward and proxy reach the
// agent's node's pods and kubelet only.
func testDaemonConnect(t *testing.T, d *nodeDaemon) {
	for _, c := range podConnects {
		t.Run("pods/"+c.subresource, func(t *testing.T) {
			err := whenSeen(func(ctx context.Context) error { return c.do(ctx, d.daemon, daemonNamespace, "pods", d.theirs.Name) })
			expectForbidden(t, "a pod on node-2", err, heldTo, "can only use pods/"+c.subresource+` on pods with spec.nodeName set to its node, not "node-2"`)
			err = whenSeen(func(ctx context.Context) error { return c.do(ctx, d.daemon, daemonNamespace, "pods", d.mine.Name) })
			expectAdmitted(t, "a pod on node-1", err)
		})
	}
	t.Run("nodes/proxy", func(t *testing.T) {
		proxy := connectRequest{verb: "GET", subresource: "proxy"}
		err := proxy.do(context.Background(), d.daemon, "", "nodes", "node-2")
		expectForbidden(t, "node-2's kubelet", err, heldTo, `can only use nodes/proxy on its own node, not on node "node-2"`)
		expectAdmitted(t, "node-1's kubelet", proxy.do(context.Background(), d.daemon, "", "nodes", "node-1"))
	})
}

// testDaemonDeleteCollection: a DeleteCollection is judged pod by pod, by
// the pod being deleted: the agent's own node's pods go, and a selection
// with another node's pod in it is refused with the reason.
func testDaemonDeleteCollection(t *testing.T, d *nodeDaemon) {
	ctx := context.Background()
	for _, name := range []string{"sweep-a", "sweep-b"} {
		boundPod(t, d.admin, name, "node-1", "default", "sweep-own")
	}
	boundPod(t, d.admin, "sweep-mixed-1", "node-1", "default", "sweep-mixed")
	other := boundPod(t, d.admin, "sweep-mixed-2", "node-2", "default", "sweep-mixed")

	pods := d.daemon.CoreV1().Pods(daemonNamespace)
	now := metav1.DeleteOptions{GracePeriodSeconds: ptrTo[int64](0)}
	if err := pods.DeleteCollection(ctx, now, metav1.ListOptions{LabelSelector: "sweep-own"}); err != nil {
		t.Errorf("deleting the pods of its node: %v", err)
	}
	left, err := d.admin.CoreV1().Pods(daemonNamespace).List(ctx, metav1.ListOptions{LabelSelector: "sweep-own"})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d of its node's pods left after the DeleteCollection, want none", len(left.Items))
	}

	err = pods.DeleteCollection(ctx, now, metav1.ListOptions{LabelSelector: "sweep-mixed"})
	expectForbidden(t, "deleting pods of node-1 and node-2", err, heldTo, `node "node-1" can only delete pods with spec.nodeName set to itself`)
	kept, err := d.admin.CoreV1().Pods(daemonNamespace).Get(ctx, other.Name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("node-2's pod after the refused DeleteCollection: %v, want it kept", err)
	} else if kept.DeletionTimestamp != nil {
		t.Errorf("node-2's pod is being deleted after the refused DeleteCollection, want it kept")
	}
}

// allocatedClaim creates a ResourceClaim as the scheduler leaves it once it
// allocated a device of node's: one term selecting the node by name.
func allocatedClaim(t *testing.T, admin kubernetes.Interface, node string) *resourcev1.ResourceClaim {
	t.Helper()
	ctx := context.Background()
	claims := admin.ResourceV1().ResourceClaims(daemonNamespace)
	claim, err := claims.Create(ctx, &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-" + node},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a claim: %v", err)
	}
	claim.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: "gpu.example.com", Pool: node, Device: "gpu-0"},
		}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}},
		}}}},
	}
	claim, err = claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("allocating the claim on %s: %v", node, err)
	}
	return claim
}

// testDaemonClaimStatus: the agent, as a DRA driver, reports device status
// on claims allocated on its node only.
func testDaemonClaimStatus(t *testing.T, d *nodeDaemon) {
	ctx := context.Background()
	claims := d.daemon.ResourceV1().ResourceClaims(daemonNamespace)
	report := func(claim *resourcev1.ResourceClaim) error {
		claim.Status.Devices = []resourcev1.AllocatedDeviceStatus{{Driver: "gpu.example.com", Pool: claim.Status.Allocation.Devices.Results[0].Pool, Device: "gpu-0"}}
		_, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		return err
	}
	if err := report(allocatedClaim(t, d.admin, "node-1")); err != nil {
		t.Errorf("device status of a claim allocated on node-1: %v", err)
	}
	expectForbidden(t, "device status of a claim allocated on node-2", report(allocatedClaim(t, d.admin, "node-2")), heldTo,
		`can only update the status of ResourceClaims allocated on its node`, `not of a claim allocated on node "node-2"`)
}

// testDaemonLeases: the agent may hold its node's Lease in kube-node-lease
// by the kubelet's rule, and no other node's.
func testDaemonLeases(t *testing.T, d *nodeDaemon) {
	ctx := context.Background()
	lease := func(node string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptrTo(node), LeaseDurationSeconds: ptrTo[int32](40)},
		}
	}
	if _, err := d.admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease("node-2"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	leases := d.daemon.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	if _, err := leases.Create(ctx, lease("node-1"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Errorf("creating node-1's lease: %v", err)
	}
	renew := func(node string) error {
		l, err := leases.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	}
	if err := renew("node-1"); err != nil {
		t.Errorf("renewing node-1's lease: %v", err)
	}
	expectForbidden(t, "renewing node-2's lease", renew("node-2"), heldTo, "can only access node lease with the same name as the requesting node")
	expectForbidden(t, "deleting node-2's lease", leases.Delete(ctx, "node-2", metav1.DeleteOptions{}), heldTo, "same name as the requesting node")
}

// testDaemonCSINodes: the agent may write its node's CSINode by the
// kubelet's rule, and no other node's.
func testDaemonCSINodes(t *testing.T, d *nodeDaemon) {
	ctx := context.Background()
	csiNode := func(node string) *storagev1.CSINode {
		return &storagev1.CSINode{
			ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec:       storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "csi.example.com", NodeID: node}}},
		}
	}
	if _, err := d.admin.StorageV1().CSINodes().Create(ctx, csiNode("node-2"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	csiNodes := d.daemon.StorageV1().CSINodes()
	if _, err := csiNodes.Create(ctx, csiNode("node-1"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Errorf("creating node-1's CSINode: %v", err)
	}
	if err := csiNodes.Delete(ctx, "node-1", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting node-1's CSINode: %v", err)
	}
	_, err := csiNodes.Create(ctx, csiNode("node-9"), metav1.CreateOptions{})
	expectForbidden(t, "creating another node's CSINode", err, heldTo, "can only access CSINode with the same name as the requesting node")
	expectForbidden(t, "deleting node-2's CSINode", csiNodes.Delete(ctx, "node-2", metav1.DeleteOptions{}), heldTo, "same name as the requesting node")
}

// nodeNameExtra is the extra kube-apiserver gives a token bound to a pod
// on a node.
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// testDaemonSelfReview: `kubectl auth whoami` with the agent's token shows
// the node the token names.
func testDaemonSelfReview(t *testing.T, d *nodeDaemon) {
	who, canPatch := selfReviews(t, d.daemon)
	if who.Username != "system:serviceaccount:nr-daemon:agent" || !slices.Equal(who.Extra[nodeNameExtra], authenticationv1.ExtraValue{"node-1"}) || !canPatch {
		t.Errorf("auth whoami says %q with extras %v, auth can-i patch nodes says %v; want the agent on node-1, yes", who.Username, who.Extra, canPatch)
	}
}

// selfReviews makes the reviews `kubectl auth whoami` and `kubectl auth
// can-i patch nodes` make: who the client is, and whether RBAC lets it
// patch nodes.
func selfReviews(t *testing.T, client kubernetes.Interface) (authenticationv1.UserInfo, bool) {
	t.Helper()
	ctx := context.Background()
	who, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("auth whoami: %v", err)
		return authenticationv1.UserInfo{}, false
	}
	can, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "patch", Resource: "nodes"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("auth can-i: %v", err)
		return who.Status.UserInfo, false
	}
	return who.Status.UserInfo, can.Status.Allowed
}
