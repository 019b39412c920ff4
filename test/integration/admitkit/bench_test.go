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
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/admitkit/admitkit/test/integration/framework"
)

// benchScenario is one server of the latency comparison.
type benchScenario struct {
	name string
	cfg  framework.Config
	// setUp prepares the namespace (presets, policies) once the server runs.
	setUp func(t *testing.T, srv *framework.Server, ns string)
	// check says whether a created pod has the scenario's mutations, so that
	// a scenario that silently did nothing is not measured.
	check func(pod *corev1.Pod) bool

	srv       *framework.Server
	client    kubernetes.Interface
	latencies []time.Duration
}

func locationMutatorConfig(mutators string) string {
	return framework.AdmissionConfiguration(framework.LocationMutatorConfiguration(`    mutators:
` + mutators))
}

// alwaysPullPolicy is a MutatingAdmissionPolicy doing what the Assign
// load-always-pull does: imagePullPolicy Always on every container.
func alwaysPullPolicy() (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	return podCreatePolicy("always-pull", admissionregistrationv1.IfNeededReinvocationPolicy, map[string]string{"bench": "map"},
		`Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, imagePullPolicy: "Always"})}}`)
}

// podCreatePolicy is a MutatingAdmissionPolicy named name that applies
// expression to every pod create, and its binding to the namespaces
// labelled namespaceLabels.
func podCreatePolicy(name string, reinvocation admissionregistrationv1.ReinvocationPolicyType, namespaceLabels map[string]string, expression string) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
					},
				}},
			},
			FailurePolicy:      ptrTo(admissionregistrationv1.Fail),
			ReinvocationPolicy: reinvocation,
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expression},
			}},
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName:     name,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: namespaceLabels}},
		},
	}
	return policy, binding
}

func ptrTo[T any](v T) *T { return &v }

func allAlwaysPull(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if c.ImagePullPolicy != corev1.PullAlways {
			return false
		}
	}
	return true
}

// TestCreateLatency compares pod create latency (p50, p99) with admitkit's
// plugins off, on (five presets and five mutators matching every pod), the
// PodPreset plugin alone, the LocationMutator doing one imagePullPolicy
// Assign or matching nothing, and a MutatingAdmissionPolicy doing the same
// mutation. The servers run in this process at once and are measured in
// interleaved rounds, so that background load hits them alike.
//
// Every run starts every scenario's server and checks that each pod it
// creates has the scenario's mutations, on a few creates, so that the
// comparison cannot silently measure a scenario that does nothing. The
// measurement itself is opt-in: ADMITKIT_BENCH=1 creates 1000 pods per
// scenario (ADMITKIT_BENCH_PODS to change) after 100 warm-ups, and prints
// the table and each plugin's share of a create.
func TestCreateLatency(t *testing.T) {
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
	scenarios := latencyScenarios()
	for _, s := range scenarios {
		startScenario(t, s, run.warmups)
	}
	run.interleave(t, scenarios)
	if !run.measure {
		return
	}
	table := latencyTable(scenarios, run)
	table += pluginShares(t, scenarios[0], scenarios[1], run.perScenario)
	fmt.Print(table)
	t.Log(table)
}

// latencyRun is how much TestCreateLatency creates: a few pods to check
// the scenarios, or enough to measure them.
type latencyRun struct {
	measure     bool
	perScenario int // creates per scenario, spread over the rounds
	rounds      int
	warmups     int // creates per scenario before the rounds
}

// benchNamespace holds every scenario's pods, on each scenario's server.
const benchNamespace = "load-bench"

// latencyScenarios are TestCreateLatency's servers; the first is the
// baseline, the second the one whose plugins pluginShares measures.
func latencyScenarios() []*benchScenario {
	// The first of loadMutators alone: the imagePullPolicy Assign.
	alwaysPullOnly := loadMutators[:strings.Index(loadMutators, "    - apiVersion: mutations.gatekeeper.sh/v1\n      kind: Assign\n      metadata: {name: load-no-escalation}")]
	presets := func(t *testing.T, srv *framework.Server, ns string) {
		setUpLoadPresets(t, ns, framework.SettingsClient(t, srv.AdminConfig()))
	}
	return []*benchScenario{
		{
			name:  "plugins off",
			cfg:   framework.Config{Args: []string{framework.ServeSettings, "--disable-admission-plugins=PodPreset,NodeRestriction,LocationMutator"}},
			check: func(*corev1.Pod) bool { return true },
		},
		{
			name: "plugins on: 5 presets, 5 mutators",
			cfg: framework.Config{
				AdmissionConfig: locationMutatorConfig(loadMutators),
				Args:            []string{framework.ServeSettings, "--enable-admission-plugins=PodPreset,NodeRestriction,LocationMutator"},
			},
			setUp: presets,
			check: func(pod *corev1.Pod) bool { return len(presetAnnotations(pod)) == 5 && allAlwaysPull(pod) },
		},
		{
			name:  "PodPreset: 5 presets",
			cfg:   framework.Config{Args: []string{framework.ServeSettings, "--enable-admission-plugins=PodPreset"}},
			setUp: presets,
			check: func(pod *corev1.Pod) bool { return len(presetAnnotations(pod)) == 5 },
		},
		{
			name: "LocationMutator: imagePullPolicy",
			cfg: framework.Config{
				AdmissionConfig: locationMutatorConfig(alwaysPullOnly),
				Args:            []string{framework.ServeSettings, "--enable-admission-plugins=LocationMutator"},
			},
			check: allAlwaysPull,
		},
		{
			// The same Assign, matching no pod: what the plugin costs when
			// nothing applies.
			name: "LocationMutator: no mutator matches",
			cfg: framework.Config{
				AdmissionConfig: locationMutatorConfig(strings.Replace(alwaysPullOnly, `"load-*"`, `"elsewhere-*"`, 1)),
				Args:            []string{framework.ServeSettings, "--enable-admission-plugins=LocationMutator"},
			},
			check: func(pod *corev1.Pod) bool { return !allAlwaysPull(pod) },
		},
		{
			name:  "MutatingAdmissionPolicy: imagePullPolicy",
			cfg:   framework.Config{Args: []string{framework.ServeSettings, "--disable-admission-plugins=PodPreset,NodeRestriction,LocationMutator"}},
			setUp: createAlwaysPullPolicy,
			check: allAlwaysPull,
		},
	}
}

func createAlwaysPullPolicy(t *testing.T, srv *framework.Server, _ string) {
	ctx := context.Background()
	client, err := kubernetes.NewForConfig(srv.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	policy, binding := alwaysPullPolicy()
	if _, err := client.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startScenario starts s's server, sets up benchNamespace on it, waits
// until its mutations apply (informers, policy compilation) and creates
// warmups pods more.
func startScenario(t *testing.T, s *benchScenario, warmups int) {
	t.Helper()
	ctx := context.Background()
	srv, err := framework.Start(s.cfg)
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	t.Cleanup(func() { _ = srv.Cleanup() })
	s.srv = srv
	s.client, err = kubernetes.NewForConfig(srv.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := benchNamespace
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{"load": ns, "bench": "map"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if s.setUp != nil {
		s.setUp(t, srv, ns)
	}
	i := 0
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		i++
		pod, err := s.client.CoreV1().Pods(ns).Create(ctx, framework.Pod(fmt.Sprintf("warm-%d", i), map[string]string{"app": "load"}, "app", "sidecar"), metav1.CreateOptions{})
		return err == nil && s.check(pod), err
	})
	if err != nil {
		t.Fatalf("%s: the scenario's mutations never applied: %v", s.name, err)
	}
	for j := range warmups {
		if _, err := s.client.CoreV1().Pods(ns).Create(ctx, framework.Pod(fmt.Sprintf("warmup-%d", j), map[string]string{"app": "load"}, "app", "sidecar"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// interleave creates the run's pods on every scenario, timing each create
// and checking each pod. Each round visits the scenarios in a new order,
// after a GC, so that neither position in the round nor another server's
// garbage favours one.
func (run latencyRun) interleave(t *testing.T, scenarios []*benchScenario) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range run.rounds {
		order := slices.Clone(scenarios)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, s := range order {
			runtime.GC()
			for j := range run.perScenario / run.rounds {
				name := fmt.Sprintf("bench-%d-%d", round, j)
				start := time.Now()
				pod, err := s.client.CoreV1().Pods(benchNamespace).Create(ctx, framework.Pod(name, map[string]string{"app": "load"}, "app", "sidecar"), metav1.CreateOptions{})
				elapsed := time.Since(start)
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				if !s.check(pod) {
					t.Fatalf("%s: pod %s lacks the scenario's mutations", s.name, name)
				}
				s.latencies = append(s.latencies, elapsed)
			}
		}
	}
}

// latencyTable prints each scenario's percentiles against the baseline's p50.
func latencyTable(scenarios []*benchScenario, run latencyRun) string {
	base := framework.Percentile(scenarios[0].latencies, 50)
	var table strings.Builder
	fmt.Fprintf(&table, "\npod create latency, %d sequential creates per scenario in %d interleaved rounds (2 containers per pod)\n", run.perScenario, run.rounds)
	fmt.Fprintf(&table, "| %-42s | %8s | %8s | %8s | %s |\n", "scenario", "p50", "p90", "p99", "p50 vs off")
	fmt.Fprintf(&table, "|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 44), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 12))
	for _, s := range scenarios {
		p50 := framework.Percentile(s.latencies, 50)
		fmt.Fprintf(&table, "| %-42s | %8s | %8s | %8s | %+9.1f%% |\n", s.name, round(p50), round(framework.Percentile(s.latencies, 90)), round(framework.Percentile(s.latencies, 99)),
			100*(float64(p50)/float64(base)-1))
	}
	return table.String()
}

// pluginShares measures the time inside each plugin per pod create on the
// server on. End-to-end latency also moves with the size of what is
// stored, which the plugins grow; the admission metrics say what the
// plugins themselves cost. Every server of this process shares one metrics
// registry, so on is measured alone, in a phase of its own, between two
// readings, and compared with the p50 of base.
func pluginShares(t *testing.T, base, on *benchScenario, creates int) string {
	t.Helper()
	ctx := context.Background()
	baseP50 := framework.Percentile(base.latencies, 50)
	pluginSteps := []admissionStep{{"PodPreset", "admit"}, {"LocationMutator", "admit"}, {"NodeRestriction", "validate"}}
	before := make([]admissionTotal, len(pluginSteps))
	for i, step := range pluginSteps {
		before[i] = admissionTotals(t, on.client, step)
	}
	for j := range creates {
		if _, err := on.client.CoreV1().Pods(benchNamespace).Create(ctx, framework.Pod(fmt.Sprintf("alone-%d", j), map[string]string{"app": "load"}, "app", "sidecar"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\ntime inside each plugin per pod create on the %q server (%d more creates, its admission metrics):\n", on.name, creates)
	var all time.Duration
	for i, step := range pluginSteps {
		after := admissionTotals(t, on.client, step)
		perPod := time.Duration((after.seconds - before[i].seconds) / float64(creates) * float64(time.Second))
		calls := float64(after.calls-before[i].calls) / float64(creates)
		all += perPod
		fmt.Fprintf(&table, "| %-16s | %10s per pod | %5.2f%% of the \"off\" p50 | %.2f calls per pod |\n",
			step.plugin, perPod.Round(100*time.Nanosecond), 100*float64(perPod)/float64(baseP50), calls)
	}
	fmt.Fprintf(&table, "| %-16s | %10s per pod | %5.2f%% of the \"off\" p50 |\n", "all three", all.Round(100*time.Nanosecond), 100*float64(all)/float64(baseP50))
	return table.String()
}

// admissionStep is one plugin in one admission phase, as the server's
// metrics label it.
type admissionStep struct{ plugin, phase string }

type admissionTotal struct {
	seconds float64
	calls   int
}

// admissionTotals reads how many pod-or-other CREATE calls a plugin has
// admitted and the time they took, from the server's
// apiserver_admission_controller_admission_duration_seconds.
func admissionTotals(t *testing.T, client kubernetes.Interface, step admissionStep) admissionTotal {
	t.Helper()
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading metrics: %v", err)
	}
	var total admissionTotal
	labels := fmt.Sprintf(`{name="%s",operation="CREATE",rejected="false",type="%s"}`, step.plugin, step.phase)
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		switch name {
		case "apiserver_admission_controller_admission_duration_seconds_sum" + labels:
			total.seconds, err = strconv.ParseFloat(value, 64)
		case "apiserver_admission_controller_admission_duration_seconds_count" + labels:
			total.calls, err = strconv.Atoi(value)
		}
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
	}
	if total.calls == 0 {
		t.Fatalf("no %s %s calls in the metrics", step.plugin, step.phase)
	}
	return total
}

func round(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
