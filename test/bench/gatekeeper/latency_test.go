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

package gatekeeper

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
)

// latencyNamespace holds the pods on every scenario's server.
const latencyNamespace = "bench"

// latencyScenario is one server of the comparison.
type latencyScenario struct {
	name string
	srv  *stockServer
	// problems says what a created pod lacks of the scenario's mutations
	// (or, for the baseline, what it has), so that a scenario that did
	// nothing, or a webhook that timed out and was ignored, fails the run
	// instead of being measured.
	problems func(pod *corev1.Pod) []string
	// reached, when set, says whether kube-apiserver has called the
	// scenario's webhook yet, for a webhook whose pods show nothing of
	// it.
	reached   func() bool
	latencies []time.Duration
	// probes read the parts of the scenario's webhook call (see
	// splitPart); before and after are their reads around the
	// measured creates.
	probes        [partCount]splitProbe
	before, after [partCount]histogramSum
	// webhook is the scenario's webhook server when it runs as a process
	// of its own; cpuUsed is the CPU time its processes (kube-apiserver,
	// etcd, the webhook server) used while its own measured creates ran,
	// so that what they use while the other scenarios' run (informers,
	// garbage collection, leases) is left out.
	webhook *process
	cpuUsed [3]time.Duration
}

// latencyRun is how much TestPodCreateLatency creates.
type latencyRun struct {
	measure     bool
	perScenario int // creates per scenario, spread over the rounds
	rounds      int
	warmups     int // creates per scenario before the rounds
}

// TestPodCreateLatency compares pod create latency on upstream's stock
// kube-apiserver: without webhooks; with admitkit's webhooks (five
// PodPresets selecting the pod, and the LocationMutator with the ten
// mutators of ten-pod-mutators.yaml); and with Gatekeeper v3.23.1's own
// mutation webhook (its manager, built from this module's graph) with the
// same ten mutators. Three more give the floor that what a webhook adds
// is made of: admitkit's server with no preset and no mutator (it decodes
// and answers, with no patch), and admitkit's webhook configurations
// pointed at a webhook that only answers allowed (allowingWebhook), over
// HTTP/2 as kube-apiserver reaches a webhook on loopback and over
// HTTP/1.1 as it reaches one through a Service. Each scenario has its own
// kube-apiserver and etcd; they are measured in interleaved rounds, so
// that the noise of a shared machine hits them alike. Each webhook's call
// is split into its parts from kube-apiserver's metrics and the webhook
// server's own (latencySplit).
//
// Every run builds and starts everything and checks, on a few creates,
// that each pod has its scenario's mutations. The measurement is opt-in:
// ADMITKIT_BENCH=1 creates 1000 pods per scenario (ADMITKIT_BENCH_PODS
// to change) after 100 warm-ups and prints the table. No time is
// asserted.
func TestPodCreateLatency(t *testing.T) {
	run := latencyRun{perScenario: 4, rounds: 2}
	if os.Getenv("ADMITKIT_BENCH") != "" {
		run = latencyRun{measure: true, perScenario: 1000, rounds: 20, warmups: 100}
		if v := os.Getenv("ADMITKIT_BENCH_PODS"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 100 {
				t.Fatalf("ADMITKIT_BENCH_PODS=%q: want a number of at least 100", v)
			}
			run.perScenario = n
		}
	}
	bins := buildBinaries(t)
	mutators := readObjects(t, tenMutatorsFile)
	presets := benchPresets(t)
	compiled := compileBench(t, mutators, presets)
	// The first is the baseline the others' additions are measured from;
	// admitkit's webhook, Gatekeeper's and the compiled policies are the
	// comparison (latencyTable divides what admitkit's webhook and the
	// compiled policies add by what Gatekeeper's adds), the rest its floor.
	none := &latencyScenario{name: "no webhook, no policy", problems: unmutated}
	admitkit := &latencyScenario{name: "admitkit: 5 presets, 10 mutators", problems: func(pod *corev1.Pod) []string {
		return append(presetProblems(pod), mutationProblems(pod)...)
	}}
	gatekeeper := &latencyScenario{name: "Gatekeeper v3.23.1: 10 mutators", problems: mutationProblems}
	policies := &latencyScenario{name: compiled.name(), problems: compiled.problems}
	idle := &latencyScenario{name: "admitkit: nothing to apply", problems: unmutated}
	allowing := &latencyScenario{name: "allowing webhook, HTTP/2", problems: unmutated}
	allowing1 := &latencyScenario{name: "allowing webhook, HTTP/1.1", problems: unmutated}
	scenarios := []*latencyScenario{none, admitkit, gatekeeper, policies, idle, allowing, allowing1}
	for _, s := range scenarios {
		s.srv = startStock(t, bins)
		createObjects(t, s.srv.objects, benchNamespace())
	}
	none.probes = none.srv.apiserverProbes("", "")
	for _, s := range []*latencyScenario{admitkit, idle} {
		url, ca, p := installAdmitkit(t, s.srv, bins)
		s.webhook = p
		s.probes = s.srv.apiserverProbes(podsHook, strings.TrimPrefix(url, "https://"))
		s.probes[partServer] = admitkitServerProbe(url+"/metrics", ca)
	}
	createObjects(t, admitkit.srv.objects, append(slices.Clone(mutators), presets...))
	webhookURL, metricsURL, manager := installGatekeeper(t, gatekeeper.srv, bins)
	gatekeeper.webhook = manager
	createObjects(t, gatekeeper.srv.objects, mutators)
	gatekeeper.probes = gatekeeper.srv.apiserverProbes(gatekeeperHook, strings.TrimPrefix(webhookURL, "https://"))
	gatekeeper.probes[partServer] = gatekeeperServerProbe(metricsURL)
	bare, err := dryRunPod(context.Background(), policies.srv)
	if err != nil {
		t.Fatal(err)
	}
	bareLacking := compiled.lacking(bare)
	if !slices.Contains(bareLacking, true) {
		t.Fatalf("%s: a pod has every mutation before the policies are installed", policies.name)
	}
	installPolicies(t, policies.srv, compiled.result)
	policies.probes = policies.srv.policyProbes()
	for _, s := range []*latencyScenario{allowing, allowing1} {
		w := startAllowingWebhook(t, s == allowing)
		installAdmitkitHooks(t, s.srv, w.url, w.ca)
		s.probes = s.srv.apiserverProbes(podsHook, strings.TrimPrefix(w.url, "https://"))
		s.probes[partServer] = w.probe
		s.reached = func() bool { return w.handled.Load() > 0 }
	}
	for _, s := range scenarios {
		s.warmUp(t, run.warmups)
	}
	run.interleave(t, scenarios)
	if run.measure {
		table := latencyTable(scenarios, run, []latencyRatio{{admitkit, gatekeeper, 0.50}, {policies, gatekeeper, 0.25}}) +
			latencySplit(scenarios) + policyChecks(t, policies.srv)
		fmt.Print(table)
		t.Log(table)
	}
	if dir := os.Getenv("ADMITKIT_BENCH_PROFILE"); dir != "" {
		for _, s := range scenarios {
			s.profile(t, dir, profileSeconds)
		}
	}
	compiled.remove(t, policies.srv, bareLacking)
}

// The webhooks pod creates go to: admitkit's of hack/manifests, and
// Gatekeeper's of its deploy/gatekeeper.yaml.
const (
	podsHook       = "pods.admission.admitkit.io"
	gatekeeperHook = "mutation.gatekeeper.sh"
)

// benchNamespace is the pods' namespace and its default service account
// (no controller manager runs to make it).
func benchNamespace() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": latencyNamespace}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": latencyNamespace}}},
	}
}

// benchPod is the pod locationmutator's benchmarks admit, named name, in
// latencyNamespace.
func benchPod(name string) *corev1.Pod {
	pod := threeContainerPod()
	pod.Name, pod.Namespace = name, latencyNamespace
	return pod
}

// warmUp waits until a dry-run create shows the scenario's mutations
// (informers synced, mutators ingested, webhook configurations picked
// up), then creates warmups pods.
func (s *latencyScenario) warmUp(t *testing.T, warmups int) {
	t.Helper()
	pods := s.srv.client.CoreV1().Pods(latencyNamespace)
	var last []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err := pods.Create(ctx, benchPod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = []string{err.Error()}
			return false, nil
		}
		last = s.problems(pod)
		if s.reached != nil && !s.reached() {
			last = append(last, "the webhook was not called")
		}
		return len(last) == 0, nil
	})
	if err != nil {
		t.Fatalf("%s: the scenario's mutations never applied: %v (last: %v)", s.name, err, last)
	}
	for i := range warmups {
		if _, err := pods.Create(context.Background(), benchPod(fmt.Sprintf("warmup-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
}

// interleave creates the run's pods on every scenario, timing each create
// and checking each pod. Each round visits the scenarios in a new order,
// after a GC of this process, so that neither the position in a round nor
// the client's garbage favours one.
func (run latencyRun) interleave(t *testing.T, scenarios []*latencyScenario) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range scenarios {
		var err error
		if s.before, err = readSplit(ctx, s.probes); err != nil {
			t.Fatalf("%s: reading its metrics: %v", s.name, err)
		}
	}
	for round := range run.rounds {
		order := slices.Clone(scenarios)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, s := range order {
			runtime.GC()
			cpuBefore := s.cpu(t)
			for j := range run.perScenario / run.rounds {
				name := fmt.Sprintf("bench-%d-%d", round, j)
				start := time.Now()
				pod, err := s.srv.client.CoreV1().Pods(latencyNamespace).Create(ctx, benchPod(name), metav1.CreateOptions{})
				elapsed := time.Since(start)
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				if p := s.problems(pod); len(p) > 0 {
					t.Fatalf("%s: pod %s: %v", s.name, name, p)
				}
				s.latencies = append(s.latencies, elapsed)
			}
			for i, d := range s.cpu(t) {
				s.cpuUsed[i] += d - cpuBefore[i]
			}
		}
	}
	for _, s := range scenarios {
		var err error
		if s.after, err = readSplit(ctx, s.probes); err != nil {
			t.Fatalf("%s: reading its metrics: %v", s.name, err)
		}
	}
}

// cpu is the CPU time used so far by the scenario's kube-apiserver, its
// etcd and its webhook server (zero for one that is not a process).
func (s *latencyScenario) cpu(t *testing.T) [3]time.Duration {
	t.Helper()
	var out [3]time.Duration
	for i, p := range []*process{s.srv.apiserver, s.srv.etcd, s.webhook} {
		if p == nil {
			continue
		}
		d, err := p.cpu()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d
	}
	return out
}
