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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// lmModesNamespace is the namespace of TestLocationMutatorWarnMode, whose
// pod creates the server's audit policy logs (serverConfig). It is outside
// lm-*, live-* and load-*, so that no other mutator of the server applies.
const lmModesNamespace = "modes-lm"

// pullPolicies lists the pod's containers' imagePullPolicy.
func pullPolicies(pod *corev1.Pod) []corev1.PullPolicy {
	var out []corev1.PullPolicy
	for _, c := range pod.Spec.Containers {
		out = append(out, c.ImagePullPolicy)
	}
	return out
}

// TestLocationMutatorWarnMode rolls out a mutator from the API the way a
// user would: applied in Warn mode with kubectl, which prints what it would
// set while the pod is created as sent and the audit log records it; then
// switched to Enforce with kubectl annotate, after which it applies.
func TestLocationMutatorWarnMode(t *testing.T) { onEachHost(t, testLocationMutatorWarnMode) }

func testLocationMutatorWarnMode(t *testing.T, h *host) {
	ns := lmModesNamespace
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	assigns := framework.DynamicClient(t, h.server.AdminConfig()).Resource(assignGVR)
	id := h.identity(t)

	manifest := strings.Replace(liveAssign("modes-pull", ns, "Always"), "  name: modes-pull\n",
		"  name: modes-pull\n  annotations: {"+mutation.ModeAnnotation+": Warn}\n", 1)
	h.mustKubectl(t, manifest, "apply", "-f", "-")
	t.Cleanup(func() { h.kubectl(t, "", "delete", "assign", "modes-pull") })
	want := `Warning: Assign "modes-pull" is in Warn mode; enforced, it would set spec.containers[name: *].imagePullPolicy to "Always" in Pod ` + ns + "/"
	// Pod names differ from podpreset_modes_test.go's, whose audit events
	// are found by name. The plugin's watch sees the mutator a moment after it is stored.
	waitForWarning(t, h, podYAML(ns, "probe", "web", ""), want+"probe")
	checkWarnedPod(t, h, ns, want)
	checkWarnedPodAudited(t, h, ns)
	// The status entry says the mode, in Gatekeeper's schema.
	framework.Poll(t, "the status entry to say the mode", func() bool { return statusSaysWarn(assigns, id) })

	checkMutatorEnforced(t, h, ns)
	framework.Poll(t, "the status entry to say enforced", func() bool {
		u, err := assigns.Get(context.Background(), "modes-pull", metav1.GetOptions{})
		if err != nil {
			return false
		}
		e, ok := entryOf(u, id)
		return ok && e["enforced"] == true && e["errors"] == nil
	})
}

// checkWarnedPod: a pod created while the mutator is in Warn mode gets the
// warning and is stored as sent, without Gatekeeper's annotations.
func checkWarnedPod(t *testing.T, h *host, ns, want string) {
	t.Helper()
	r := h.mustKubectl(t, podYAML(ns, "lm-warned", "web", ""), "create", "-o", "json", "-f", "-")
	if !strings.Contains(r.Stderr, want+"lm-warned") {
		t.Errorf("kubectl printed %q, want the warning %q", r.Stderr, want+"lm-warned")
	}
	pod := decodePod(t, r.Stdout)
	for _, p := range pullPolicies(pod) {
		if p != corev1.PullIfNotPresent {
			t.Errorf("a mutator in Warn mode changed the pod: pull policies %v", pullPolicies(pod))
			break
		}
	}
	for _, key := range []string{locationmutator.MutationsAnnotation, locationmutator.MutationIDAnnotation} {
		if v, ok := pod.Annotations[key]; ok {
			t.Errorf("a pod no mutator changed has %s=%q", key, v)
		}
	}

}

// checkWarnedPodAudited: the warned pod's create carries, in the audit
// log, what the mutator would have set.
func checkWarnedPodAudited(t *testing.T, h *host, ns string) {
	t.Helper()
	wantAudit := `Assign/modes-pull (Warn) would set spec.containers[name: *].imagePullPolicy to "Always"`
	framework.Poll(t, "the audit event of the warned pod's create", func() bool {
		events, err := framework.AuditEvents(h.server.AuditLog)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Resource == "pods" && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == "lm-warned" && e.Stage == "ResponseComplete" {
				if key := h.podCreateAuditKey(locationmutator.UnenforcedAnnotationKey); e.Annotations[key] != wantAudit {
					t.Fatalf("audit annotation %s = %q, want %q (all: %v)", key, e.Annotations[key], wantAudit, e.Annotations)
				}
				return true
			}
		}
		return false
	})

}

// statusSaysWarn reports whether the server's status entry of the
// modes-pull Assign says it is not enforced because of its Warn mode.
func statusSaysWarn(assigns dynamic.NamespaceableResourceInterface, id string) bool {
	u, err := assigns.Get(context.Background(), "modes-pull", metav1.GetOptions{})
	if err != nil {
		return false
	}
	e, ok := entryOf(u, id)
	// enforced is omitted when false, as in Gatekeeper's schema.
	if !ok || e["enforced"] == true {
		return false
	}
	errs, _ := e["errors"].([]any)
	if len(errs) != 1 {
		return false
	}
	first, _ := errs[0].(map[string]any)
	message, _ := first["message"].(string)
	return first["type"] == "Mode" && strings.HasPrefix(message, "mode Warn: not enforced")
}

// checkMutatorEnforced switches the mutator to Enforce with kubectl
// annotate: pods then get its change and Gatekeeper's annotation, and no
// warning.
func checkMutatorEnforced(t *testing.T, h *host, ns string) {
	t.Helper()
	h.mustKubectl(t, "", "annotate", "--overwrite", "assign", "modes-pull", mutation.ModeAnnotation+"=Enforce")
	framework.Poll(t, "the mutator switched to Enforce to apply", func() bool {
		r := h.kubectl(t, podYAML(ns, "probe", "web", ""), "create", "--dry-run=server", "-o", "json", "-f", "-")
		return r.Err == nil && pullPolicies(decodePod(t, r.Stdout))[0] == corev1.PullAlways
	})
	r := h.mustKubectl(t, podYAML(ns, "lm-enforced", "web", ""), "create", "-o", "json", "-f", "-")
	if strings.Contains(r.Stderr, "Warning") {
		t.Errorf("an enforced mutator still warns: %q", r.Stderr)
	}
	pod := decodePod(t, r.Stdout)
	for _, p := range pullPolicies(pod) {
		if p != corev1.PullAlways {
			t.Errorf("the enforced mutator left pull policies %v", pullPolicies(pod))
			break
		}
	}
	if got := pod.Annotations[locationmutator.MutationsAnnotation]; got != "Assign//modes-pull:1" {
		t.Errorf("%s = %q, want Assign//modes-pull:1", locationmutator.MutationsAnnotation, got)
	}
}

// TestLocationMutatorGatekeeperAnnotations: with mutationAnnotations in the
// server's configuration, a pod the configured mutators change carries
// Gatekeeper's two annotations, and one they leave alone carries neither.
func TestLocationMutatorGatekeeperAnnotations(t *testing.T) {
	onEachHost(t, testLocationMutatorGatekeeperAnnotations)
}

func testLocationMutatorGatekeeperAnnotations(t *testing.T, h *host) {
	ctx := context.Background()
	client := framework.KubeClient(t, h.server.AdminConfig())
	framework.CreateNamespace(t, h.server.AdminConfig(), "lm-annotations", nil)
	pod := framework.Pod("web", nil, "app")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example.com/init:1"}}
	mutated, err := client.CoreV1().Pods("lm-annotations").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mutated.Annotations[locationmutator.MutationsAnnotation], "Assign//lm-always-pull-init:0, Assign//lm-always-pull:0"; got != want {
		t.Errorf("%s = %q, want %q", locationmutator.MutationsAnnotation, got, want)
	}
	if id := mutated.Annotations[locationmutator.MutationIDAnnotation]; len(id) != 36 {
		t.Errorf("%s = %q, want a UUID", locationmutator.MutationIDAnnotation, id)
	}

	framework.CreateNamespace(t, h.server.AdminConfig(), "lm-none-annotations", nil)
	plain := framework.Pod("web", nil, "app")
	plain.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	plain.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example.com/init:1", ImagePullPolicy: corev1.PullAlways}}
	unchanged, err := client.CoreV1().Pods("lm-none-annotations").Create(ctx, plain, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{locationmutator.MutationsAnnotation, locationmutator.MutationIDAnnotation} {
		if v, ok := unchanged.Annotations[key]; ok {
			t.Errorf("a pod the mutators left alone has %s=%q", key, v)
		}
	}
}
