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
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/admitkit/admitkit/test/integration/framework"
)

var assignMetadataGVR = schema.GroupVersionResource{Group: "mutations.gatekeeper.sh", Version: "v1", Resource: "assignmetadata"}

// annotated reports whether a pod sent to client now gets the annotation.
func annotated(t *testing.T, client kubernetes.Interface, ns, key string) bool {
	t.Helper()
	out, err := probe(context.Background(), client, ns, framework.Pod("probe", nil, "app"))
	if err != nil {
		t.Fatal(err)
	}
	return out.Annotations[key] == "yes"
}

// TestLiveMutatorsAcrossServers creates a mutator through A: B enforces it,
// each server writes its own status entry on it, and a delete through A
// ends it on B.
func TestLiveMutatorsAcrossServers(t *testing.T) {
	ctx := context.Background()
	const ns = "ha-live"
	framework.CreateNamespace(t, serverA.AdminConfig(), ns, nil)
	mutatorsA := framework.DynamicClient(t, serverA.AdminConfig()).Resource(assignMetadataGVR)
	mutatorsB := framework.DynamicClient(t, serverB.AdminConfig()).Resource(assignMetadataGVR)
	clientB := framework.KubeClient(t, serverB.AdminConfig())

	if _, err := mutatorsA.Create(ctx, framework.AnnotationMutator(t, "ha-live", ns, "live", "yes"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, "B to enforce the mutator created on A", func() bool { return annotated(t, clientB, ns, "live") })

	framework.Poll(t, "both servers' status entries", func() bool {
		u, err := mutatorsB.Get(ctx, "ha-live", metav1.GetOptions{})
		if err != nil {
			return false
		}
		byPod, _, _ := unstructured.NestedSlice(u.Object, "status", "byPod")
		seen := map[string]bool{}
		for _, e := range byPod {
			entry, _ := e.(map[string]any)
			id, _ := entry["id"].(string)
			if entry["enforced"] == true && entry["observedGeneration"] == u.GetGeneration() {
				seen[id] = true
			}
		}
		return len(byPod) == 2 && seen[framework.ServerIdentity(0)] && seen[framework.ServerIdentity(1)]
	})

	if err := mutatorsA.Delete(ctx, "ha-live", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, "B to stop enforcing the mutator deleted on A", func() bool { return !annotated(t, clientB, ns, "live") })
}

// TestLiveMutatorPropagationWindow measures how long after A answers the
// create of a mutator a pod sent to B gets it. Logged, never asserted.
func TestLiveMutatorPropagationWindow(t *testing.T) {
	ctx := context.Background()
	const ns = "ha-live-window"
	framework.CreateNamespace(t, serverA.AdminConfig(), ns, nil)
	mutatorsA := framework.DynamicClient(t, serverA.AdminConfig()).Resource(assignMetadataGVR)
	clientB := framework.KubeClient(t, serverB.AdminConfig())
	windows := make([]time.Duration, 0, propagationTries)
	already := 0
	for try := range propagationTries {
		name, key := fmt.Sprintf("ha-window-%d", try), fmt.Sprintf("try-%d", try)
		if _, err := mutatorsA.Create(ctx, framework.AnnotationMutator(t, name, ns, key, "yes"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("try %d: %v", try, err)
		}
		written := time.Now()
		for first := true; ; first = false {
			sent := time.Now()
			if annotated(t, clientB, ns, key) {
				windows = append(windows, sent.Sub(written))
				if first {
					already++
				}
				break
			}
			if time.Since(written) > 30*time.Second {
				t.Fatalf("try %d: B does not enforce the mutator 30s after A created it", try)
			}
		}
		if err := mutatorsA.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("try %d: %v", try, err)
		}
	}
	sort.Slice(windows, func(i, j int) bool { return windows[i] < windows[j] })
	t.Logf("propagation window, mutator create answered by A until a pod sent to B gets it, %d tries: p50 %v, p99 %v, max %v; B already had it when A answered in %d tries",
		len(windows), framework.Percentile(windows, 50), framework.Percentile(windows, 99), windows[len(windows)-1], already)
}
