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
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/testutil"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
	"github.com/admitkit/admitkit/plugin/webhook/policysync"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// TestCompiledLive runs the webhook server with --compile-policies beside
// upstream's kube-apiserver: a preset that compiles reaches its pods once,
// through the policy and not the webhook; one that does not compile still
// reaches its pods through the webhook; an edit and a delete follow; and
// the policies go when the presets that made them go.
func TestCompiledLive(t *testing.T) {
	cfg := serverConfig()
	cfg.AdmissionConfig, cfg.Files, cfg.Args = "", nil, nil
	srv, err := framework.StartStock(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Cleanup() })
	wcfg := webhookConfig("compiled-live")
	wcfg.Args = []string{"--compile-policies", "--compiled-handover-delay=2s"}
	w, err := framework.StartWebhookHost(srv, wcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Kill)
	kube, err := kubernetes.NewForConfig(srv.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	settings, err := settingsclient.NewForConfig(srv.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{"compiled", "hooked"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// No controller manager runs beside this server to make it.
		if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	web := metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	compiled := &settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{Namespace: "compiled", Name: "env"},
		Spec: settingsv1alpha1.PodPresetSpec{Selector: web, Env: []corev1.EnvVar{{Name: "FOO", Value: "bar"}}}}
	// A size limit is a quantity, which the plugin compares by value and a
	// policy could not: this preset stays with the webhook.
	hooked := &settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{Namespace: "hooked", Name: "scratch"},
		Spec: settingsv1alpha1.PodPresetSpec{Selector: web, Env: []corev1.EnvVar{{Name: "BAR", Value: "baz"}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptrTo(resource.MustParse("1Gi"))}}}}}}
	if _, err := settings.SettingsV1alpha1().PodPresets("compiled").Create(ctx, compiled, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := settings.SettingsV1alpha1().PodPresets("hooked").Create(ctx, hooked, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Each preset says whether it compiled.
	annotated := func(ns, name, compiledValue, reason string) *settingsv1alpha1.PodPreset {
		t.Helper()
		var p *settingsv1alpha1.PodPreset
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err = settings.SettingsV1alpha1().PodPresets(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Annotations[policysync.CompiledAnnotation] == compiledValue &&
				strings.Contains(p.Annotations[policysync.NotCompiledAnnotation], reason), err
		})
		if err != nil {
			t.Fatalf("PodPreset %s/%s: annotations %v, want %s=%s (%q): %v", ns, name, p.Annotations, policysync.CompiledAnnotation, compiledValue, reason, err)
		}
		return p
	}
	compiledNow := annotated("compiled", "env", "true", "")
	annotated("hooked", "scratch", "false", "sizeLimit")

	// The webhook hands the compiled preset over once it has seen the
	// policy set carrying it at the preset's resourceVersion, and its
	// PodPreset plugin's informer has listed again without it (the
	// plugin's gauge of the presets it holds: the hooked one alone).
	waitCarried := func(want float64, rv string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			if webhookSample(t, w, "admitkit_policysync_carried_sources") != want ||
				webhookSample(t, w, `apiserver_admission_podpreset_presets{kind="PodPreset"}`) != 1 {
				return false, nil
			}
			if rv == "" {
				return true, nil
			}
			p, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, "admitkit-podpresets", metav1.GetOptions{})
			return err == nil && p.Annotations[policysync.SourcesAnnotation] == "PodPreset compiled/env@"+rv, nil
		})
		if err != nil {
			t.Fatalf("the webhook does not leave %v source(s) to the policies at %s: %v", want, rv, err)
		}
	}
	waitCarried(1, compiledNow.ResourceVersion)

	// A pod of each namespace: the compiled preset's env once, by the
	// policy (the webhook's PodPreset applies nothing); the other's by the
	// webhook.
	createPod := func(ns string) *corev1.Pod {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/web:1"}}}}
		got, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("creating a pod in %s: %v", ns, err)
		}
		return got
	}
	envOf := func(pod *corev1.Pod) string {
		var out []string
		for _, e := range pod.Spec.Containers[0].Env {
			out = append(out, e.Name+"="+e.Value)
		}
		return strings.Join(out, ",")
	}
	applied := func() float64 {
		return webhookSample(t, w, `apiserver_admission_podpreset_presets_applied_total{kind="PodPreset"}`)
	}
	before := applied()
	pod := createPod("compiled")
	if got := envOf(pod); got != "FOO=bar" {
		t.Errorf("the compiled preset's pod has env %q, want FOO=bar once", got)
	}
	if got := pod.Annotations["podpreset.admission.kubernetes.io/podpreset-env"]; got != compiledNow.ResourceVersion {
		t.Errorf("the compiled preset's pod records %q, want the preset's resourceVersion %s", got, compiledNow.ResourceVersion)
	}
	if after := applied(); after != before {
		t.Errorf("the webhook applied %v preset(s) to the compiled preset's pod, want none", after-before)
	}
	pod = createPod("hooked")
	if got := envOf(pod); got != "BAR=baz" || len(pod.Spec.Volumes) == 0 {
		t.Errorf("the uncompiled preset's pod has env %q and volumes %v, want BAR=baz and scratch", got, pod.Spec.Volumes)
	}
	if after := applied(); after != before+1 {
		t.Errorf("the webhook applied %v preset(s) to the uncompiled preset's pod, want 1", after-before)
	}

	// A second replica beside the first, as the Deployment runs two,
	// compiles the same set from the same objects: its passes write
	// nothing, neither the policies nor the presets' annotations.
	policy, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, "admitkit-podpresets", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rcfg := webhookConfig("compiled-live-2")
	rcfg.Args = wcfg.Args
	replica, err := framework.StartWebhookReplica(srv, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Kill)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return webhookSample(t, replica, `admitkit_policysync_syncs_total{result="success"}`) >= 1 &&
			webhookSample(t, replica, "admitkit_policysync_carried_sources") == 1, nil
	})
	if err != nil {
		t.Fatalf("the second replica did not compile the set and leave it to the policies: %v", err)
	}
	after, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, "admitkit-podpresets", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != policy.ResourceVersion {
		t.Errorf("the second replica wrote the policy (resourceVersion %s, was %s)", after.ResourceVersion, policy.ResourceVersion)
	}
	if p := annotated("compiled", "env", "true", ""); p.ResourceVersion != compiledNow.ResourceVersion {
		t.Errorf("the second replica wrote the preset (resourceVersion %s, was %s)", p.ResourceVersion, compiledNow.ResourceVersion)
	}

	// An edit follows: the next pods get the new value, once.
	edit := annotated("compiled", "env", "true", "")
	edit.Spec.Env[0].Value = "qux"
	if _, err := settings.SettingsV1alpha1().PodPresets("compiled").Update(ctx, edit, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	edited := annotated("compiled", "env", "true", "")
	waitCarried(1, edited.ResourceVersion)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return envOf(createPod("compiled")) == "FOO=qux", nil
	})
	if err != nil {
		t.Errorf("after the edit, pods get env %q, want FOO=qux once", envOf(createPod("compiled")))
	}

	// A delete follows, and the mode's policies go with the last preset
	// that compiled.
	if err := settings.SettingsV1alpha1().PodPresets("compiled").Delete(ctx, "env", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		maps, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{LabelSelector: policysync.SetLabel})
		if err != nil {
			return false, err
		}
		bindings, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{LabelSelector: policysync.SetLabel})
		return err == nil && len(maps.Items) == 0 && len(bindings.Items) == 0, err
	})
	if err != nil {
		t.Fatalf("the compiled policies stay after their preset's delete: %v", err)
	}
	waitCarried(0, "")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return envOf(createPod("compiled")) == "", nil
	})
	if err != nil {
		t.Errorf("after the delete, pods get env %q, want none", envOf(createPod("compiled")))
	}
	// The uncompiled preset still reaches its pods.
	if got := envOf(createPod("hooked")); got != "BAR=baz" {
		t.Errorf("the uncompiled preset's pod has env %q, want BAR=baz", got)
	}
}

// webhookSample is one sample of the webhook server's /metrics, by its
// family name and, for a family with labels, its labels as written.
func webhookSample(t *testing.T, w *framework.Webhook, sample string) float64 {
	t.Helper()
	code, raw, err := w.Get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("reading the webhook server's /metrics: %d, %v", code, err)
	}
	families, err := testutil.TextToMetricFamilies(strings.NewReader(raw))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	name, labels, _ := strings.Cut(sample, "{")
	family, ok := families[name]
	if !ok {
		return 0
	}
	for _, m := range family.GetMetric() {
		var have []string
		for _, l := range m.GetLabel() {
			have = append(have, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		if labels != "" && strings.Join(have, ",")+"}" != labels {
			continue
		}
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	return 0
}
