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
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/admitkit/admitkit/test/integration/framework"
)

var (
	assignGVR         = schema.GroupVersionResource{Group: "mutations.gatekeeper.sh", Version: "v1", Resource: "assign"}
	assignMetadataGVR = schema.GroupVersionResource{Group: "mutations.gatekeeper.sh", Version: "v1", Resource: "assignmetadata"}
)

// liveAssign is an Assign written the way Gatekeeper's documentation shows
// them, for pods of one namespace.
func liveAssign(name, namespace, policy string) string {
	return `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata:
  name: ` + name + `
spec:
  applyTo:
  - groups: [""]
    kinds: ["Pod"]
    versions: ["v1"]
  match:
    scope: Namespaced
    kinds:
    - apiGroups: ["*"]
      kinds: ["Pod"]
    namespaces: ["` + namespace + `"]
  location: "spec.containers[name:*].imagePullPolicy"
  parameters:
    assign:
      value: ` + policy + "\n"
}

// serverIdentity is the name of the server's identity lease, which its
// status entries must carry.
func serverIdentity(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	var id string
	framework.Poll(t, "the server's identity lease", func() bool {
		leases, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"})
		if err != nil || len(leases.Items) != 1 {
			return false
		}
		id = leases.Items[0].Name
		return true
	})
	return id
}

// dryRunPod admits a pod without storing it and returns what admission
// made of it.
func dryRunPod(t *testing.T, client kubernetes.Interface, namespace string) *corev1.Pod {
	t.Helper()
	pod, err := client.CoreV1().Pods(namespace).Create(context.Background(), framework.Pod("probe", nil, "app"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// entryOf returns the status.byPod entry of id on a mutator object.
func entryOf(u *unstructured.Unstructured, id string) (map[string]any, bool) {
	byPod, _, _ := unstructured.NestedSlice(u.Object, "status", "byPod")
	for _, e := range byPod {
		if m, ok := e.(map[string]any); ok && m["id"] == id {
			return m, true
		}
	}
	return nil, false
}

// TestLiveMutatorKubectl is the user's path: kubectl apply of an Assign,
// pods that get it, an edit they follow, the status entry, a delete, and
// the refusals of broken ones.
func TestLiveMutatorKubectl(t *testing.T) { onEachHost(t, testLiveMutatorKubectl) }

func testLiveMutatorKubectl(t *testing.T, h *host) {
	ns := "live-kubectl"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	client := framework.KubeClient(t, h.server.AdminConfig())
	assigns := framework.DynamicClient(t, h.server.AdminConfig()).Resource(assignGVR)
	id := h.identity(t)
	policy := func() corev1.PullPolicy { return dryRunPod(t, client, ns).Spec.Containers[0].ImagePullPolicy }
	if got := policy(); got != corev1.PullIfNotPresent {
		t.Fatalf("before any mutator: %q", got)
	}

	out := h.mustKubectl(t, liveAssign("live-pull", ns, "Never"), "apply", "-f", "-").Stdout
	if !strings.Contains(out, "assign.mutations.gatekeeper.sh/live-pull created") {
		t.Fatalf("kubectl apply printed %q", out)
	}
	framework.Poll(t, "pods to get imagePullPolicy Never", func() bool { return policy() == corev1.PullNever })
	created, err := client.CoreV1().Pods(ns).Create(context.Background(), framework.Pod("web", nil, "app"), metav1.CreateOptions{})
	if err != nil || created.Spec.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Fatalf("created pod: %v, error %v", created, err)
	}
	framework.Poll(t, "the status entry of this server", func() bool {
		u, err := assigns.Get(context.Background(), "live-pull", metav1.GetOptions{})
		if err != nil {
			return false
		}
		e, ok := entryOf(u, id)
		return ok && e["enforced"] == true && e["observedGeneration"] == u.GetGeneration() && e["mutatorUID"] == string(u.GetUID())
	})
	status := h.mustKubectl(t, "", "get", "assign", "live-pull", "-o", "jsonpath={.status.byPod[*].id} {.status.byPod[*].enforced}").Stdout
	if status != id+" true" {
		t.Errorf("kubectl get assign shows status %q, want %q", status, id+" true")
	}

	// An edit: the next pods follow, and the entry observes it.
	h.mustKubectl(t, liveAssign("live-pull", ns, "Always"), "apply", "-f", "-")
	framework.Poll(t, "pods to follow the edit", func() bool { return policy() == corev1.PullAlways })
	framework.Poll(t, "the status entry to observe generation 2", func() bool {
		u, err := assigns.Get(context.Background(), "live-pull", metav1.GetOptions{})
		e, ok := entryOf(u, id)
		return err == nil && ok && u.GetGeneration() == 2 && e["observedGeneration"] == int64(2)
	})

	// Refused on apply, with the field named, and nothing stored.
	for _, tc := range []struct {
		name, manifest string
		want           []string
	}{
		{"broken location", strings.Replace(liveAssign("live-broken", ns, "Never"), "[name:*]", "[name:*", 1),
			[]string{`The Assign "live-broken" is invalid`, "spec.location"}},
		{"schema conflict", strings.Replace(liveAssign("live-conflict", ns, "Never"), "spec.containers[name:*].imagePullPolicy", "spec.containers.app.imagePullPolicy", 1),
			[]string{`"live-conflict" is invalid`, "spec.location", "Assign/live-pull"}},
		{"unknown field", strings.Replace(liveAssign("live-typo", ns, "Never"), "parameters:", "paramters: {}\n  parameters:", 1),
			[]string{"unknown field", "paramters"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := framework.RunKubectl(h.adminKubeconfig(t), tc.manifest, "apply", "-f", "-")
			if res.Err == nil {
				t.Fatalf("kubectl apply succeeded: %s", res.Stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Stderr, w) {
					t.Errorf("kubectl printed %q, want %q in it", res.Stderr, w)
				}
			}
		})
	}

	// Valid but likely a mistake: admitted, with a warning kubectl prints.
	res := h.mustKubectl(t, strings.Replace(liveAssign("live-scope", "live-none", "Never"), "scope: Namespaced", "scope: namespaced", 1), "apply", "-f", "-")
	if !strings.Contains(res.Stderr, `Warning: spec.match.scope: "namespaced"`) {
		t.Errorf("kubectl printed %q, want the scope warning", res.Stderr)
	}
	h.mustKubectl(t, "", "delete", "assign", "live-scope")

	// Break glass: the delete always works, and the next pods are plain.
	h.mustKubectl(t, "", "delete", "assign", "live-pull")
	framework.Poll(t, "pods to lose the deleted mutator", func() bool { return policy() == corev1.PullIfNotPresent })
}

// TestLiveMutatorPropagation measures how long a new mutator takes to
// reach pods: from the create's response to the sending of the first pod
// that shows it. Logged, never asserted.
func TestLiveMutatorPropagation(t *testing.T) {
	ns := "live-propagation"
	framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	client := framework.KubeClient(t, server.AdminConfig())
	mutators := framework.DynamicClient(t, server.AdminConfig()).Resource(assignMetadataGVR)
	ctx := context.Background()
	var took []time.Duration
	for i := range 100 {
		name := fmt.Sprintf("live-prop-%d", i)
		key := fmt.Sprintf("try-%d", i)
		if _, err := mutators.Create(ctx, framework.AnnotationMutator(t, name, ns, key, "yes"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The window ends when the first pod sent after the create comes
		// back with the annotation: the server enforced it by then.
		written := time.Now()
		for {
			sent := time.Now()
			if dryRunPod(t, client, ns).Annotations[key] == "yes" {
				took = append(took, sent.Sub(written))
				break
			}
			if time.Since(written) > time.Minute {
				t.Fatalf("mutator %s not enforced after a minute", name)
			}
		}
		if err := mutators.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("from a mutator's create to the first pod that shows it, over %d tries: p50 %v, p99 %v, max %v",
		len(took), framework.Percentile(took, 50), framework.Percentile(took, 99), took[len(took)-1])
}

// TestLiveMutatorSnapshots creates 1,000 pods from 16 clients while eight
// mutators are added one after another and removed in the same order: every
// set of mutators the server ever ran is a run of consecutive ones, so a pod
// carrying any other set would have seen half of a system.
func TestLiveMutatorSnapshots(t *testing.T) {
	ns := "live-snapshots"
	framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	mutators := framework.DynamicClient(t, server.AdminConfig()).Resource(assignMetadataGVR)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n, pods = 8, 1000
	var changes int
	churn := churnAnnotationMutators(ctx, t, mutators, ns, n, &changes)
	sets, bad, err := createSnapshotPods(framework.KubeClient(t, server.AdminConfig()), ns, n, pods)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if err, ok := <-churn; ok && err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("%d pods carry mutators that never ran together: %v", len(bad), bad[:min(len(bad), 10)])
	}
	if len(sets) < 3 {
		t.Fatalf("the pods saw only %d sets of mutators (%v): the churn did not overlap the creates", len(sets), sets)
	}
	t.Logf("%d pods, %d mutator writes meanwhile, %d different sets seen", pods, changes, len(sets))
	for i := range n {
		_ = mutators.Delete(context.Background(), fmt.Sprintf("live-snap-%d", i), metav1.DeleteOptions{})
	}
}

// churnAnnotationMutators creates n annotation mutators one after another
// and deletes them in the same order, over and over until ctx ends,
// counting its writes in changes. The channel closes when it stops, after
// the error that stopped it, if any.
func churnAnnotationMutators(ctx context.Context, t *testing.T, mutators dynamic.NamespaceableResourceInterface, ns string, n int, changes *int) <-chan error {
	churn := make(chan error, 1)
	go func() {
		defer close(churn)
		for ctx.Err() == nil {
			for i := range n {
				if _, err := mutators.Create(ctx, framework.AnnotationMutator(t, fmt.Sprintf("live-snap-%d", i), ns, fmt.Sprintf("snap-%d", i), "on"), metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
					churn <- err
					return
				}
				*changes++
			}
			for i := range n {
				if err := mutators.Delete(ctx, fmt.Sprintf("live-snap-%d", i), metav1.DeleteOptions{}); err != nil && ctx.Err() == nil {
					churn <- err
					return
				}
				*changes++
			}
		}
	}()
	return churn
}

// createSnapshotPods creates pods from 16 clients and returns how many
// pods carried each set of the n mutators' annotations, and the pods whose
// set is not a run of consecutive mutators.
func createSnapshotPods(client kubernetes.Interface, ns string, n, pods int) (map[string]int, []string, error) {
	const clients = 16
	var (
		mu   sync.Mutex
		bad  []string
		sets = map[string]int{}
		wg   sync.WaitGroup
		errs = make(chan error, clients)
	)
	for c := range clients {
		wg.Go(func() {
			for i := c; i < pods; i += clients {
				pod, err := client.CoreV1().Pods(ns).Create(context.Background(), framework.Pod(fmt.Sprintf("p-%d", i), nil, "app"), metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
				var on []int
				for k := range n {
					if pod.Annotations[fmt.Sprintf("snap-%d", k)] == "on" {
						on = append(on, k)
					}
				}
				mu.Lock()
				sets[fmt.Sprint(on)]++
				if !consecutive(on) {
					bad = append(bad, fmt.Sprintf("%s: %v", pod.Name, on))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	return sets, bad, <-errs
}

// consecutive reports whether sorted indexes form one run (or none).
func consecutive(on []int) bool {
	return len(on) == 0 || on[len(on)-1]-on[0] == len(on)-1
}

// TestLiveMutatorRestart restarts a server on the same etcd: it enforces
// the same mutators from its first request on, refusing (with a retriable
// 503, which client-go retries) rather than admitting a pod before it has
// read them.
func TestLiveMutatorRestart(t *testing.T) {
	cfg := framework.Config{
		AdmissionConfig: liveOnlyAdmissionConfig,
		Args:            []string{"--enable-admission-plugins=LocationMutator"},
	}
	srv, err := framework.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Cleanup()
	dyn, err := dynamic.NewForConfig(srv.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(srv.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "live-restart"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager runs: the ServiceAccount plugin needs the
	// namespace's default service account made by hand.
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(liveAssign("live-restart", ns, "Never")), &u.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(assignGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, "the Assign to be enforced", func() bool { return dryRunPod(t, kube, ns).Spec.Containers[0].ImagePullPolicy == corev1.PullNever })

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted, err := framework.StartIn(srv.DataDir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Stop()
	kube, err = kubernetes.NewForConfig(restarted.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	// The first pod after the restart already gets the mutator.
	pod, err := kube.CoreV1().Pods(ns).Create(ctx, framework.Pod("first", nil, "app"), metav1.CreateOptions{})
	if err != nil && !apierrors.IsServiceUnavailable(err) {
		t.Fatal(err)
	}
	if err == nil && pod.Spec.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Fatalf("the first pod after the restart has imagePullPolicy %q", pod.Spec.Containers[0].ImagePullPolicy)
	}
	if err != nil {
		t.Logf("the first pod after the restart got a 503 even after client-go's retries: %v", err)
	}
}

// liveOnlyAdmissionConfig turns on the mutators from the API and nothing
// else.
var liveOnlyAdmissionConfig = framework.AdmissionConfiguration(framework.LocationMutatorConfiguration(`    watchMutators: true
`))
