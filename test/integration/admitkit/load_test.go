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
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// loadMutators are five LocationMutator mutators for pods in namespaces
// named load-*: part of the package server's configuration, and of the
// benchmark's "plugins on" server.
const loadMutators = `    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: load-always-pull}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        match: {namespaces: ["load-*"]}
        location: "spec.containers[name:*].imagePullPolicy"
        parameters: {assign: {value: Always}}
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: load-no-escalation}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        match: {namespaces: ["load-*"]}
        location: "spec.containers[name:*].securityContext.allowPrivilegeEscalation"
        parameters: {assign: {value: false}}
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: load-no-service-links}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        match: {namespaces: ["load-*"]}
        location: "spec.enableServiceLinks"
        parameters: {assign: {value: false}}
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: AssignMetadata
      metadata: {name: load-label}
      spec:
        match: {namespaces: ["load-*"], kinds: [{apiGroups: [""], kinds: [Pod]}]}
        location: "metadata.labels.load-mutated"
        parameters: {assign: {value: "true"}}
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: AssignMetadata
      metadata: {name: load-annotation}
      spec:
        match: {namespaces: ["load-*"], kinds: [{apiGroups: [""], kinds: [Pod]}]}
        location: 'metadata.annotations."load.example.com/checked"'
        parameters: {assign: {value: "yes"}}
`

// setUpLoadPresets creates five presets for the pods of ns: three
// PodPresets and two ClusterPodPresets, each injecting its own env var,
// one also a volume and its mount.
func setUpLoadPresets(t *testing.T, ns string, settings settingsclient.Interface) {
	t.Helper()
	ctx := context.Background()
	for i := range 3 {
		pp := podPreset(fmt.Sprintf("load-%d", i), map[string]string{"app": "load"}, corev1.EnvVar{Name: fmt.Sprintf("LOAD_%d", i), Value: "yes"})
		if i == 0 {
			pp.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			pp.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		}
		if _, err := settings.SettingsV1alpha1().PodPresets(ns).Create(ctx, pp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 3; i < 5; i++ {
		cpp := &settingsv1alpha1.ClusterPodPreset{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", ns, i)},
			Spec: settingsv1alpha1.ClusterPodPresetSpec{
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"load": ns}},
				PodPresetSpec: settingsv1alpha1.PodPresetSpec{
					Env: []corev1.EnvVar{{Name: fmt.Sprintf("LOAD_%d", i), Value: "yes"}},
				},
			},
		}
		if _, err := settings.SettingsV1alpha1().ClusterPodPresets().Create(ctx, cpp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkLoadPod returns what is wrong with a pod of the load: every preset
// and every mutation exactly once.
func checkLoadPod(pod *corev1.Pod, ns string) []string {
	var problems []string
	if got := presetAnnotations(pod); !slices.Equal(got, []string{
		"clusterpodpreset-" + ns + "-3", "clusterpodpreset-" + ns + "-4", "podpreset-load-0", "podpreset-load-1", "podpreset-load-2",
	}) {
		problems = append(problems, fmt.Sprintf("preset annotations %v", got))
	}
	for _, c := range pod.Spec.Containers {
		var names []string
		for _, e := range c.Env {
			names = append(names, e.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"LOAD_0", "LOAD_1", "LOAD_2", "LOAD_3", "LOAD_4"}) {
			problems = append(problems, fmt.Sprintf("container %s env %v", c.Name, names))
		}
		if len(c.VolumeMounts) != 2 || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "scratch" }) {
			problems = append(problems, fmt.Sprintf("container %s mounts %v, want scratch and the token", c.Name, c.VolumeMounts))
		}
		if c.ImagePullPolicy != corev1.PullAlways {
			problems = append(problems, fmt.Sprintf("container %s imagePullPolicy %s", c.Name, c.ImagePullPolicy))
		}
		if c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
			problems = append(problems, fmt.Sprintf("container %s securityContext %v", c.Name, c.SecurityContext))
		}
	}
	if n := len(pod.Spec.Volumes); n != 2 {
		problems = append(problems, fmt.Sprintf("%d volumes, want scratch and the token", n))
	}
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		problems = append(problems, "enableServiceLinks not false")
	}
	if pod.Labels["load-mutated"] != "true" || pod.Annotations["load.example.com/checked"] != "yes" {
		problems = append(problems, fmt.Sprintf("labels %v annotations %v", pod.Labels, pod.Annotations))
	}
	return problems
}

// TestLoad creates 1,000 pods (ADMITKIT_LOAD_PODS to change) from 16
// concurrent clients with five presets and five mutators matching each:
// every pod is created once, and has every injection exactly once.
func TestLoad(t *testing.T) {
	total := 1000
	if v := os.Getenv("ADMITKIT_LOAD_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("ADMITKIT_LOAD_PODS=%q is not a positive number", v)
		}
		total = n
	}
	const clients = 16
	ctx := context.Background()
	ns := "load-test"
	framework.CreateNamespace(t, server.AdminConfig(), ns, map[string]string{"load": ns})
	setUpLoadPresets(t, ns, framework.SettingsClient(t, server.AdminConfig()))
	for i := 3; i < 5; i++ {
		waitForPresets(t, inProcess(), ns, fmt.Sprintf("%s-%d", ns, i))
	}

	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, total)
	start := time.Now()
	for range clients {
		// Each client has its own connection, as separate users would.
		client, err := kubernetes.NewForConfig(server.AdminConfig())
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(total) {
					return
				}
				name := fmt.Sprintf("pod-%04d", i)
				pod, err := client.CoreV1().Pods(ns).Create(ctx, framework.Pod(name, map[string]string{"app": "load"}, "app", "sidecar"), metav1.CreateOptions{})
				if err != nil {
					errs <- fmt.Errorf("creating %s: %w", name, err)
					continue
				}
				if problems := checkLoadPod(pod, ns); len(problems) > 0 {
					errs <- fmt.Errorf("pod %s as created: %v", name, problems)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	failures := 0
	for err := range errs {
		if failures++; failures <= 10 {
			t.Error(err)
		}
	}
	if failures > 10 {
		t.Errorf("... and %d more failures", failures-10)
	}

	// Read them all back: none lost, none duplicated, none changed since.
	list, err := framework.KubeClient(t, server.AdminConfig()).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range list.Items {
		pod := &list.Items[i]
		if seen[pod.Name] {
			t.Errorf("pod %s listed twice", pod.Name)
		}
		seen[pod.Name] = true
		if problems := checkLoadPod(pod, ns); len(problems) > 0 && failures == 0 {
			t.Errorf("pod %s as stored: %v", pod.Name, problems)
		}
	}
	if len(seen) != total {
		t.Errorf("%d pods stored, want %d", len(seen), total)
	}
	t.Logf("%d pods from %d clients in %s (%.0f pods/s)", total, clients, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
}
