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

package ha

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// TestServerIdentities checks that the two servers, in one process on one
// host, hold identity leases of their own: kube-apiserver's default
// identity, derived from the hostname, would be the same for both.
func TestServerIdentities(t *testing.T) {
	leases := framework.KubeClient(t, serverA.AdminConfig()).CoordinationV1().Leases(metav1.NamespaceSystem)
	want := []string{framework.ServerIdentity(0), framework.ServerIdentity(1)}
	var got []string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"})
		if err != nil {
			return false, err
		}
		got = got[:0]
		for _, l := range list.Items {
			got = append(got, l.Name)
		}
		slices.Sort(got)
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver identity leases %v, want %v: %v", got, want, err)
	}
	for _, name := range want {
		var lease *coordinationv1.Lease
		lease, err = leases.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); len(holder) <= len(name) || holder[:len(name)] != name {
			t.Errorf("lease %s is held by %q, want its own server (%s_<uid>)", name, holder, name)
		}
	}
}

// TestIdentityMustNameALease checks that --apiserver-identity refuses, at
// start-up and naming the flag, what cannot name the identity Lease.
func TestIdentityMustNameALease(t *testing.T) {
	for _, identity := range []string{"Upper-Case", "under_score", strings.Repeat("a", 254)} {
		t.Run(identity[:min(len(identity), 20)], func(t *testing.T) {
			srv, err := framework.Start(framework.Config{Args: []string{"--apiserver-identity=" + identity}})
			if err == nil {
				_ = srv.Cleanup()
				t.Fatalf("the server started with --apiserver-identity=%s", identity)
			}
			if !strings.Contains(err.Error(), "--apiserver-identity") {
				t.Errorf("start-up error %q does not name --apiserver-identity", err)
			}
		})
	}
}

// waitForPreset polls client with a dry-run pod until the preset named by
// annotation is applied (want) or no longer applied (!want).
func waitForPreset(t *testing.T, client kubernetes.Interface, ns string, pod *corev1.Pod, annotation string, want bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		out, err := probe(ctx, client, ns, pod)
		if err != nil {
			return false, err
		}
		return presetsOn(out)[annotation] == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to be applied=%v in namespace %s: %v", annotation, want, ns, err)
	}
}

// TestPresetsAcrossServers creates and deletes presets through A and
// checks that B applies them, then stops applying them, to pods it stores.
func TestPresetsAcrossServers(t *testing.T) {
	ctx := context.Background()
	const ns = "ha-presets"
	framework.CreateNamespace(t, serverA.AdminConfig(), ns, map[string]string{"ha-presets": "yes"})
	settingsA := framework.SettingsClient(t, serverA.AdminConfig()).SettingsV1alpha1()
	podsB := framework.KubeClient(t, serverB.AdminConfig()).CoreV1().Pods(ns)

	for _, tc := range []struct {
		name       string
		annotation string
		env        corev1.EnvVar
		create     func() error
		delete     func() error
	}{
		{
			name:       "PodPreset",
			annotation: "podpreset-ha-web",
			env:        corev1.EnvVar{Name: "DB_HOST", Value: "db.ha"},
			create: func() error {
				_, err := settingsA.PodPresets(ns).Create(ctx, &settingsv1alpha1.PodPreset{
					ObjectMeta: metav1.ObjectMeta{Name: "ha-web"},
					Spec: settingsv1alpha1.PodPresetSpec{
						Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
						Env:      []corev1.EnvVar{{Name: "DB_HOST", Value: "db.ha"}},
					},
				}, metav1.CreateOptions{})
				return err
			},
			delete: func() error { return settingsA.PodPresets(ns).Delete(ctx, "ha-web", metav1.DeleteOptions{}) },
		},
		{
			name:       "ClusterPodPreset",
			annotation: "clusterpodpreset-ha-proxy",
			env:        corev1.EnvVar{Name: "HTTP_PROXY", Value: "http://proxy.ha:3128"},
			create: func() error {
				_, err := settingsA.ClusterPodPresets().Create(ctx, &settingsv1alpha1.ClusterPodPreset{
					ObjectMeta: metav1.ObjectMeta{Name: "ha-proxy"},
					Spec: settingsv1alpha1.ClusterPodPresetSpec{
						NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"ha-presets": "yes"}},
						PodPresetSpec: settingsv1alpha1.PodPresetSpec{
							Env: []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "http://proxy.ha:3128"}},
						},
					},
				}, metav1.CreateOptions{})
				return err
			},
			delete: func() error { return settingsA.ClusterPodPresets().Delete(ctx, "ha-proxy", metav1.DeleteOptions{}) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := func(name string) *corev1.Pod { return framework.Pod(name, map[string]string{"app": "web"}, "app") }
			if err := tc.create(); err != nil {
				t.Fatalf("creating the preset on A: %v", err)
			}
			waitForPreset(t, framework.KubeClient(t, serverB.AdminConfig()), ns, pod("probe"), tc.annotation, true)
			created, err := podsB.Create(ctx, pod("with-"+tc.annotation), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating a pod on B: %v", err)
			}
			if !presetsOn(created)[tc.annotation] || !slices.Contains(created.Spec.Containers[0].Env, tc.env) {
				t.Errorf("pod created on B has presets %v and env %v, want %s and %v", presetsOn(created), created.Spec.Containers[0].Env, tc.annotation, tc.env)
			}

			if err := tc.delete(); err != nil {
				t.Fatalf("deleting the preset on A: %v", err)
			}
			waitForPreset(t, framework.KubeClient(t, serverB.AdminConfig()), ns, pod("probe"), tc.annotation, false)
			created, err = podsB.Create(ctx, pod("without-"+tc.annotation), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating a pod on B: %v", err)
			}
			if presetsOn(created)[tc.annotation] || slices.Contains(created.Spec.Containers[0].Env, tc.env) {
				t.Errorf("pod created on B after the delete still has %s: annotations %v, env %v", tc.annotation, created.Annotations, created.Spec.Containers[0].Env)
			}
		})
	}
}

// TestNodeRefusalsAcrossServers sends the same refused node requests to
// both servers: each must refuse with the same message, including where
// the plugin decides from the Node in its informer (registered through A).
func TestNodeRefusalsAcrossServers(t *testing.T) {
	ctx := context.Background()
	const ns = "ha-nodes"
	framework.CreateNamespace(t, serverA.AdminConfig(), ns, nil)
	node1, node2 := registerNodesOnA(t)
	nodeOn := map[string]kubernetes.Interface{
		"A": framework.KubeClient(t, serverA.NodeConfig("node-1")),
		"B": framework.KubeClient(t, serverB.NodeConfig("node-1")),
	}
	waitForNodesOnB(t, nodeOn["B"], ns, node1, node2)

	for _, tc := range []struct {
		name    string
		request func(kubernetes.Interface) error
	}{
		{
			name: "a label of the node-restriction prefix on itself",
			request: func(c kubernetes.Interface) error {
				_, err := c.CoreV1().Nodes().Patch(ctx, "node-1", types.MergePatchType, []byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/trusted":"true"}}}`), metav1.PatchOptions{})
				return err
			},
		},
		{
			name: "a label on another node",
			request: func(c kubernetes.Interface) error {
				_, err := c.CoreV1().Nodes().Patch(ctx, "node-2", types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/rack":"r2"}}}`), metav1.PatchOptions{})
				return err
			},
		},
		{
			name: "a mirror pod bound to another node",
			request: func(c kubernetes.Interface) error {
				_, err := c.CoreV1().Pods(ns).Create(ctx, framework.MirrorPod("other", "node-2", node2.UID), metav1.CreateOptions{})
				return err
			},
		},
		{
			name: "a mirror pod owned by a Node of another UID",
			request: func(c kubernetes.Interface) error {
				_, err := c.CoreV1().Pods(ns).Create(ctx, framework.MirrorPod("stale-owner", "node-1", "not-node-1s-uid"), metav1.CreateOptions{})
				return err
			},
		},
		{
			name: "a pod that is not a mirror pod",
			request: func(c kubernetes.Interface) error {
				pod := framework.MirrorPod("plain", "node-1", node1.UID)
				delete(pod.Annotations, corev1.MirrorPodAnnotationKey)
				_, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
				return err
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errA, errB := tc.request(nodeOn["A"]), tc.request(nodeOn["B"])
			if !apierrors.IsForbidden(errA) || !apierrors.IsForbidden(errB) {
				t.Fatalf("A answered %v, B answered %v; want both Forbidden", errA, errB)
			}
			if errA.Error() != errB.Error() {
				t.Errorf("A and B refuse with different messages:\nA: %s\nB: %s", errA, errB)
			}
		})
	}
}

// registerNodesOnA registers node-1 as itself and node-2 as the admin,
// both through A.
func registerNodesOnA(t *testing.T) (node1, node2 *corev1.Node) {
	t.Helper()
	ctx := context.Background()
	node1, err := framework.KubeClient(t, serverA.NodeConfig("node-1")).CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node-1 registering itself on A: %v", err)
	}
	node2, err = framework.KubeClient(t, serverA.AdminConfig()).CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return node1, node2
}

// waitForNodesOnB waits until B's informers see both Nodes, a moment after
// A stored them: node-1's own mirror pod is admitted once B knows node-1,
// another node's refused only once B knows node-2 (before, it is
// NotFound).
func waitForNodesOnB(t *testing.T, onB kubernetes.Interface, ns string, node1, node2 *corev1.Node) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods := onB.CoreV1().Pods(ns)
		_, err := pods.Create(ctx, framework.MirrorPod("own", "node-1", node1.UID), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		_, err = pods.Create(ctx, framework.MirrorPod("other", "node-2", node2.UID), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err), nil
	})
	if err != nil {
		t.Fatalf("B never saw node-1 and node-2 registered through A: %v", err)
	}
}

// propagationTries is how many preset writes TestPropagationWindow times.
const propagationTries = 100

// TestPropagationWindow measures how long after a PodPreset update on A
// returns a pod created on B gets the new preset: B's plugin reads its own
// informer, fed by its own watch on etcd. The figures are logged, never
// asserted: they depend on the machine.
func TestPropagationWindow(t *testing.T) {
	ctx := context.Background()
	const ns = "ha-propagation"
	framework.CreateNamespace(t, serverA.AdminConfig(), ns, nil)
	presetsA := framework.SettingsClient(t, serverA.AdminConfig()).SettingsV1alpha1().PodPresets(ns)
	clientB := framework.KubeClient(t, serverB.AdminConfig())
	pod := framework.Pod("probe", map[string]string{"app": "window"}, "app")

	_, err := presetsA.Create(ctx, &settingsv1alpha1.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "window"},
		Spec: settingsv1alpha1.PodPresetSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "window"}},
			Env:      []corev1.EnvVar{{Name: "TRY", Value: "0"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitForPreset(t, clientB, ns, pod, "podpreset-window", true)

	windows := make([]time.Duration, 0, propagationTries)
	// already counts the tries where the first pod sent to B had it.
	already := 0
	for try := 1; try <= propagationTries; try++ {
		value := fmt.Sprint(try)
		patch := fmt.Sprintf(`{"spec":{"env":[{"name":"TRY","value":%q}]}}`, value)
		if _, err := presetsA.Patch(ctx, "window", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("try %d: updating the preset on A: %v", try, err)
		}
		written := time.Now()
		// The window ends when the first pod sent to B after the write
		// comes back with the new value: B enforced it by then.
		for first := true; ; first = false {
			sent := time.Now()
			out, err := probe(ctx, clientB, ns, pod)
			if err != nil {
				t.Fatalf("try %d: %v", try, err)
			}
			if slices.Contains(out.Spec.Containers[0].Env, corev1.EnvVar{Name: "TRY", Value: value}) {
				windows = append(windows, sent.Sub(written))
				if first {
					already++
				}
				break
			}
			if time.Since(written) > 30*time.Second {
				t.Fatalf("try %d: B still applies an older preset 30s after the update on A: env %v", try, out.Spec.Containers[0].Env)
			}
		}
	}
	sort.Slice(windows, func(i, j int) bool { return windows[i] < windows[j] })
	var total time.Duration
	for _, w := range windows {
		total += w
	}
	t.Logf("propagation window, PodPreset update answered by A until a pod sent to B gets it, %d tries: p50 %v, p99 %v, max %v, mean %v; B already had it when A answered in %d tries",
		len(windows), framework.Percentile(windows, 50), framework.Percentile(windows, 99), windows[len(windows)-1], total/time.Duration(len(windows)), already)
}
