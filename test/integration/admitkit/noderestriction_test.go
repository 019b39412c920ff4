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
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/test/integration/framework"
)

func nodeClient(t *testing.T, node string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(server.NodeConfig(node))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// expectForbidden fails unless err is a 403 whose message has every want.
func expectForbidden(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want Forbidden", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

// registerNode has node create its own Node object (as a kubelet does),
// once, and returns it.
func registerNode(t *testing.T, node string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	client := nodeClient(t, node)
	n, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   node,
		Labels: map[string]string{"kubernetes.io/hostname": node, "topology.kubernetes.io/zone": "z1"},
	}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		n, err = framework.KubeClient(t, server.AdminConfig()).CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("%s registering itself: %v", node, err)
	}
	return n
}

func TestNodeRegistration(t *testing.T) {
	ctx := context.Background()
	registerNode(t, "node-1")
	client := nodeClient(t, "node-1")

	_, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-9"}}, metav1.CreateOptions{})
	expectForbidden(t, "node-1 creating node-9", err, `node "node-1" is not allowed to modify node "node-9"`)

	// Registering with a label in node-restriction.kubernetes.io is refused
	// (node-2 tries, so that node-1's registration above is not in the way).
	_, err = nodeClient(t, "node-2").CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   "node-2",
		Labels: map[string]string{"node-restriction.kubernetes.io/trusted": "yes"},
	}}, metav1.CreateOptions{})
	expectForbidden(t, "node-2 registering with a node-restriction label", err, "node-restriction.kubernetes.io/trusted")
}

func TestNodeSelfLabelling(t *testing.T) {
	registerNode(t, "node-1")
	nodes := nodeClient(t, "node-1").CoreV1().Nodes()
	label := func(key, value string) error {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
		_, err := nodes.Patch(context.Background(), "node-1", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	for _, key := range []string{
		"example.com/rack",               // outside kubernetes.io: always the node's own
		"topology.kubernetes.io/region",  // a kubelet label
		"node-role.kubernetes.io/worker", // allowedLabels
		"partner.kubernetes.io/gpu",      // allowedLabelPrefixes
	} {
		if err := label(key, "x"); err != nil {
			t.Errorf("node-1 setting its label %s: %v", key, err)
		}
	}
	for _, key := range []string{
		"node-restriction.kubernetes.io/trusted",
		"node-role.kubernetes.io/control-plane",
		"sub.partner.kubernetes.io/gpu", // a prefix allows only itself, not subdomains
	} {
		expectForbidden(t, "node-1 setting label "+key, label(key, "x"), "is not allowed to modify labels: "+key)
	}

	// Taints: the configured key may change, others not.
	taint := func(key string) error {
		n, err := nodes.Get(context.Background(), "node-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		_, err = nodes.Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	}
	if err := taint("example.com/maintenance"); err != nil {
		t.Errorf("node-1 adding the allowed taint: %v", err)
	}
	expectForbidden(t, "node-1 adding another taint", taint("example.com/other"), `node "node-1" is not allowed to modify taints`)
}

func TestNodeTouchingAnotherNode(t *testing.T) {
	ctx := context.Background()
	registerNode(t, "node-1")
	if _, err := framework.KubeClient(t, server.AdminConfig()).CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other-node"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	nodes := nodeClient(t, "node-1").CoreV1().Nodes()
	_, err := nodes.Patch(ctx, "other-node", types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/rack":"r2"}}}`), metav1.PatchOptions{})
	expectForbidden(t, "node-1 labelling other-node", err, `node "node-1" is not allowed to modify node "other-node"`)
	_, err = nodes.Patch(ctx, "other-node", types.MergePatchType, []byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status")
	expectForbidden(t, "node-1 patching other-node's status", err, `node "node-1" is not allowed to modify node "other-node"`)
	// Deleting a Node is not in the nodes' RBAC rules: the authorizer
	// refuses it before admission.
	expectForbidden(t, "node-1 deleting other-node", nodes.Delete(ctx, "other-node", metav1.DeleteOptions{}), "cannot delete resource")
}

func TestNodeMirrorPods(t *testing.T) {
	ctx := context.Background()
	ns := "nr-mirror"
	framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	node := registerNode(t, "node-1")
	pods := nodeClient(t, "node-1").CoreV1().Pods(ns)

	// The plugin reads the Node from its informer; give it a moment to see
	// the registration.
	var created *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = pods.Create(ctx, framework.MirrorPod("static"+"-"+node.Name, node.Name, node.UID), metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("node-1 creating its mirror pod: %v", err)
	}
	if created.Spec.NodeName != "node-1" {
		t.Errorf("mirror pod node %q", created.Spec.NodeName)
	}

	plain := framework.MirrorPod("plain"+"-"+node.Name, node.Name, node.UID)
	delete(plain.Annotations, corev1.MirrorPodAnnotationKey)
	_, err = pods.Create(ctx, plain, metav1.CreateOptions{})
	expectForbidden(t, "node-1 creating a pod that is not a mirror pod", err, "node \"node-1\" can only create mirror pods")

	elsewhere := framework.MirrorPod("elsewhere"+"-"+node.Name, node.Name, node.UID)
	elsewhere.Spec.NodeName = "node-2"
	_, err = pods.Create(ctx, elsewhere, metav1.CreateOptions{})
	expectForbidden(t, "node-1 creating a mirror pod bound to node-2", err, "spec.nodeName set to itself")

	secret := framework.MirrorPod("secret"+"-"+node.Name, node.Name, node.UID)
	secret.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}}
	_, err = pods.Create(ctx, secret, metav1.CreateOptions{})
	expectForbidden(t, "node-1 creating a mirror pod with a secret volume", err, "secret")

	unowned := framework.MirrorPod("unowned"+"-"+node.Name, node.Name, node.UID)
	unowned.OwnerReferences = nil
	_, err = pods.Create(ctx, unowned, metav1.CreateOptions{})
	expectForbidden(t, "node-1 creating a mirror pod without an owner", err, "owner reference set to itself")

	// It may delete its own mirror pod, once the plugin's pod informer has
	// seen it (until then the plugin answers NotFound).
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := pods.Delete(ctx, created.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Errorf("node-1 deleting its mirror pod: %v", err)
	}
}

func TestNodeLease(t *testing.T) {
	ctx := context.Background()
	leases := nodeClient(t, "node-1").CoordinationV1().Leases(corev1.NamespaceNodeLease)
	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40)},
		}
	}
	own, err := leases.Create(ctx, lease("node-1"), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("node-1 creating its lease: %v", err)
	}
	if err == nil {
		own.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		if _, err := leases.Update(ctx, own, metav1.UpdateOptions{}); err != nil {
			t.Errorf("node-1 renewing its lease: %v", err)
		}
	}
	_, err = leases.Create(ctx, lease("node-2"), metav1.CreateOptions{})
	expectForbidden(t, "node-1 creating node-2's lease", err, "same name as the requesting node")
}

func TestNodeTokenRequest(t *testing.T) {
	ctx := context.Background()
	ns := "nr-token"
	framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	admin := framework.KubeClient(t, server.AdminConfig())
	boundPod := func(name, node string) *corev1.Pod {
		pod := framework.Pod(name, nil, "c")
		pod.Spec.NodeName = node
		p, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mine := boundPod("mine", "node-1")
	theirs := boundPod("theirs", "node-2")

	tokens := nodeClient(t, "node-1").CoreV1().ServiceAccounts(ns)
	// The audience "" is what a pod's service-account token volume names
	// (as in upstream's node integration tests). No audience at all would be
	// defaulted to the apiserver's audiences before admission, which the pod
	// does not name.
	request := func(pod *corev1.Pod, audiences ...string) error {
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: ptr.To[int64](3600),
		}}
		if pod != nil {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
		}
		_, err := tokens.CreateToken(ctx, "default", tr, metav1.CreateOptions{})
		return err
	}
	// The Node authorizer learns that node-1 runs a pod of the service
	// account from its informers, a moment after the pod is created.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := request(mine, "")
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot create resource") {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("node-1 requesting a token bound to its pod: %v", err)
	}
	// The authorizer lets node-1 at the service account (its pod uses it);
	// NodeRestriction refuses a token bound to node-2's pod.
	// NodeRestriction reads the pod from the server's informers, which may
	// not have seen node-2's pod yet: until then the answer is NotFound.
	var theirsErr error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		theirsErr = request(theirs, "")
		return !apierrors.IsNotFound(theirsErr), nil
	}); err != nil {
		t.Fatalf("node-2's pod never reached NodeRestriction's pod lister: %v", theirsErr)
	}
	expectForbidden(t, "node-1 requesting a token bound to node-2's pod", theirsErr, "bound to a pod scheduled on a different node")
	expectForbidden(t, "node-1 requesting an unbound token", request(nil, ""), "not bound to a pod")
	// ServiceAccountNodeAudienceRestriction: an audience no volume of the pod
	// uses needs an RBAC grant.
	expectForbidden(t, "node-1 requesting a token for an audience its pod does not use", request(mine, "vault"),
		`system:node:node-1 is not authorized to request tokens for audience "vault"`)
}
