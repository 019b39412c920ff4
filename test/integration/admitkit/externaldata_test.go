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
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/admitkit/admitkit/test/integration/framework"
	"github.com/admitkit/admitkit/test/integration/framework/tagprovider"
)

// digestTable is what a tag provider answers: for each container name,
// framework.Pod's image for it pinned to a digest of fill characters.
func digestTable(names []string, fill byte) map[string]string {
	table := map[string]string{}
	for _, n := range names {
		table["registry.example.com/"+n+":1"] = "registry.example.com/" + n + "@sha256:" + strings.Repeat(string(fill), 64)
	}
	return table
}

// digestAssign is Gatekeeper's tag-to-digest Assign for the pods of one
// namespace, with a failure policy.
func digestAssign(name, namespace, provider, policy string) string {
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
    - apiGroups: [""]
      kinds: ["Pod"]
    namespaces: ["` + namespace + `"]
  location: "spec.containers[name: *].image"
  parameters:
    assign:
      externalData:
        provider: ` + provider + `
        dataSource: ValueAtLocation
        failurePolicy: ` + policy + "\n"
}

const digestDefault = "registry.example.com/quarantined:0"

// admitPod dry-runs a pod with the named containers in namespace and
// returns its images, or the refusal.
func admitPod(client kubernetes.Interface, namespace string, containers ...string) ([]string, error) {
	pod, err := client.CoreV1().Pods(namespace).Create(context.Background(), framework.Pod("probe", nil, containers...), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, err
	}
	return podImages(pod), nil
}

func podImages(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

func callCount(tp *tagprovider.Provider) int { return len(tp.Calls()) }

// TestExternalData is Gatekeeper's tag-to-digest mutation through the real
// server: a Provider and Assigns applied with kubectl, each failure
// policy, the cache, each way a provider fails, a slow provider under
// load that delays nothing else, the Provider edited and deleted live,
// and bad objects refused at apply with the field named.
func TestExternalData(t *testing.T) {
	names := []string{"app", "side", "m0", "m1", "m2", "m3", "m4", "s0", "s1", "s2", "s3"}
	tp := tagprovider.Start(t, digestTable(names, 'a'))
	client := framework.KubeClient(t, server.AdminConfig())
	applyDigestMutators(t, tp, client)

	t.Run("one call per request, then the cache", func(t *testing.T) { testExternalDataCache(t, tp, client) })
	t.Run("failure policies on an unknown tag", func(t *testing.T) {
		checkPolicies(t, client, "unknown", "unknown tag")
	})
	testProviderFailures(t, tp, client)
	t.Run("a slow provider under load delays nothing else", func(t *testing.T) { testSlowProvider(t, tp, client) })
	t.Run("the Provider edited and deleted live", func(t *testing.T) { testProviderLive(t, tp, client, names) })
	t.Run("bad objects refused at apply", func(t *testing.T) { testBadExternalData(t, tp) })
}

// digestPolicies are the namespaces of TestExternalData's Assigns, each
// with its failure policy.
var digestPolicies = map[string]string{"xd-fail": "Fail", "xd-ignore": "Ignore", "xd-default": "UseDefault\n        default: " + digestDefault}

// pinnedApp is framework.Pod's image for the app container pinned by the
// provider of digestTable(names, 'a').
var pinnedApp = "registry.example.com/app@sha256:" + strings.Repeat("a", 64)

// applyDigestMutators makes the namespaces, applies the provider and one
// Assign per failure policy, and waits until pods are pinned.
func applyDigestMutators(t *testing.T, tp *tagprovider.Provider, client kubernetes.Interface) {
	t.Helper()
	for ns := range digestPolicies {
		framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	}
	framework.CreateNamespace(t, server.AdminConfig(), "xd-plain", nil)

	mustKubectl(t, tp.Manifest("xd-tags", 2), "apply", "-f", "-")
	t.Cleanup(func() {
		kubectl(t, "", "delete", "provider.externaldata.gatekeeper.sh", "xd-tags", "--ignore-not-found")
	})
	for ns, policy := range digestPolicies {
		mustKubectl(t, digestAssign(ns, ns, "xd-tags", policy), "apply", "-f", "-")
		t.Cleanup(func() { kubectl(t, "", "delete", "assign", ns, "--ignore-not-found") })
	}
	for ns := range digestPolicies {
		framework.Poll(t, "pods in "+ns+" to be pinned", func() bool {
			imgs, err := admitPod(client, ns, "app")
			return err == nil && imgs[0] == pinnedApp
		})
	}
}

// testExternalDataCache: one call per request carrying only the uncached
// keys, then answers from the cache, and no call for a pod no
// external-data mutator matches.
func testExternalDataCache(t *testing.T, tp *tagprovider.Provider, client kubernetes.Interface) {
	before := callCount(tp)
	imgs, err := admitPod(client, "xd-fail", "side", "app")
	if err != nil || imgs[0] != strings.Replace(pinnedApp, "app", "side", 1) || imgs[1] != pinnedApp {
		t.Fatalf("images %v, error %v", imgs, err)
	}
	calls := tp.Calls()[before:]
	if len(calls) != 1 || strings.Join(calls[0], ",") != "registry.example.com/side:1" {
		t.Errorf("calls %v, want one with the one uncached key", calls)
	}
	before = callCount(tp)
	if _, err := admitPod(client, "xd-ignore", "side", "app"); err != nil {
		t.Fatal(err)
	}
	if callCount(tp) != before {
		t.Errorf("calls %v, want the cache to answer", tp.Calls()[before:])
	}
	// A pod no external-data mutator matches makes no call.
	if _, err := admitPod(client, "xd-plain", "unknown"); err != nil || callCount(tp) != before {
		t.Errorf("a pod in xd-plain: %v, calls %v", err, tp.Calls()[before:])
	}
}

// testProviderFailures: each way the provider fails, under each policy.
func testProviderFailures(t *testing.T, tp *tagprovider.Provider, client kubernetes.Interface) {
	modes := []struct {
		name string
		mode tagprovider.Mode
		want string
	}{
		{"HTTP 500", tagprovider.Fail, "HTTP 500"},
		{"garbage", tagprovider.Garbage, "not a ProviderResponse"},
		{"system error", tagprovider.SystemError, "registry unreachable"},
		{"per-key errors", tagprovider.Errors, "lookup failed"},
	}
	for i, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			tp.SetMode(m.mode)
			defer tp.SetMode(tagprovider.Answer)
			checkPolicies(t, client, fmt.Sprintf("m%d", i), m.want)
		})
	}
}

// testSlowProvider: calls held by a slow provider delay no other pod, and
// end with the default once the provider's timeout ends them.
func testSlowProvider(t *testing.T, tp *tagprovider.Provider, client kubernetes.Interface) {
	// A long timeout, so that the slow calls are still held however
	// slowly the other pods are admitted.
	mustKubectl(t, tp.Manifest("xd-tags", 10), "apply", "-f", "-")
	defer mustKubectl(t, tp.Manifest("xd-tags", 2), "apply", "-f", "-")
	framework.Poll(t, "the edited provider to be in use", func() bool {
		before := callCount(tp)
		_, err := admitPod(client, "xd-fail", "app")
		return err == nil && callCount(tp) > before
	})
	tp.SetMode(tagprovider.Slow)
	defer tp.SetMode(tagprovider.Answer)
	var wg sync.WaitGroup
	results := make([][]string, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Go(func() { results[i], errs[i] = admitPod(client, "xd-default", fmt.Sprintf("s%d", i)) })
	}
	framework.Poll(t, "the provider to hold the calls", func() bool { return tp.Held() == 4 })
	for i := range 20 {
		imgs, err := admitPod(client, "xd-plain", "app")
		if err != nil || imgs[0] != "registry.example.com/app:1" {
			t.Fatalf("pod %d in xd-plain: %v, %v", i, imgs, err)
		}
	}
	if tp.Held() != 4 {
		t.Errorf("the slow calls ended (%d held) before the other pods were admitted", tp.Held())
	}
	wg.Wait()
	for i := range 4 {
		if errs[i] != nil || results[i][0] != digestDefault {
			t.Errorf("slow pod %d: %v, %v, want the default once the provider's timeout ends the call", i, results[i], errs[i])
		}
	}
}

// testProviderLive: a Provider edited to another provider pins with the new
// answers; deleted, pods fail or get the default as their policy says.
func testProviderLive(t *testing.T, tp *tagprovider.Provider, client kubernetes.Interface, names []string) {
	tp2 := tagprovider.Start(t, digestTable(names, 'b'))
	repinned := "registry.example.com/app@sha256:" + strings.Repeat("b", 64)
	mustKubectl(t, tp2.Manifest("xd-tags", 2), "apply", "-f", "-")
	framework.Poll(t, "pods to be pinned by the edited provider", func() bool {
		imgs, err := admitPod(client, "xd-fail", "app")
		return err == nil && imgs[0] == repinned
	})
	mustKubectl(t, "", "delete", "provider.externaldata.gatekeeper.sh", "xd-tags")
	framework.Poll(t, "pods to fail without the provider", func() bool {
		_, err := admitPod(client, "xd-fail", "app")
		return err != nil && strings.Contains(err.Error(), `no external data provider "xd-tags"`)
	})
	if imgs, err := admitPod(client, "xd-default", "app"); err != nil || imgs[0] != digestDefault {
		t.Errorf("UseDefault without the provider: %v, %v", imgs, err)
	}
	mustKubectl(t, tp.Manifest("xd-tags", 2), "apply", "-f", "-")
}

// testBadExternalData: bad Providers and externalData refused at apply with
// the field named.
func testBadExternalData(t *testing.T, tp *tagprovider.Provider) {
	for _, tc := range []struct {
		name, manifest string
		want           []string
	}{
		{"http provider", strings.Replace(tp.Manifest("xd-bad", 2), "https://", "http://", 1), []string{"spec.url"}},
		{"provider without caBundle", strings.Split(tp.Manifest("xd-bad", 2), "  caBundle:")[0], []string{`The Provider "xd-bad" is invalid`, "spec.caBundle: Required"}},
		{"provider timeout", strings.Replace(tp.Manifest("xd-bad", 2), "timeout: 2", "timeout: 300", 1), []string{"spec.timeout"}},
		{"UseDefault without default", digestAssign("xd-bad", "xd-fail", "xd-tags", "UseDefault"), []string{`"xd-bad" is invalid`, "spec.parameters.assign.externalData.default"}},
		{"unknown failure policy", digestAssign("xd-bad", "xd-fail", "xd-tags", "Retry"), []string{"spec.parameters.assign.externalData.failurePolicy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := kubectl(t, tc.manifest, "apply", "-f", "-")
			if res.Err == nil {
				t.Fatalf("applied: %s", res.Stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Stderr, w) {
					t.Errorf("kubectl said %q, want %q", res.Stderr, w)
				}
			}
		})
	}
}

// checkPolicies admits a pod with container name (whose key the provider
// fails on) in each policy's namespace: Fail refuses naming the mutator and
// why, Ignore keeps the tag, UseDefault writes the default.
func checkPolicies(t *testing.T, client kubernetes.Interface, name, why string) {
	t.Helper()
	tag := "registry.example.com/" + name + ":1"
	if _, err := admitPod(client, "xd-fail", name); err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "Assign/xd-fail") {
		t.Errorf("Fail: %v, want a refusal naming Assign/xd-fail and %q", err, why)
	}
	if imgs, err := admitPod(client, "xd-ignore", name); err != nil || imgs[0] != tag {
		t.Errorf("Ignore: %v, %v, want %s", imgs, err, tag)
	}
	if imgs, err := admitPod(client, "xd-default", name); err != nil || imgs[0] != digestDefault {
		t.Errorf("UseDefault: %v, %v, want %s", imgs, err, digestDefault)
	}
}
