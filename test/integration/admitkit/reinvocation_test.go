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
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// podPolicy is a MutatingAdmissionPolicy, bound to the namespaces labelled
// admitkit-test=<name>, that applies expression to the pod creates for
// which condition holds, and leaves the others as they are. kube-apiserver
// calls it again (IfNeeded) after a later plugin changed the pod, and any
// change it makes has kube-apiserver call admitkit's plugins again:
// in-process they run before the policy, a stock kube-apiserver calls the
// webhooks after it, so only a policy that acts on what the plugins did
// makes them run twice on both hosts. The condition is part of the
// mutation, not a matchCondition: kube-apiserver calls again only the
// policies it called the first time, and it does not count a policy whose
// matchConditions did not hold as called. condition must hold once at
// most, or the policy would undo the second run.
func podPolicy(t *testing.T, client kubernetes.Interface, name, condition, expression string) {
	t.Helper()
	ctx := context.Background()
	policy, binding := podCreatePolicy(name, admissionregistrationv1.IfNeededReinvocationPolicy, map[string]string{"admitkit-test": name},
		"("+condition+") ? "+expression+" : Object{}")
	admissionregistration := client.AdmissionregistrationV1()
	if _, err := admissionregistration.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admissionregistration.MutatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	})
	if _, err := admissionregistration.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admissionregistration.MutatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// metricChanges reads the admitkit metrics of the host's plugins around do
// and returns how far each moved.
func metricChanges(t *testing.T, h *host, do func()) map[string]float64 {
	t.Helper()
	before := h.admitkitMetrics(t)
	do()
	moved := map[string]float64{}
	for name, v := range h.admitkitMetrics(t) {
		if d := v - before[name]; d != 0 {
			moved[name] = d
		}
	}
	return moved
}

// TestPodPresetReinvocation creates pods that a MutatingAdmissionPolicy
// labels once PodPreset has applied a preset, so that kube-apiserver runs
// PodPreset a second time on each: a preset selecting the policy's label
// applies in the second run, and the request is counted, and its conflict
// recorded, once.
func TestPodPresetReinvocation(t *testing.T) { onEachHost(t, testPodPresetReinvocation) }

// labelOncePresetApplied: no policy label yet, and the pod is one of the
// conflict pods or has the env of the preset from-start.
const labelOncePresetApplied = `!(has(object.metadata.labels) && 'policy' in object.metadata.labels) &&
	((has(object.metadata.labels) && 'conflict' in object.metadata.labels) ||
	 object.spec.containers.exists(c, has(c.env) && c.env.exists(e, e.name == 'FROM_START')))`

func testPodPresetReinvocation(t *testing.T, h *host) {
	ctx := context.Background()
	client := framework.KubeClient(t, h.server.AdminConfig())
	const ns = "reinvoke-presets"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, map[string]string{"admitkit-test": "label-pods"})
	podPolicy(t, client, "label-pods", labelOncePresetApplied, `Object{metadata: Object.metadata{labels: {"policy": "added"}}}`)
	presets := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1().PodPresets(ns)
	for _, pp := range []*settingsv1alpha1.PodPreset{
		podPreset("from-start", map[string]string{"app": "web"}, corev1.EnvVar{Name: "FROM_START", Value: "1"}),
		podPreset("by-policy", map[string]string{"policy": "added"}, corev1.EnvVar{Name: "BY_POLICY", Value: "1"}),
		podPreset("conflicting", map[string]string{"conflict": "yes"}, corev1.EnvVar{Name: "MINE", Value: "preset"}),
	} {
		if _, err := presets.Create(ctx, pp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Until the policy and both presets have reached the server's caches.
	framework.Poll(t, "the policy and the presets", func() bool {
		pod, err := client.CoreV1().Pods(ns).Create(ctx, framework.Pod("probe", map[string]string{"app": "web"}, "app"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && pod.Labels["policy"] == "added" && envOf(pod.Spec.Containers[0])["BY_POLICY"] == "1" && envOf(pod.Spec.Containers[0])["FROM_START"] == "1"
	})
	checkPresetsOfBothRuns(t, h, client, ns)
	checkConflictOnce(t, h, client, ns)
}

// checkPresetsOfBothRuns: a pod gets the preset of the first run and the
// one the policy's label selects in the second, and counts as one pod.
func checkPresetsOfBothRuns(t *testing.T, h *host, client kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	var pod *corev1.Pod
	moved := metricChanges(t, h, func() {
		var err error
		pod, err = client.CoreV1().Pods(ns).Create(ctx, framework.Pod("web", map[string]string{"app": "web"}, "app"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	})
	if env := envOf(pod.Spec.Containers[0]); env["FROM_START"] != "1" || env["BY_POLICY"] != "1" {
		t.Errorf("env %v, want FROM_START from the first run and BY_POLICY from the second", env)
	}
	want := map[string]float64{
		"apiserver_admission_podpreset_pods_evaluated_total{}":                1,
		"apiserver_admission_podpreset_pods_injected_total{}":                 1,
		"apiserver_admission_podpreset_presets_applied_total{kind=PodPreset}": 2,
	}
	for name, v := range want {
		if moved[name] != v {
			t.Errorf("%s moved by %v, want %v (all changes: %v)", name, moved[name], v, moved)
		}
	}

}

// checkConflictOnce: a conflict is one conflict and one Event. In-process
// the policy labels the pod after PodPreset's first run and the conflict
// is met in both runs; a stock kube-apiserver calls the policy first and
// the webhook once, since nothing changes the pod after it.
func checkConflictOnce(t *testing.T, h *host, client kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	conflictPod := framework.Pod("conflict", map[string]string{"conflict": "yes"}, "app")
	conflictPod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MINE", Value: "pod"}}
	moved := metricChanges(t, h, func() {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, conflictPod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if got := moved["apiserver_admission_podpreset_conflicts_total{}"]; got != 1 {
		t.Errorf("conflicts_total moved by %v, want 1", got)
	}
	var count int32
	framework.Poll(t, "the PodPresetConflict Event", func() bool {
		count = conflictEvents(t, client, ns, "conflict")
		return count > 0
	})
	// The recorder writes Events asynchronously, and a second one for the
	// same pod would be folded into the first as a higher count: give it
	// the time the first took, again, before reading the count.
	time.Sleep(2 * time.Second)
	if count = conflictEvents(t, client, ns, "conflict"); count != 1 {
		t.Errorf("the conflict was recorded %d times, want once", count)
	}
}

// conflictEvents counts the PodPresetConflict Events about pod.
func conflictEvents(t *testing.T, client kubernetes.Interface, ns, pod string) int32 {
	t.Helper()
	events, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var count int32
	for _, e := range events.Items {
		if e.Reason == "PodPresetConflict" && e.InvolvedObject.Name == pod {
			count += max(e.Count, 1)
		}
	}
	return count
}

// TestLocationMutatorReinvocation has a MutatingAdmissionPolicy undo what
// the configured lm-always-pull Assign sets, so that kube-apiserver runs
// the LocationMutator again and it sets it again: the pod ends with the
// mutator's value, and the request counts as one mutated object.
// On a stock kube-apiserver the webhook cannot tell the second call from a
// new request, since the policy set back what the first call changed
// (README, "What differs from in-process"): it counts the object twice.
func TestLocationMutatorReinvocation(t *testing.T) {
	onEachHost(t, testLocationMutatorReinvocation)
}

// resetOnceAlwaysPull: no reset label yet, and a container pulls Always,
// which only the LocationMutator sets.
const resetOnceAlwaysPull = `!(has(object.metadata.labels) && 'pull-policy' in object.metadata.labels) &&
	object.spec.containers.exists(c, c.imagePullPolicy == 'Always')`

func testLocationMutatorReinvocation(t *testing.T, h *host) {
	ctx := context.Background()
	client := framework.KubeClient(t, h.server.AdminConfig())
	const ns = "lm-reinvoke"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, map[string]string{"admitkit-test": "pull-if-not-present"})
	// The label tells when the policy has reached the server: the pull
	// policy it sets is set back before the pod is stored either way.
	podPolicy(t, client, "pull-if-not-present", resetOnceAlwaysPull, `Object{
		metadata: Object.metadata{labels: {"pull-policy": "reset"}},
		spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, imagePullPolicy: "IfNotPresent"})}
	}`)
	framework.Poll(t, "the policy", func() bool {
		pod, err := client.CoreV1().Pods(ns).Create(ctx, framework.Pod("probe", nil, "app"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && pod.Labels["pull-policy"] == "reset"
	})

	var pod *corev1.Pod
	moved := metricChanges(t, h, func() {
		var err error
		pod, err = client.CoreV1().Pods(ns).Create(ctx, framework.Pod("web", nil, "app"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	})
	checkAlwaysPull(t, pod)
	want := 1.0
	if h != inProcess() {
		want = 2
	}
	if got := moved["apiserver_admission_locationmutator_objects_mutated_total{}"]; got != want {
		t.Errorf("objects_mutated_total moved by %v, want %v (all changes: %v)", got, want, moved)
	}
}
