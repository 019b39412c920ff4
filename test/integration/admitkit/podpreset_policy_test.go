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
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/admitkit/admitkit/test/integration/framework"
)

// applyPresetYAML applies presetYAML(ns, name, extra) and waits until the
// plugin has it.
func applyPresetYAML(t *testing.T, h *host, ns, name, extra string) {
	t.Helper()
	h.mustKubectl(t, presetYAML(ns, name, extra), "apply", "-f", "-")
	// The plugin's informer sees the preset a moment after it is stored: a
	// dry-run probe that conflicts with nothing shows when.
	probe := podYAML(ns, "probe", name, "")
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		r := h.kubectl(t, probe, "create", "--dry-run=server", "-o", "json", "-f", "-")
		if r.Err != nil {
			return false, r.Err
		}
		return decodePod(t, r.Stdout).Annotations[presetAnnotationPrefix+"podpreset-"+name] != "", nil
	})
	if err != nil {
		t.Fatalf("PodPreset %s/%s never reached the plugin: %v", ns, name, err)
	}
}

// presetYAML is a PodPreset named name in ns, selecting pods labelled
// app=<name>, with two env variables and the spec fields extra adds (YAML
// at two spaces of indent).
func presetYAML(ns, name, extra string) string {
	return fmt.Sprintf(`apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata:
  name: %s
  namespace: %s
spec:
  selector:
    matchLabels: {app: %s}
  env:
  - {name: HTTPS_PROXY, value: "http://proxy:3128"}
  - {name: FROM_PRESET, value: "yes"}
%s`, name, ns, name, extra)
}

// podYAML is a pod labelled app=<app> with an init container "init", a
// restartable init container "log-shipper", and containers "app" and
// "istio-proxy"; env (YAML list items at six spaces of indent) goes into
// every one of them.
func podYAML(ns, name, app, env string) string {
	container := func(name, extra string) string {
		c := fmt.Sprintf("  - name: %s\n    image: registry.example.com/%s:1\n%s", name, name, extra)
		if env != "" {
			c += "    env:\n" + env
		}
		return c
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels: {app: %s}
spec:
  initContainers:
%s%s  containers:
%s%s`, name, ns, app,
		container("init", ""), container("log-shipper", "    restartPolicy: Always\n"),
		container("app", ""), container("istio-proxy", ""))
}

func decodePod(t *testing.T, out string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := json.Unmarshal([]byte(out), pod); err != nil {
		t.Fatalf("decoding kubectl's pod: %v\n%s", err, out)
	}
	return pod
}

// injected lists the containers, init ones first, whose env has name=value.
func injected(pod *corev1.Pod, name, value string) []string {
	var out []string
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if envOf(c)[name] == value {
			out = append(out, c.Name)
		}
	}
	return out
}

// TestPodPresetTargetingAndPolicies drives container targeting and every
// conflict policy through kubectl against the real server, and checks
// that a preset written without the new fields behaves as presets always
// did.
func TestPodPresetTargetingAndPolicies(t *testing.T) {
	onEachHost(t, testPodPresetTargetingAndPolicies)
}

func testPodPresetTargetingAndPolicies(t *testing.T, h *host) {
	ns := "pp-policies"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	for _, step := range []struct {
		name string
		run  func(t *testing.T, h *host, ns string)
	}{
		{"old preset", testOldPreset},
		{"one container", testOneContainerPreset},
		{"all but the sidecars", testAllButSidecarsPreset},
		{"PodWins", testPodWinsPreset},
		{"PresetWins", testPresetWinsPreset},
		{"Reject", testRejectPreset},
		{"SkipAll", testSkipAllPreset},
		{"update without the fields", testPresetUpdateWithoutFields},
	} {
		t.Run(step.name, func(t *testing.T) { step.run(t, h, ns) })
	}
	checkPolicyFieldsExplained(t, h)
}

// everyContainer are podYAML's containers, init ones first.
var everyContainer = []string{"init", "log-shipper", "app", "istio-proxy"}

// ownProxy is the pod's own HTTPS_PROXY, which conflicts with every
// preset's.
const ownProxy = "    - {name: HTTPS_PROXY, value: \"http://mine:8080\"}\n"

// testOldPreset: a preset written without the new fields reads back without
// them and applies to every container, or, on a conflict, to none, with a
// warning.
func testOldPreset(t *testing.T, h *host, ns string) {
	applyPresetYAML(t, h, ns, "old", "")
	stored := h.mustKubectl(t, "", "get", "podpreset", "-n", ns, "old", "-o", "json").Stdout
	for _, field := range []string{"conflictPolicy", "containers", "initContainers"} {
		if strings.Contains(stored, field) {
			t.Errorf("a preset written without %s reads back with it:\n%s", field, stored)
		}
	}
	pod := decodePod(t, h.mustKubectl(t, podYAML(ns, "old-plain", "old", ""), "create", "-o", "json", "-f", "-").Stdout)
	if got := injected(pod, "FROM_PRESET", "yes"); !slices.Equal(got, everyContainer) {
		t.Errorf("containers injected %v, want every one: %v", got, everyContainer)
	}
	r := h.mustKubectl(t, podYAML(ns, "old-conflict", "old", ownProxy), "create", "-o", "json", "-f", "-")
	pod = decodePod(t, r.Stdout)
	if got := injected(pod, "FROM_PRESET", "yes"); len(got) != 0 || pod.Annotations[presetAnnotationPrefix+"podpreset-old"] != "" {
		t.Errorf("a conflicting pod got the old preset: containers %v, annotations %v", got, pod.Annotations)
	}
	if !strings.Contains(r.Stderr, `Warning: pod presets not applied to Pod `+ns+`/old-conflict because they conflict (none of PodPreset "old" was applied)`) {
		t.Errorf("kubectl stderr %q, want the conflict warning", r.Stderr)
	}
}

// testOneContainerPreset: a preset for the app container alone.
func testOneContainerPreset(t *testing.T, h *host, ns string) {
	applyPresetYAML(t, h, ns, "app-only", "  containers: {names: [app]}\n  initContainers: {names: []}\n")
	pod := decodePod(t, h.mustKubectl(t, podYAML(ns, "app-only", "app-only", ""), "create", "-o", "json", "-f", "-").Stdout)
	if got := injected(pod, "FROM_PRESET", "yes"); !slices.Equal(got, []string{"app"}) {
		t.Errorf("containers injected %v, want app only", got)
	}
}

// testAllButSidecarsPreset: a preset that excludes the sidecar and its init
// container.
func testAllButSidecarsPreset(t *testing.T, h *host, ns string) {
	applyPresetYAML(t, h, ns, "no-sidecars", "  containers: {names: [istio-proxy], exclude: true}\n  initContainers: {names: [log-shipper], exclude: true}\n")
	pod := decodePod(t, h.mustKubectl(t, podYAML(ns, "no-sidecars", "no-sidecars", ""), "create", "-o", "json", "-f", "-").Stdout)
	if got := injected(pod, "FROM_PRESET", "yes"); !slices.Equal(got, []string{"init", "app"}) {
		t.Errorf("containers injected %v, want init and app", got)
	}
}

// testPodWinsPreset: the pod keeps its own value, gets the preset's others,
// and no warning.
func testPodWinsPreset(t *testing.T, h *host, ns string) {
	applyPresetYAML(t, h, ns, "pod-wins", "  conflictPolicy: PodWins\n")
	r := h.mustKubectl(t, podYAML(ns, "pod-wins", "pod-wins", ownProxy), "create", "-o", "json", "-f", "-")
	pod := decodePod(t, r.Stdout)
	if got := injected(pod, "HTTPS_PROXY", "http://mine:8080"); !slices.Equal(got, everyContainer) {
		t.Errorf("containers keeping their own HTTPS_PROXY %v, want every one", got)
	}
	if got := injected(pod, "FROM_PRESET", "yes"); !slices.Equal(got, everyContainer) {
		t.Errorf("containers with the preset's other env %v, want every one", got)
	}
	if pod.Annotations[presetAnnotationPrefix+"podpreset-pod-wins"] == "" || strings.Contains(r.Stderr, "Warning") {
		t.Errorf("annotations %v, stderr %q: want the preset recorded, and no warning", pod.Annotations, r.Stderr)
	}
}

// testPresetWinsPreset: the preset's value replaces the pod's in the
// containers it picks, in place.
func testPresetWinsPreset(t *testing.T, h *host, ns string) {
	applyPresetYAML(t, h, ns, "preset-wins", "  conflictPolicy: PresetWins\n  containers: {names: [app]}\n")
	pod := decodePod(t, h.mustKubectl(t, podYAML(ns, "preset-wins", "preset-wins", ownProxy), "create", "-o", "json", "-f", "-").Stdout)
	// The preset picks app and every init container; istio-proxy keeps its own.
	if got := injected(pod, "HTTPS_PROXY", "http://proxy:3128"); !slices.Equal(got, []string{"init", "log-shipper", "app"}) {
		t.Errorf("containers with the preset's HTTPS_PROXY %v, want init, log-shipper and app", got)
	}
	if got := injected(pod, "HTTPS_PROXY", "http://mine:8080"); !slices.Equal(got, []string{"istio-proxy"}) {
		t.Errorf("containers keeping their own HTTPS_PROXY %v, want istio-proxy", got)
	}
	// The replaced variable keeps its place, first in the list.
	if env := pod.Spec.Containers[0].Env; len(env) != 2 || env[0].Name != "HTTPS_PROXY" {
		t.Errorf("app env %v, want HTTPS_PROXY in its place, then FROM_PRESET", env)
	}
}

// testRejectPreset: a conflicting pod is refused, naming the preset and the
// conflict; one without a conflict gets the preset.
func testRejectPreset(t *testing.T, h *host, ns string) {
	applyPresetYAML(t, h, ns, "reject", "  conflictPolicy: Reject\n")
	r := h.kubectl(t, podYAML(ns, "reject", "reject", ownProxy), "create", "-f", "-")
	if r.Err == nil {
		t.Fatalf("a conflicting pod was created: %s", r.Stdout)
	}
	want := `pods "reject" is forbidden: Pod ` + ns + `/reject refused by pod presets whose conflictPolicy is Reject: [PodPreset "reject": env "HTTPS_PROXY" conflicts with the one in init container "init"`
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("kubectl stderr %q, want %q", r.Stderr, want)
	}
	if _, err := framework.KubeClient(t, h.server.AdminConfig()).CoreV1().Pods(ns).Get(context.Background(), "reject", metav1.GetOptions{}); err == nil {
		t.Error("the refused pod exists")
	}
	// Without a conflict the preset applies.
	pod := decodePod(t, h.mustKubectl(t, podYAML(ns, "reject-ok", "reject", ""), "create", "-o", "json", "-f", "-").Stdout)
	if got := injected(pod, "FROM_PRESET", "yes"); !slices.Equal(got, everyContainer) {
		t.Errorf("containers injected %v, want every one", got)
	}
}

// testSkipAllPreset: a conflict skips the preset everywhere, with a warning.
func testSkipAllPreset(t *testing.T, h *host, ns string) {
	applyPresetYAML(t, h, ns, "skip-all", "  conflictPolicy: SkipAll\n")
	r := h.mustKubectl(t, podYAML(ns, "skip-all", "skip-all", ownProxy), "create", "-o", "json", "-f", "-")
	pod := decodePod(t, r.Stdout)
	if got := injected(pod, "FROM_PRESET", "yes"); len(got) != 0 {
		t.Errorf("containers injected %v, want none", got)
	}
	if !strings.Contains(r.Stderr, `env "HTTPS_PROXY" conflicts with the one in container "app"`) {
		t.Errorf("kubectl stderr %q, want the conflict warning", r.Stderr)
	}
}

// testPresetUpdateWithoutFields: a client that does not know the fields
// writes the preset back without them: the update is taken, with a warning
// naming what it took away.
func testPresetUpdateWithoutFields(t *testing.T, h *host, ns string) {
	manifest := fmt.Sprintf(`apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata:
  name: app-only
  namespace: %s
spec:
  selector:
    matchLabels: {app: app-only}
  env:
  - {name: HTTPS_PROXY, value: "http://proxy:3128"}
  - {name: FROM_PRESET, value: "yes"}
`, ns)
	r := h.mustKubectl(t, manifest, "replace", "-f", "-")
	for _, field := range []string{"spec.containers", "spec.initContainers"} {
		if !strings.Contains(r.Stderr, "Warning: "+field+": this update removes the value the preset had") {
			t.Errorf("kubectl stderr %q, want a warning about %s", r.Stderr, field)
		}
	}
}

// checkPolicyFieldsExplained: kubectl explain shows the conflict policies
// and the container targeting fields.
func checkPolicyFieldsExplained(t *testing.T, h *host) {
	out := h.mustKubectl(t, "", "explain", "podpresets.spec.conflictPolicy").Stdout
	for _, want := range []string{"PodWins", "PresetWins", "Reject", "SkipAll"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain podpresets.spec.conflictPolicy lacks %q:\n%s", want, out)
		}
	}
	out = h.mustKubectl(t, "", "explain", "clusterpodpresets.spec.initContainers").Stdout
	if !strings.Contains(out, "exclude") || !strings.Contains(out, "names") {
		t.Errorf("kubectl explain clusterpodpresets.spec.initContainers lacks names and exclude:\n%s", out)
	}
}
