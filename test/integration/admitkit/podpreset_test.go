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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/test/integration/framework"
)

const presetAnnotationPrefix = "podpreset.admission.kubernetes.io/"

func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

func presetAnnotations(pod *corev1.Pod) []string {
	var out []string
	for k := range pod.Annotations {
		if strings.HasPrefix(k, presetAnnotationPrefix) {
			out = append(out, strings.TrimPrefix(k, presetAnnotationPrefix))
		}
	}
	slices.Sort(out)
	return out
}

// setUpPresets creates, in ns, a PodPreset for app=web pods (an env var, a
// volume and its mount) and a ClusterPodPreset for every pod of namespaces
// labelled preset-test=<ns>.
func setUpPresets(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	framework.CreateNamespace(t, server.AdminConfig(), ns, map[string]string{"preset-test": ns})
	settings := framework.SettingsClient(t, server.AdminConfig()).SettingsV1alpha1()
	pp := podPreset("web-db", map[string]string{"app": "web"}, corev1.EnvVar{Name: "DB_HOST", Value: "db." + ns})
	pp.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pp.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
	if _, err := settings.PodPresets(ns).Create(ctx, pp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cpp := &settingsv1alpha1.ClusterPodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "proxy-" + ns},
		Spec: settingsv1alpha1.ClusterPodPresetSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"preset-test": ns}},
			PodPresetSpec: settingsv1alpha1.PodPresetSpec{
				Env: []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "http://proxy:3128"}},
			},
		},
	}
	if _, err := settings.ClusterPodPresets().Create(ctx, cpp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = settings.ClusterPodPresets().Delete(context.Background(), cpp.Name, metav1.DeleteOptions{})
	})
	waitForPresets(t, inProcess(), ns, "proxy-"+ns)
}

// waitForPresets waits until a probe pod (created with dry-run) gets the
// ClusterPodPreset: the plugin's informers see new presets a moment after
// they are stored.
func waitForPresets(t *testing.T, h *host, ns, clusterPreset string) {
	t.Helper()
	client := framework.KubeClient(t, h.server.AdminConfig())
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods(ns).Create(ctx, framework.Pod("probe", nil, "c"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return slices.Contains(presetAnnotations(pod), "clusterpodpreset-"+clusterPreset), nil
	})
	if err != nil {
		t.Fatalf("ClusterPodPreset %s never reached the plugin: %v", clusterPreset, err)
	}
}

func checkInjected(t *testing.T, pod *corev1.Pod, ns string) {
	t.Helper()
	if got := presetAnnotations(pod); !slices.Equal(got, []string{"clusterpodpreset-proxy-" + ns, "podpreset-web-db"}) {
		t.Errorf("pod %s preset annotations %v, want both presets", pod.Name, got)
	}
	for _, c := range pod.Spec.Containers {
		env := envOf(c)
		if env["DB_HOST"] != "db."+ns || env["HTTP_PROXY"] != "http://proxy:3128" {
			t.Errorf("pod %s container %s env %v, want DB_HOST and HTTP_PROXY", pod.Name, c.Name, c.Env)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "cache" && m.MountPath == "/cache" }) {
			t.Errorf("pod %s container %s mounts %v, want cache at /cache", pod.Name, c.Name, c.VolumeMounts)
		}
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "cache" && v.EmptyDir != nil }) {
		t.Errorf("pod %s volumes %v, want the cache emptyDir", pod.Name, pod.Spec.Volumes)
	}
}

func TestPodPresetInjectsPods(t *testing.T) {
	ctx := context.Background()
	ns := "pp-inject"
	setUpPresets(t, ns)
	pods := framework.KubeClient(t, server.AdminConfig()).CoreV1().Pods(ns)

	pod, err := pods.Create(ctx, framework.Pod("web", map[string]string{"app": "web"}, "app", "sidecar"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkInjected(t, pod, ns)
	// The ServiceAccount plugin runs after PodPreset: its token volume is
	// there too, beside the preset's.
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return strings.HasPrefix(v.Name, "kube-api-access-") }) {
		t.Errorf("pod volumes %v lack the service-account token volume", pod.Spec.Volumes)
	}

	// A pod the PodPreset does not select gets the ClusterPodPreset only.
	other, err := pods.Create(ctx, framework.Pod("batch", map[string]string{"app": "batch"}, "job"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := presetAnnotations(other); !slices.Equal(got, []string{"clusterpodpreset-proxy-" + ns}) {
		t.Errorf("unselected pod annotations %v, want the ClusterPodPreset only", got)
	}
	if env := envOf(other.Spec.Containers[0]); env["DB_HOST"] != "" || env["HTTP_PROXY"] == "" {
		t.Errorf("unselected pod env %v", env)
	}

	// The exclude annotation keeps every preset out.
	excluded := framework.Pod("excluded", map[string]string{"app": "web"}, "app")
	excluded.Annotations = map[string]string{presetAnnotationPrefix + "exclude": "true"}
	excluded, err = pods.Create(ctx, excluded, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := presetAnnotations(excluded); !slices.Equal(got, []string{"exclude"}) || len(excluded.Spec.Containers[0].Env) != 0 {
		t.Errorf("excluded pod got annotations %v env %v", got, excluded.Spec.Containers[0].Env)
	}

	// Presets apply on create only: an update leaves the pod's spec alone.
	pod.Labels["extra"] = "x"
	updated, err := pods.Update(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(updated.Spec.Containers[0].Env) != len(pod.Spec.Containers[0].Env) {
		t.Errorf("an update changed env from %v to %v", pod.Spec.Containers[0].Env, updated.Spec.Containers[0].Env)
	}
}

// TestPodPresetDeployment creates a Deployment: the in-process Deployment
// and ReplicaSet controllers create its pods, and every one has the presets.
func TestPodPresetDeployment(t *testing.T) {
	ns := "pp-deployment"
	setUpPresets(t, ns)
	pods := createDeployment(t, ns, "web", map[string]string{"app": "web"}, 3, "app", "sidecar")
	for i := range pods {
		checkInjected(t, &pods[i], ns)
	}
}

// createDeployment creates a Deployment and waits for its pods.
func createDeployment(t *testing.T, ns, name string, labels map[string]string, replicas int32, containers ...string) []corev1.Pod {
	t.Helper()
	ctx := context.Background()
	client := framework.KubeClient(t, server.AdminConfig())
	template := framework.Pod("", labels, containers...)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: template.ObjectMeta, Spec: template.Spec},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		if err != nil {
			return false, err
		}
		pods = list.Items
		return len(pods) == int(replicas), nil
	})
	if err != nil {
		t.Fatalf("deployment %s/%s has %d of %d pods: %v", ns, name, len(pods), replicas, err)
	}
	for _, p := range pods {
		if len(p.OwnerReferences) == 0 || p.OwnerReferences[0].Kind != "ReplicaSet" {
			t.Errorf("pod %s owners %v, want its ReplicaSet", p.Name, p.OwnerReferences)
		}
	}
	return pods
}

// warningRecorder keeps the warnings the server sends a client.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.warnings)
}

func TestPodPresetConflict(t *testing.T) {
	ctx := context.Background()
	ns := "pp-conflict"
	setUpPresets(t, ns)

	cfg := server.AdminConfig()
	warnings := &warningRecorder{}
	cfg.WarningHandler = warnings
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	conflicting := framework.Pod("conflict", map[string]string{"app": "web"}, "app")
	conflicting.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_HOST", Value: "mine"}}
	pod, err := client.CoreV1().Pods(ns).Create(ctx, conflicting, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a conflicting pod must be admitted: %v", err)
	}
	// All or nothing: not even the non-conflicting ClusterPodPreset applies.
	if got := presetAnnotations(pod); len(got) != 0 {
		t.Errorf("conflicting pod annotations %v, want none", got)
	}
	if env := pod.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != "mine" {
		t.Errorf("conflicting pod env %v, want its own DB_HOST=mine only", env)
	}
	if slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "cache" }) {
		t.Errorf("conflicting pod got the preset volume")
	}
	got := warnings.all()
	if !slices.ContainsFunc(got, func(w string) bool {
		return strings.Contains(w, "conflict") && strings.Contains(w, "web-db") && strings.Contains(w, "DB_HOST")
	}) {
		t.Errorf("client warnings %q, want one naming the conflict with web-db over DB_HOST", got)
	}

	// The kubectl user sees it on stderr.
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: conflict-kubectl
  namespace: %s
  labels: {app: web}
spec:
  containers:
  - name: app
    image: registry.example.com/app:1
    env:
    - {name: DB_HOST, value: mine}
`, ns)
	r := mustKubectl(t, manifest, "apply", "-f", "-")
	if !strings.Contains(r.Stderr, "Warning:") || !strings.Contains(r.Stderr, "web-db") {
		t.Errorf("kubectl stderr %q, want a Warning naming web-db", r.Stderr)
	}
	if !strings.Contains(r.Stdout, "pod/conflict-kubectl created") {
		t.Errorf("kubectl stdout %q", r.Stdout)
	}

	// And an Event in the namespace records it.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == "PodPresetConflict" && e.InvolvedObject.Name == "conflict"
		}), nil
	})
	if err != nil {
		t.Errorf("no PodPresetConflict event for pod conflict: %v", err)
	}
}

// TestPodPresetBeforeCacheSync restarts a server on its data and creates a
// pod the moment it is ready, before the plugin's informers may have
// synced: the pod must get its presets (client-go retries the plugin's 503
// until the cache is filled), never be admitted without them.
func TestPodPresetBeforeCacheSync(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two more servers")
	}
	ctx := context.Background()
	dir := t.TempDir()
	cfg := framework.Config{Args: []string{framework.ServeSettings, "--enable-admission-plugins=PodPreset"}}
	first, err := framework.StartIn(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(first.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		ns := fmt.Sprintf("sync-%d", i)
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		settings := framework.SettingsClient(t, first.AdminConfig()).SettingsV1alpha1()
		if _, err := settings.PodPresets(ns).Create(ctx, podPreset("p", nil, corev1.EnvVar{Name: "FROM_PRESET", Value: "yes"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second, err := framework.StartIn(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	client, err = kubernetes.NewForConfig(second.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			ns := fmt.Sprintf("sync-%d", i)
			pod, err := client.CoreV1().Pods(ns).Create(ctx, framework.Pod("first", nil, "c"), metav1.CreateOptions{})
			if err != nil {
				t.Errorf("creating a pod in %s right after start: %v", ns, err)
				return
			}
			if env := envOf(pod.Spec.Containers[0]); env["FROM_PRESET"] != "yes" {
				t.Errorf("pod %s/first created right after start has env %v: its preset was missed", ns, pod.Spec.Containers[0].Env)
			}
		})
	}
	wg.Wait()
}
