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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/admitkit/admitkit/test/integration/framework"
)

// The node-scoped service account of main_test.go's configuration.
const (
	daemonNamespace = "nr-daemon"
	daemonAccount   = "agent"
)

// daemonRBAC grants the account what node daemons' charts grant, and
// more: every Node, pod, ResourceSlice and ResourceClaim of the cluster,
// exec and proxy into any of them, every node Lease and CSINode, so that
// each refusal the tests see comes from admission. NodeRestriction is
// what narrows it to the pod's own node.
func daemonRBAC(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "nr-daemon-agent"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"pods", "pods/status"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete", "deletecollection"}},
			{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "nodes/proxy"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
			{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims", "resourceclaims/status"}, Verbs: []string{"get", "list", "update", "patch"}},
			// Kubernetes' own per-driver check of status.devices.
			{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/driver"},
				Verbs: []string{"associated-node:update", "arbitrary-node:update", "associated-node:patch", "arbitrary-node:patch"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
			{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"csinodes"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
			// A kind NodeRestriction does not hold to a node: RBAC alone
			// decides, for a credential that names its node.
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nr-daemon-agent"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: daemonNamespace, Name: daemonAccount}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// boundPod creates, as the scheduler would have placed it, a pod on node
// running as account.
func boundPod(t *testing.T, admin kubernetes.Interface, name, node, account string, labels ...string) *corev1.Pod {
	t.Helper()
	podLabels := map[string]string{"app": name}
	for _, l := range labels {
		podLabels[l] = "true"
	}
	pod, err := admin.CoreV1().Pods(daemonNamespace).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: podLabels},
		Spec: corev1.PodSpec{
			NodeName:           node,
			ServiceAccountName: account,
			Containers:         []corev1.Container{{Name: "c", Image: "registry.example.com/agent:1"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s on %s: %v", name, node, err)
	}
	return pod
}

// daemonToken asks for a token of the account, bound to pod (to nothing
// when pod is nil), as the kubelet does for a projected token volume.
func daemonToken(t *testing.T, admin kubernetes.Interface, pod *corev1.Pod) string {
	t.Helper()
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo[int64](3600)}}
	if pod != nil {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	got, err := admin.CoreV1().ServiceAccounts(daemonNamespace).CreateToken(context.Background(), daemonAccount, tr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of %s/%s: %v", daemonNamespace, daemonAccount, err)
	}
	return got.Status.Token
}

// tokenNode reads the node a token claims (kubernetes.io.node.name), to
// show that the server put one there: the claims are the token's middle
// segment. The signature is the server's business; this only reads.
func tokenNode(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("the token has %d segments, want 3", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("decoding the token's claims: %v", err)
	}
	var claims struct {
		Kubernetes struct {
			Node *struct {
				Name string `json:"name"`
			} `json:"node"`
		} `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatalf("parsing the token's claims: %v", err)
	}
	if claims.Kubernetes.Node == nil {
		return ""
	}
	return claims.Kubernetes.Node.Name
}

func tokenClient(t *testing.T, h *host, token string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(h.server.Config(token))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func labelPatch(key, value string) []byte {
	return []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value))
}

func resourceSlice(name, node string) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   "gpu.example.com",
			Pool:     resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
			NodeName: &node,
			Devices:  []resourcev1.Device{{Name: "gpu-0"}},
		},
	}
}

// TestNodeDaemon runs a DaemonSet-style agent with real pod-bound tokens,
// on each host: whatever its RBAC grants, it may change its own Node, its
// node's pods, ResourceSlices, ResourceClaims, Lease and CSINode, and reach
// into its node's pods and kubelet, and nothing of another node; a token
// that names no node may make its self reviews and write nothing.
func TestNodeDaemon(t *testing.T) {
	onEachHost(t, func(t *testing.T, h *host) {
		d := startNodeDaemon(t, h)
		t.Run("own node", func(t *testing.T) { testDaemonOwnNode(t, d.daemon) })
		t.Run("another node", func(t *testing.T) { testDaemonOtherNode(t, d.daemon) })
		t.Run("pods", func(t *testing.T) { testDaemonPods(t, d.daemon, d.mine, d.theirs) })
		t.Run("connect", func(t *testing.T) { testDaemonConnect(t, d) })
		t.Run("delete collection", func(t *testing.T) { testDaemonDeleteCollection(t, d) })
		t.Run("resource slices", func(t *testing.T) { testDaemonSlices(t, d.admin, d.daemon) })
		t.Run("resource claim status", func(t *testing.T) { testDaemonClaimStatus(t, d) })
		t.Run("node leases", func(t *testing.T) { testDaemonLeases(t, d) })
		t.Run("csinodes", func(t *testing.T) { testDaemonCSINodes(t, d) })
		t.Run("self reviews", func(t *testing.T) { testDaemonSelfReview(t, d) })
		t.Run("token without a node", func(t *testing.T) { testUnboundDaemonToken(t, h, d.admin) })
	})
}

// nodeDaemon is the agent of TestNodeDaemon on one host: the admin's
// client and the agent's (a token bound to its pod on node-1), and a
// workload pod on each node.
type nodeDaemon struct {
	admin, daemon kubernetes.Interface
	mine, theirs  *corev1.Pod
}

// startNodeDaemon registers node-1 and node-2, binds the agent's pod to
// node-1 and a workload pod to each node, and returns the agent once RBAC
// lets it act on its own Node and admission holds it to that node.
func startNodeDaemon(t *testing.T, h *host) *nodeDaemon {
	t.Helper()
	ctx := context.Background()
	admin := framework.KubeClient(t, h.server.AdminConfig())
	registerHostNode(t, h, "node-1")
	registerHostNode(t, h, "node-2")
	framework.CreateNamespace(t, h.server.AdminConfig(), daemonNamespace, nil)
	// The workloads run as default, which no controller makes on the
	// webhook host.
	for _, account := range []string{daemonAccount, "default"} {
		if _, err := admin.CoreV1().ServiceAccounts(daemonNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}},
			metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	daemonRBAC(t, admin)
	if h.webhook != nil {
		listDaemonInWebhook(t, admin)
	}

	agent := boundPod(t, admin, "agent-node-1", "node-1", daemonAccount)
	d := &nodeDaemon{
		admin:  admin,
		mine:   boundPod(t, admin, "work-node-1", "node-1", "default"),
		theirs: boundPod(t, admin, "work-node-2", "node-2", "default"),
	}
	token := daemonToken(t, admin, agent)
	if got := tokenNode(t, token); got != "node-1" {
		t.Fatalf("the token bound to a pod on node-1 names node %q (ServiceAccountTokenPodNodeInfo must be on)", got)
	}
	d.daemon = tokenClient(t, h, token)

	// RBAC reads the new binding from its informer, and kube-apiserver
	// the webhook configuration from its own: wait until the agent may
	// act on its own Node and is refused another's.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes := d.daemon.CoreV1().Nodes()
		_, err := nodes.Patch(ctx, "node-1", types.MergePatchType, labelPatch("agent.example.com/ready", "true"), metav1.PatchOptions{})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot patch resource") {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		_, err = nodes.Patch(ctx, "node-2", types.MergePatchType, labelPatch("agent.example.com/probe", "true"), metav1.PatchOptions{})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "is held to node"), nil
	})
	if err != nil {
		t.Fatalf("the agent labelling its own node, and held to it: %v", err)
	}
	return d
}

// registerHostNode has node create its own Node object on h (as a
// kubelet does), once.
func registerHostNode(t *testing.T, h *host, node string) {
	t.Helper()
	_, err := framework.KubeClient(t, h.server.NodeConfig(node)).CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   node,
		Labels: map[string]string{"kubernetes.io/hostname": node, "topology.kubernetes.io/zone": "z1"},
	}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("%s registering itself: %v", node, err)
	}
}

// noderestrictionWebhook is the NodeRestriction webhook of
// hack/manifests/validating-webhooks.yaml.
const noderestrictionWebhook = "noderestriction.admission.admitkit.io"

// listDaemonInWebhook does on the webhook host what the README asks of an
// administrator who lists a node-scoped account: the admission
// configuration of the webhook server lists it already (main_test.go's),
// and the NodeRestriction webhook's matchCondition, which the manifests
// ship empty, now names it too. The test puts the condition back when it
// ends.
func listDaemonInWebhook(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	user := "system:serviceaccount:" + daemonNamespace + ":" + daemonAccount
	old := setWebhookCondition(t, admin, "request.userInfo.username in ['"+user+"']")
	t.Cleanup(func() { setWebhookCondition(t, admin, old) })
}

// setWebhookCondition sets the NodeRestriction webhook's first
// matchCondition, the accounts' list, and returns the expression it had.
func setWebhookCondition(t *testing.T, admin kubernetes.Interface, expression string) string {
	t.Helper()
	var old string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		configs := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations()
		cfg, err := configs.Get(context.Background(), "admitkit-validating", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range cfg.Webhooks {
			w := &cfg.Webhooks[i]
			if w.Name != noderestrictionWebhook || len(w.MatchConditions) == 0 {
				continue
			}
			old, w.MatchConditions[0].Expression = w.MatchConditions[0].Expression, expression
			_, err = configs.Update(context.Background(), cfg, metav1.UpdateOptions{})
			return err
		}
		return fmt.Errorf("validatingwebhookconfiguration admitkit-validating has no %s webhook with matchConditions", noderestrictionWebhook)
	})
	if err != nil {
		t.Fatal(err)
	}
	return old
}

// testDaemonOwnNode: on its own Node the agent sets labels its allowances
// name and status conditions, and nothing else.
func testDaemonOwnNode(t *testing.T, daemon kubernetes.Interface) {
	ctx := context.Background()
	nodes := daemon.CoreV1().Nodes()
	if _, err := nodes.Patch(ctx, "node-1", types.MergePatchType, labelPatch("feature.node.kubernetes.io/cpu-avx2", "true"), metav1.PatchOptions{}); err != nil {
		t.Errorf("a label under its allowed prefix: %v", err)
	}
	_, err := nodes.Patch(ctx, "node-1", types.MergePatchType, labelPatch("node-role.kubernetes.io/gpu", ""), metav1.PatchOptions{})
	expectForbidden(t, "a kubernetes.io label it is not allowed", err, `service account nr-daemon/agent is held to node "node-1"`,
		"is not allowed to modify labels: node-role.kubernetes.io/gpu")
	_, err = nodes.Patch(ctx, "node-1", types.MergePatchType, []byte(`{"status":{"conditions":[{"type":"AgentReady","status":"True"}]}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Errorf("a condition on its own node's status: %v", err)
	}
	expectForbidden(t, "deleting its own node", nodes.Delete(ctx, "node-1", metav1.DeleteOptions{}), "may not create or delete nodes")
}

// testDaemonOtherNode: another node's Node is not the agent's to change.
func testDaemonOtherNode(t *testing.T, daemon kubernetes.Interface) {
	ctx := context.Background()
	nodes := daemon.CoreV1().Nodes()
	_, err := nodes.Patch(ctx, "node-2", types.MergePatchType, labelPatch("agent.example.com/ready", "true"), metav1.PatchOptions{})
	expectForbidden(t, "labelling node-2", err, `node "node-1" is not allowed to modify node "node-2"`)
	_, err = nodes.Patch(ctx, "node-2", types.MergePatchType, []byte(`{"status":{"conditions":[{"type":"AgentReady","status":"False"}]}}`), metav1.PatchOptions{}, "status")
	expectForbidden(t, "node-2's status", err, `is not allowed to modify node "node-2"`)
	_, err = nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-9"}}, metav1.CreateOptions{})
	expectForbidden(t, "registering a node", err, "may not create or delete nodes")
	// A kind it does not hold to a node is RBAC's alone, for a credential
	// that names its node: on the webhook host its requests of that kind
	// do not reach the webhook.
	if _, err := daemon.CoreV1().ConfigMaps(daemonNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bound"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a ConfigMap, which RBAC allows it: %v", err)
	}
}

// testDaemonPods: the agent changes and deletes pods of its node only, and
// creates none.
func testDaemonPods(t *testing.T, daemon kubernetes.Interface, mine, theirs *corev1.Pod) {
	ctx := context.Background()
	pods := daemon.CoreV1().Pods(daemonNamespace)
	if _, err := pods.Patch(ctx, mine.Name, types.MergePatchType, labelPatch("agent.example.com/seen", "true"), metav1.PatchOptions{}); err != nil {
		t.Errorf("labelling a pod on its node: %v", err)
	}
	_, err := pods.Patch(ctx, theirs.Name, types.MergePatchType, labelPatch("agent.example.com/seen", "true"), metav1.PatchOptions{})
	expectForbidden(t, "labelling a pod on node-2", err, `can only update pods with spec.nodeName set to its node, not "node-2"`)
	_, err = pods.Patch(ctx, theirs.Name, types.MergePatchType, []byte(`{"status":{"conditions":[{"type":"AgentReady","status":"True"}]}}`), metav1.PatchOptions{}, "status")
	expectForbidden(t, "status of a pod on node-2", err, "can only update pod status for pods with spec.nodeName set to itself")
	_, err = pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "spawned"}, Spec: corev1.PodSpec{
		NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/x:1"}}}}, metav1.CreateOptions{})
	expectForbidden(t, "creating a pod", err, "may not create pods")

	// Deletes are judged on the pod the plugin looks up, in-process from
	// its informer (whenSeen).
	deleteWhenSeen := func(name string) error {
		return whenSeen(func(ctx context.Context) error { return pods.Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	expectForbidden(t, "deleting a pod on node-2", deleteWhenSeen(theirs.Name), "can only delete pods with spec.nodeName set to itself")
	if err := deleteWhenSeen(mine.Name); err != nil {
		t.Errorf("deleting a pod on its node: %v", err)
	}
}

// testDaemonSlices: the agent publishes, updates and deletes ResourceSlices
// of its node only.
func testDaemonSlices(t *testing.T, admin, daemon kubernetes.Interface) {
	ctx := context.Background()
	slices := daemon.ResourceV1().ResourceSlices()
	own, err := slices.Create(ctx, resourceSlice("nr-daemon-node-1", "node-1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("publishing a slice of its node: %v", err)
	}
	own.Spec.Devices = append(own.Spec.Devices, resourcev1.Device{Name: "gpu-1"})
	if _, err := slices.Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Errorf("updating a slice of its node: %v", err)
	}
	_, err = slices.Create(ctx, resourceSlice("nr-daemon-node-2", "node-2"), metav1.CreateOptions{})
	expectForbidden(t, "publishing a slice of node-2", err, "can only create ResourceSlice with the same NodeName as the requesting node")

	other, err := admin.ResourceV1().ResourceSlices().Create(ctx, resourceSlice("nr-admin-node-2", "node-2"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Spec.Devices = nil
	_, err = slices.Update(ctx, other, metav1.UpdateOptions{})
	expectForbidden(t, "updating node-2's slice", err, "can only update ResourceSlice with the same NodeName")
	expectForbidden(t, "deleting node-2's slice", slices.Delete(ctx, other.Name, metav1.DeleteOptions{}), "can only delete ResourceSlice with the same NodeName")
	if err := slices.Delete(ctx, own.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting a slice of its node: %v", err)
	}
}

// testUnboundDaemonToken: a token bound to nothing names no node; with it
// the agent may ask who it is and what it may do, and its writes are
// refused.
func testUnboundDaemonToken(t *testing.T, h *host, admin kubernetes.Interface) {
	ctx := context.Background()
	unbound := daemonToken(t, admin, nil)
	if got := tokenNode(t, unbound); got != "" {
		t.Fatalf("a token bound to nothing names node %q", got)
	}
	client := tokenClient(t, h, unbound)
	who, canPatch := selfReviews(t, client)
	if who.Username != "system:serviceaccount:nr-daemon:agent" || len(who.Extra[nodeNameExtra]) != 0 || !canPatch {
		t.Errorf("auth whoami says %q with extras %v, auth can-i patch nodes says %v; want the agent, no node, yes", who.Username, who.Extra, canPatch)
	}
	nodes := client.CoreV1().Nodes()
	_, err := nodes.Patch(ctx, "node-1", types.MergePatchType, labelPatch("agent.example.com/ready", "false"), metav1.PatchOptions{})
	expectForbidden(t, "labelling node-1 with a token that names no node", err,
		"NodeRestriction holds service account nr-daemon/agent to the node its pod runs on, but this credential names no single node")
	// Every write, not only those of the kinds held to a node: on the
	// webhook host too (issue 44), where the webhook sees the kinds it
	// judges for a credential that names its node, and everything for
	// one that names none.
	_, err = client.CoreV1().ConfigMaps(daemonNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unbound"}}, metav1.CreateOptions{})
	expectForbidden(t, "creating a ConfigMap with a token that names no node", err,
		"NodeRestriction holds service account nr-daemon/agent to the node its pod runs on, but this credential names no single node")
}
