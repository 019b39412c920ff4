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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// modesNamespace is the namespace whose pod creates the server's audit
// policy logs (serverConfig).
const modesNamespace = "pp-modes"

// TestPodPresetWarnMode tries a preset the way a user rolls one out: in
// Warn mode kubectl prints what it would set, the pod is created as sent
// and the audit log records it; switched to Enforce, it applies.
func TestPodPresetWarnMode(t *testing.T) { onEachHost(t, testPodPresetWarnMode) }

func testPodPresetWarnMode(t *testing.T, h *host) {
	ns := modesNamespace
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	preset := `apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata:
  name: proxy
  namespace: ` + ns + `
spec:
  mode: Warn
  selector:
    matchLabels: {app: web}
  containers: {names: [app]}
  initContainers: {names: []}
  env:
  - {name: HTTPS_PROXY, value: "http://proxy:3128"}
`
	h.mustKubectl(t, preset, "apply", "-f", "-")
	want := `Warning: PodPreset "proxy" is in Warn mode; enforced, it would set env "HTTPS_PROXY" in container "app" in Pod ` + ns + "/"
	// The plugin's informer sees the preset a moment after it is stored.
	waitForWarning(t, h, podYAML(ns, "probe", "web", ""), want+"probe")

	r := h.mustKubectl(t, podYAML(ns, "warned", "web", ""), "create", "-o", "json", "-f", "-")
	if !strings.Contains(r.Stderr, want+"warned") {
		t.Errorf("kubectl printed %q, want the warning %q", r.Stderr, want+"warned")
	}
	pod := decodePod(t, r.Stdout)
	if got := injected(pod, "HTTPS_PROXY", "http://proxy:3128"); len(got) != 0 {
		t.Errorf("a preset in Warn mode changed containers %v", got)
	}
	if v, ok := pod.Annotations[presetAnnotationPrefix+"podpreset-proxy"]; ok {
		t.Errorf("a preset in Warn mode was recorded on the pod: %q", v)
	}

	wantAudit := `PodPreset "proxy" (Warn) would set env "HTTPS_PROXY" in container "app"`
	framework.Poll(t, "the audit event of the warned pod's create", func() bool {
		events, err := framework.AuditEvents(h.server.AuditLog)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Resource == "pods" && e.ObjectRef.Name == "warned" && e.Stage == "ResponseComplete" {
				if key := h.podCreateAuditKey(podpreset.UnenforcedAnnotationKey); e.Annotations[key] != wantAudit {
					t.Fatalf("audit annotation %s = %q, want %q (all: %v)", key, e.Annotations[key], wantAudit, e.Annotations)
				}
				return true
			}
		}
		return false
	})

	h.mustKubectl(t, "", "patch", "podpreset", "proxy", "-n", ns, "--type=merge", "-p", `{"spec":{"mode":"Enforce"}}`)
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		r := h.kubectl(t, podYAML(ns, "probe", "web", ""), "create", "--dry-run=server", "-o", "json", "-f", "-")
		if r.Err != nil {
			return false, r.Err
		}
		return len(injected(decodePod(t, r.Stdout), "HTTPS_PROXY", "http://proxy:3128")) > 0, nil
	})
	if err != nil {
		t.Fatalf("the preset switched to Enforce never applied: %v", err)
	}
	r = h.mustKubectl(t, podYAML(ns, "enforced", "web", ""), "create", "-o", "json", "-f", "-")
	if strings.Contains(r.Stderr, "Warning") {
		t.Errorf("an enforced preset still warns: %q", r.Stderr)
	}
	if got := injected(decodePod(t, r.Stdout), "HTTPS_PROXY", "http://proxy:3128"); len(got) != 1 || got[0] != "app" {
		t.Errorf("the enforced preset reached containers %v, want [app]", got)
	}
}

// waitForWarning creates pod with server-side dry run until kubectl prints
// want.
func waitForWarning(t *testing.T, h *host, pod, want string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		r := h.kubectl(t, pod, "create", "--dry-run=server", "-o", "json", "-f", "-")
		if r.Err != nil {
			return false, r.Err
		}
		last = r.Stderr
		return strings.Contains(r.Stderr, want), nil
	})
	if err != nil {
		t.Fatalf("kubectl never printed %q (last: %q): %v", want, last, err)
	}
}
