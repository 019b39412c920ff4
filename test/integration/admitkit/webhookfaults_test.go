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
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	settingsv1alpha1client "github.com/admitkit/admitkit/generated/clientset/versioned/typed/settings/v1alpha1"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// webhookHost is the stock kube-apiserver's host, for the tests of what
// only a webhook can suffer.
func webhookHost(t *testing.T) *host {
	t.Helper()
	for _, h := range hosts {
		if h.webhook != nil {
			return h
		}
	}
	t.Fatal("the package runs no webhook host")
	return nil
}

// TestWebhookKilledUnderLoad kills admitkit's webhook server while pods
// are created in a namespace where a PodPreset and two LocationMutator
// mutators apply, both plugins in the one call of the pods webhook
// (failurePolicy Fail), and starts it again. No pod is ever stored
// half-mutated: each has the whole preset and both mutators; creates while
// the server is down are refused naming the pods webhook. A preset deleted while it is
// down (deletes are never sent to the webhooks) is gone from the first
// pod after the restart: the server catches up before it is ready.
func TestWebhookKilledUnderLoad(t *testing.T) {
	h := webhookHost(t)
	ctx := context.Background()
	const ns = "load-webhook-faults"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	client := framework.KubeClient(t, h.server.AdminConfig())
	settings := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1()
	createFaultPresets(t, client, settings, ns)

	var admitted, refused atomic.Int64
	var mu sync.Mutex
	var violations []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				pod, err := client.CoreV1().Pods(ns).Create(ctx, framework.Pod(fmt.Sprintf("p-%d-%d", w, i), map[string]string{"app": "web"}, "app"), metav1.CreateOptions{})
				mu.Lock()
				if err != nil {
					refused.Add(1)
					// kube-apiserver names the webhook it failed to call.
					if !strings.Contains(err.Error(), `"`+podWebhook+`"`) {
						violations = append(violations, "a refusal that does not name the pods webhook: "+err.Error())
					}
				} else {
					admitted.Add(1)
					if v := halfMutated(pod); v != "" {
						violations = append(violations, pod.Name+": "+v)
					}
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Second)
	h.webhook.Kill()
	before := admitted.Load()
	if err := settings.PodPresets(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting a preset while the webhook is down: %v", err)
	}
	time.Sleep(2 * time.Second)
	if err := h.webhook.Restart(); err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	if env := envOf(dryRunPodWith(t, client, ns).Spec.Containers[0]); env["GONE"] != "" || env["FAULT"] != "1" {
		t.Errorf("the first pod after the restart has env %v, want FAULT and not the preset deleted while the server was down", env)
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	t.Logf("%d pods admitted (%d before the kill), %d refused", admitted.Load(), before, refused.Load())
	for _, v := range violations {
		t.Error(v)
	}
	if refused.Load() == 0 {
		t.Error("no create was refused while the webhook server was down")
	}
	if admitted.Load() <= before {
		t.Error("no pod was admitted after the restart")
	}
}

// createFaultPresets creates the faults preset (an env var and a mounted
// volume) and the gone preset (an env var), and waits until both reach
// the webhook.
func createFaultPresets(t *testing.T, client kubernetes.Interface, settings settingsv1alpha1client.SettingsV1alpha1Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	preset := podPreset("faults", map[string]string{"app": "web"}, corev1.EnvVar{Name: "FAULT", Value: "1"})
	preset.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	preset.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
	if _, err := settings.PodPresets(ns).Create(ctx, preset, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := settings.PodPresets(ns).Create(ctx, podPreset("gone", map[string]string{"app": "web"}, corev1.EnvVar{Name: "GONE", Value: "1"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, "both presets to reach the webhook", func() bool {
		env := envOf(dryRunPodWith(t, client, ns).Spec.Containers[0])
		return env["FAULT"] == "1" && env["GONE"] == "1"
	})
}

// dryRunPodWith admits a pod labelled app=web without storing it.
func dryRunPodWith(t *testing.T, client kubernetes.Interface, ns string) *corev1.Pod {
	t.Helper()
	pod, err := client.CoreV1().Pods(ns).Create(context.Background(), framework.Pod("probe", map[string]string{"app": "web"}, "app"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// halfMutated says what of the namespace's mutations a stored pod lacks:
// the webhook that runs both plugins fails closed, so a pod stored has the
// preset's env, volume and mount, and both mutators' pull policy and
// privilege escalation.
func halfMutated(pod *corev1.Pod) string {
	c := pod.Spec.Containers[0]
	env := envOf(c)["FAULT"] == "1"
	mount := false
	for _, m := range c.VolumeMounts {
		mount = mount || m.MountPath == "/cache"
	}
	volume := false
	for _, v := range pod.Spec.Volumes {
		volume = volume || v.Name == "cache"
	}
	if !env || !mount || !volume {
		return fmt.Sprintf("the preset's env %t, mount %t, volume %t: the pods webhook fails closed, so all must be there", env, mount, volume)
	}
	pull := c.ImagePullPolicy == corev1.PullAlways
	noEscalation := c.SecurityContext != nil && c.SecurityContext.AllowPrivilegeEscalation != nil && !*c.SecurityContext.AllowPrivilegeEscalation
	if !pull || !noEscalation {
		return fmt.Sprintf("the mutators' imagePullPolicy Always %t, allowPrivilegeEscalation false %t: the pods webhook fails closed, so both must be there", pull, noEscalation)
	}
	return ""
}

// TestWebhookReplicas runs a second replica of the webhook server beside
// the first, as the manifests' Deployment does: each watches the mutators
// by itself and writes its own status.byPod entry on a mutator applied
// with kubectl, as Gatekeeper's pods do, and neither overwrites the
// other's.
func TestWebhookReplicas(t *testing.T) {
	h := webhookHost(t)
	const second = "admitkit-webhook-2"
	replica, err := framework.StartWebhookReplica(h.server, webhookConfig(second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Kill)
	const ns = "live-replicas"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	h.mustKubectl(t, liveAssign("live-replicas", ns, "Never"), "apply", "-f", "-")
	t.Cleanup(func() { h.kubectl(t, "", "delete", "assign", "live-replicas") })
	assigns := framework.DynamicClient(t, h.server.AdminConfig()).Resource(assignGVR)
	framework.Poll(t, "both replicas' status entries", func() bool {
		u, err := assigns.Get(context.Background(), "live-replicas", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{webhookIdentity, second} {
			if e, ok := entryOf(u, id); !ok || e["enforced"] != true || e["observedGeneration"] != u.GetGeneration() {
				return false
			}
		}
		return true
	})
	if out := h.mustKubectl(t, "", "get", "assign", "live-replicas", "-o", "jsonpath={.status.byPod[*].id}").Stdout; len(strings.Fields(out)) != 2 {
		t.Errorf("status.byPod ids %q, want one entry per replica", out)
	}
}
