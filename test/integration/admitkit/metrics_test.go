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
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// scrapeAdmitkit reads the named metric families from a server's /metrics
// and returns their samples as "name{label=value,...}" (labels sorted),
// histograms as their _count and _sum. It asks for those families alone
// (the name[] parameter of the Prometheus handler): the whole of
// kube-apiserver's /metrics is megabytes, seconds to write and parse with
// the race detector on.
func scrapeAdmitkit(t *testing.T, client kubernetes.Interface, families ...string) map[string]float64 {
	t.Helper()
	if len(families) == 0 {
		t.Fatal("scrapeAdmitkit: no metric family named")
	}
	req := client.CoreV1().RESTClient().Get().AbsPath("/metrics")
	for _, family := range families {
		req = req.Param("name[]", family)
	}
	raw, err := req.DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading /metrics: %v", err)
	}
	return textSamples(t, string(raw))
}

// textSamples parses metrics in the text format into the samples of the
// admitkit plugins' families, as admitkitSamples returns them.
func textSamples(t *testing.T, raw string) map[string]float64 {
	t.Helper()
	parsed, err := testutil.TextToMetricFamilies(strings.NewReader(raw))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return admitkitSamples(slices.Collect(maps.Values(parsed)))
}

// familiesOf names the metric families of samples as scrapeAdmitkit
// returns them: a histogram's _count and _sum are its family's.
func familiesOf(samples map[string]float64) []string {
	var families []string
	for sample := range samples {
		family, _, _ := strings.Cut(sample, "{")
		for _, suffix := range []string{"_count", "_sum"} {
			family = strings.TrimSuffix(family, suffix)
		}
		if !slices.Contains(families, family) {
			families = append(families, family)
		}
	}
	return families
}

// admitkitMetrics reads the admitkit samples of the host's plugins: from
// the webhook server's own /metrics beside a stock kube-apiserver, and
// in-process from the registry kube-apiserver's /metrics serves, which is
// this test process's (framework.Start runs the server in it). Reading it
// here gives the same samples without the megabytes of text; TestMetrics
// reads them through /metrics.
func (h *host) admitkitMetrics(t *testing.T) map[string]float64 {
	t.Helper()
	if h.webhook == nil {
		families, err := legacyregistry.DefaultGatherer.Gather()
		if err != nil {
			t.Fatalf("gathering the metrics: %v", err)
		}
		return admitkitSamples(families)
	}
	code, raw, err := h.webhook.Get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("reading the webhook server's /metrics: %d, %v", code, err)
	}
	return textSamples(t, raw)
}

// admitkitSamples returns the samples of the admitkit plugins' families
// in the form scrapeAdmitkit returns.
func admitkitSamples(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, family := range families {
		name := family.GetName()
		if !strings.HasPrefix(name, "apiserver_admission_podpreset_") && !strings.HasPrefix(name, "apiserver_admission_locationmutator_") &&
			!strings.HasPrefix(name, "apiserver_admission_noderestriction_") {
			continue
		}
		for _, m := range family.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			slices.Sort(labels)
			suffix := "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[name+suffix] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name+suffix] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[name+"_count"+suffix] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+suffix] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

var metricsAdmissionConfig = framework.AdmissionConfiguration(framework.LocationMutatorConfiguration(`    mutators:
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: always-pull}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        match: {namespaces: [metrics]}
        location: "spec.containers[name:*].imagePullPolicy"
        parameters: {assign: {value: Always}}
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: always-pull-init}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        match: {namespaces: [metrics]}
        location: "spec.initContainers[name:*].imagePullPolicy"
        parameters: {assign: {value: Always}}
`))

// TestMetrics reads every admitkit metric from a server's /metrics after
// requests that move it. It starts a server of its own: the metrics live in
// one registry per process, which every in-process server shares, and the
// gauges must show this server's mutators and presets. Counters are read as
// differences.
func TestMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts another server")
	}
	beforeStart := scrapeAdmitkit(t, framework.KubeClient(t, server.AdminConfig()), startupFamilies...)
	srv := startMetricsServer(t)
	client := framework.KubeClient(t, srv.AdminConfig())
	checkStartupMetrics(t, client, beforeStart)
	createMetricsPresets(t, client, framework.SettingsClient(t, srv.AdminConfig()))
	waitForPresetGauges(t, client)

	movedFamilies := familiesOf(metricsMoved)
	before := scrapeAdmitkit(t, client, movedFamilies...)
	sendMetricsRequests(t, client, framework.KubeClient(t, srv.NodeConfig("metrics-node")))
	checkMetricsMoved(t, before, scrapeAdmitkit(t, client, movedFamilies...))
}

// startMetricsServer starts the server TestMetrics reads, with two
// configured mutators and a node identity.
func startMetricsServer(t *testing.T) *framework.Server {
	t.Helper()
	srv, err := framework.Start(framework.Config{
		AdmissionConfig: metricsAdmissionConfig,
		Args:            []string{framework.ServeSettings, "--enable-admission-plugins=PodPreset,LocationMutator,NodeRestriction"},
		Nodes:           []string{"metrics-node"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Cleanup(); err != nil {
			t.Error(err)
		}
	})
	return srv
}

// startupFamilies are the families checkStartupMetrics reads.
var startupFamilies = []string{
	"apiserver_admission_locationmutator_mutators",
	"apiserver_admission_locationmutator_mutator_ingestions_total",
	"apiserver_admission_locationmutator_mutator_ingestion_duration_seconds",
}

// checkStartupMetrics checks what taking in the configuration's two
// enforced mutators moved.
func checkStartupMetrics(t *testing.T, client kubernetes.Interface, beforeStart map[string]float64) {
	t.Helper()
	started := scrapeAdmitkit(t, client, startupFamilies...)
	const mutators = 2
	want := map[string]float64{
		"apiserver_admission_locationmutator_mutators{source=config,state=enforced}": mutators,
		"apiserver_admission_locationmutator_mutators{source=config,state=error}":    0,
		"apiserver_admission_locationmutator_mutators{source=config,state=conflict}": 0,
	}
	// The API source's gauges belong to the package's main server, which
	// runs mutators from the API in this process (one registry for all):
	// here they only have to be exported.
	for _, state := range []string{"enforced", "error", "conflict"} {
		name := "apiserver_admission_locationmutator_mutators{source=api,state=" + state + "}"
		if _, ok := started[name]; !ok {
			t.Errorf("%s is not exported", name)
		}
	}
	for _, name := range []string{
		"apiserver_admission_locationmutator_mutator_ingestions_total{outcome=enforced,source=config}",
		"apiserver_admission_locationmutator_mutator_ingestion_duration_seconds_count{outcome=enforced,source=config}",
	} {
		want[name] = beforeStart[name] + mutators
	}
	got := map[string]float64{}
	for name := range want {
		got[name] = started[name]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after start-up (-want +got):\n%s", diff)
	}
}

// createMetricsPresets makes the metrics namespace with its default
// account (no controller makes the one the ServiceAccount plugin requires),
// and a PodPreset and a ClusterPodPreset for app=web pods.
func createMetricsPresets(t *testing.T, client kubernetes.Interface, settings settingsclient.Interface) {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metrics"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ServiceAccounts("metrics").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := map[string]string{"app": "web"}
	if _, err := settings.SettingsV1alpha1().PodPresets("metrics").Create(ctx, podPreset("db", web, corev1.EnvVar{Name: "DB_HOST", Value: "db"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := settings.SettingsV1alpha1().ClusterPodPresets().Create(ctx, &settingsv1alpha1.ClusterPodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "proxy"},
		Spec: settingsv1alpha1.ClusterPodPresetSpec{PodPresetSpec: settingsv1alpha1.PodPresetSpec{
			Selector: metav1.LabelSelector{MatchLabels: web},
			Env:      []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "http://proxy:3128"}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitForPresetGauges waits until the presets gauge shows both presets,
// once the plugin's informers have them.
func waitForPresetGauges(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	want := map[string]float64{
		"apiserver_admission_podpreset_presets{kind=PodPreset}":        1,
		"apiserver_admission_podpreset_presets{kind=ClusterPodPreset}": 1,
	}
	var got map[string]float64
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		all := scrapeAdmitkit(t, client, familiesOf(want)...)
		got = map[string]float64{}
		for name := range want {
			got[name] = all[name]
		}
		return maps.Equal(want, got), nil
	}); err != nil {
		t.Errorf("presets gauge %v, want %v", got, want)
	}
}

// sendMetricsRequests makes three pod creates: one gets both presets, one
// conflicts with the PodPreset, one is excluded. Then the node registers
// its Node and tries to taint it.
func sendMetricsRequests(t *testing.T, client, nodeClient kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	web := map[string]string{"app": "web"}
	conflicting := framework.Pod("conflicting", web, "app")
	conflicting.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_HOST", Value: "elsewhere"}}
	excluded := framework.Pod("excluded", web, "app")
	excluded.Annotations = map[string]string{presetAnnotationPrefix + "exclude": "true"}
	for _, pod := range []*corev1.Pod{framework.Pod("web", web, "app"), conflicting, excluded} {
		if _, err := client.CoreV1().Pods("metrics").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node, err := nodeClient.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "metrics-node"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the node registering itself: %v", err)
	}
	node.Spec.Taints = []corev1.Taint{{Key: "example.com/evil", Effect: corev1.TaintEffectNoSchedule}}
	if _, err := nodeClient.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the node tainting itself: %v, want Forbidden", err)
	}
}

// metricsMoved is how far sendMetricsRequests moves each sample.
var metricsMoved = map[string]float64{
	"apiserver_admission_noderestriction_requests_total{resource=nodes}":                            2,
	"apiserver_admission_noderestriction_requests_total{resource=pods}":                             0,
	"apiserver_admission_noderestriction_denied_requests_total{reason=taint_change,resource=nodes}": 1,
	"apiserver_admission_podpreset_pods_evaluated_total{}":                                          2,
	"apiserver_admission_podpreset_pods_injected_total{}":                                           1,
	"apiserver_admission_podpreset_presets_applied_total{kind=PodPreset}":                           1,
	"apiserver_admission_podpreset_presets_applied_total{kind=ClusterPodPreset}":                    1,
	"apiserver_admission_podpreset_conflicts_total{}":                                               1,
	"apiserver_admission_podpreset_not_synced_refusals_total{}":                                     0,
	"apiserver_admission_locationmutator_objects_mutated_total{}":                                   3,
	"apiserver_admission_locationmutator_convergence_passes_count{}":                                3,
	"apiserver_admission_locationmutator_convergence_passes_sum{}":                                  3,
	"apiserver_admission_locationmutator_not_converged_refusals_total{}":                            0,
}

// checkMetricsMoved checks what sendMetricsRequests moved. The
// LocationMutator changes all three pods, each in one pass: only
// always-pull changes them, and no mutator before it reads what it
// writes, so that pass proves the next would change nothing.
// NodeRestriction counts none of the pods, only the node's two writes.
func checkMetricsMoved(t *testing.T, before, after map[string]float64) {
	t.Helper()
	want := metricsMoved
	got := map[string]float64{}
	for name := range want {
		if _, ok := after[name]; !ok {
			t.Errorf("%s is not on /metrics", name)
		}
		got[name] = after[name] - before[name]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metric changes after three pod creates and two node writes (-want +got):\n%s", diff)
	}
}
