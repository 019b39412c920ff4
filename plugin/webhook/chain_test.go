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

package webhook_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics/legacyregistry"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
	"github.com/admitkit/admitkit/plugin/webhook"
)

// ownerPreset selects the pods the LocationMutator's AssignMetadata labels
// owner=platform: it applies only when LocationMutator ran before PodPreset.
func ownerPreset() *settingsv1alpha1.PodPreset {
	p := envPreset("owned", "OWNED", "yes")
	p.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"owner": "platform"}}
	return p
}

// TestReviewChain: a review of PodPreset then LocationMutator gives the pod
// that reviewing each in turn, with the first's patch applied before the
// second, gives; the plugins run in the order named.
func TestReviewChain(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("prod")}, envPreset("a", "X", "1"), ownerPreset())

	first := podCreate(t, "in-turn-1", webPod())
	afterPreset := patched(t, first, review(t, f.host, webhook.Mutate, podpreset.PluginName, first))
	second := podCreate(t, "in-turn-2", afterPreset)
	inTurn := patched(t, second, review(t, f.host, webhook.Mutate, locationmutator.PluginName, second))

	req := podCreate(t, "chain", webPod())
	resp := reviewChain(t, f.host, webhook.Mutate, req, podpreset.PluginName, locationmutator.PluginName)
	if !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	chained := patched(t, req, resp)
	if diff := cmp.Diff(inTurn, chained); diff != "" {
		t.Errorf("the chain's pod differs from the plugins' in turn (-in turn +chain):\n%s", diff)
	}
	if env := envOf(chained); env["X"] != "1" || env["OWNED"] != "" || chained.Labels["owner"] != "platform" {
		t.Errorf("PodPreset then LocationMutator gave env %v and labels %v; want X only, owner=platform", env, chained.Labels)
	}
	want := map[string]string{"mutations": "Assign/always-pull,AssignMetadata/owner"}
	if diff := cmp.Diff(want, resp.AuditAnnotations); diff != "" {
		t.Errorf("audit annotations (-want +got):\n%s", diff)
	}

	// The other order: PodPreset sees the label LocationMutator set.
	req = podCreate(t, "chain-reversed", webPod())
	reversed := patched(t, req, reviewChain(t, f.host, webhook.Mutate, req, locationmutator.PluginName, podpreset.PluginName))
	if env := envOf(reversed); env["X"] != "1" || env["OWNED"] != "yes" {
		t.Errorf("LocationMutator then PodPreset gave env %v; want X and OWNED", env)
	}
}

func envOf(pod *corev1.Pod) map[string]string {
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	return env
}

// TestReviewChainRefusal: the second plugin sees the first's changes; its
// refusal is the chain's, without the first's patch, and with both
// plugins' warnings and audit annotations. A plugin after a refusal does
// not run, and its metrics do not count the review.
func TestReviewChainRefusal(t *testing.T) {
	warn := envPreset("w", "Y", "2")
	warn.Spec.Mode = "Warn"
	f := newFixture(t, []runtime.Object{namespace("prod")}, envPreset("a", "X", "1"), warn)

	req := podCreate(t, "sees", webPod())
	resp := reviewChain(t, f.host, webhook.Mutate, req, locationmutator.PluginName, labelingPlugin)
	if pod := patched(t, req, resp); pod.Labels["owner"] != "platform" || pod.Labels["labeled"] != "yes" {
		t.Errorf("labels %v, want both plugins' owner and labeled", pod.Labels)
	}
	if got := resp.AuditAnnotations["saw"]; got != "app=web,owner=platform" {
		t.Errorf("the labeler saw %q, want LocationMutator's label too", got)
	}

	pod := webPod()
	pod.Labels["refuse"] = "yes"
	refusedBefore := reviews(t, labelingPlugin, "refused")
	presetBefore := reviews(t, podpreset.PluginName, "allowed")
	resp = reviewChain(t, f.host, webhook.Mutate, podCreate(t, "refused", pod), podpreset.PluginName, labelingPlugin)
	if resp.Allowed || resp.Result.Code != 403 || !strings.Contains(resp.Result.Message, "refuses pods labeled refuse=yes") {
		t.Fatalf("allowed %v, %v; want the labeler's 403", resp.Allowed, resp.Result)
	}
	if resp.Patch != nil || resp.PatchType != nil {
		t.Errorf("a refusal carries PodPreset's patch %s", resp.Patch)
	}
	if len(resp.Warnings) != 2 || !strings.Contains(resp.Warnings[0], `PodPreset "w"`) || resp.Warnings[1] != "the labeler saw app=web,refuse=yes" {
		t.Errorf("warnings %q, want PodPreset's then the labeler's", resp.Warnings)
	}
	for _, name := range []string{"unenforced-presets", "saw"} {
		if _, ok := resp.AuditAnnotations[name]; !ok {
			t.Errorf("audit annotations %v lack %q", resp.AuditAnnotations, name)
		}
	}
	if got := reviews(t, labelingPlugin, "refused") - refusedBefore; got != 1 {
		t.Errorf("the labeler's refusals moved by %v, want 1", got)
	}
	if got := reviews(t, podpreset.PluginName, "allowed") - presetBefore; got != 1 {
		t.Errorf("PodPreset's allowed reviews moved by %v, want 1", got)
	}

	// Refused first, PodPreset never runs.
	presetBefore = reviews(t, podpreset.PluginName, "allowed")
	resp = reviewChain(t, f.host, webhook.Mutate, podCreate(t, "refused-first", pod), labelingPlugin, podpreset.PluginName)
	if resp.Allowed || len(resp.Warnings) != 1 {
		t.Errorf("allowed %v with warnings %q; want the labeler's refusal and warning alone", resp.Allowed, resp.Warnings)
	}
	if got := reviews(t, podpreset.PluginName, "allowed") - presetBefore; got != 0 {
		t.Errorf("PodPreset's reviews moved by %v after a refusal before it", got)
	}
}

// TestReviewChainReinvocation: kube-apiserver calls the chain's webhook
// again when something after it changed the pod; the plugins share the
// request's state, as in-process they share its reinvocation context, so
// each counts, warns and annotates once per request.
func TestReviewChainReinvocation(t *testing.T) {
	warn := envPreset("w", "Y", "2")
	warn.Spec.Mode = "Warn"
	f := newFixture(t, []runtime.Object{namespace("prod")}, envPreset("a", "X", "1"), warn)
	chain := []string{podpreset.PluginName, locationmutator.PluginName}
	const injected, mutated = "apiserver_admission_podpreset_pods_injected_total", "apiserver_admission_locationmutator_objects_mutated_total"
	injectedBefore, mutatedBefore := counter(t, injected), counter(t, mutated)

	first := podCreate(t, "call-1", webPod())
	firstResp := reviewChain(t, f.host, webhook.Mutate, first, chain...)
	if len(firstResp.Warnings) != 1 || len(firstResp.Patch) == 0 {
		t.Fatalf("first call warned %q and patched %s; want the Warn preset's warning and a patch", firstResp.Warnings, firstResp.Patch)
	}
	later := patched(t, first, firstResp)
	later.Labels["team"] = "a"
	again := reviewChain(t, f.host, webhook.Mutate, podCreate(t, "call-2", later), chain...)
	if len(again.Warnings) != 0 || len(again.Patch) != 0 || len(again.AuditAnnotations) != 0 {
		t.Errorf("second call warned %q, patched %s and annotated %v; want none", again.Warnings, again.Patch, again.AuditAnnotations)
	}
	if got := counter(t, injected) - injectedBefore; got != 1 {
		t.Errorf("pod counted as injected %v times, want once", got)
	}
	if got := counter(t, mutated) - mutatedBefore; got != 1 {
		t.Errorf("pod counted as mutated %v times, want once", got)
	}

	next := reviewChain(t, f.host, webhook.Mutate, podCreate(t, "call-3", webPod()), chain...)
	if len(next.Warnings) != 1 || len(next.Patch) == 0 {
		t.Errorf("a new request's warnings %q and patch %s; want both", next.Warnings, next.Patch)
	}
	if got := counter(t, injected) - injectedBefore; got != 2 {
		t.Errorf("pods counted as injected %v times, want twice", got)
	}
}

// TestReviewChainNotServed: a chain is served only when each of its
// plugins is, in the phase, once.
func TestReviewChainNotServed(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("prod")})
	req := podCreate(t, "u", webPod())
	for _, tc := range []struct {
		name    string
		phase   webhook.Phase
		plugins []string
		message string
	}{
		{"none", webhook.Mutate, nil, "no admission plugin named"},
		{"twice", webhook.Mutate, []string{"podpreset", "locationmutator", "PodPreset"}, `admission plugin "PodPreset" is named twice in "podpreset/locationmutator/PodPreset": not served as a mutate webhook`},
		{"not in the phase", webhook.Mutate, []string{"podpreset", "noderestriction"}, `admission plugin "noderestriction": not served as a mutate webhook`},
		{"unknown", webhook.Validate, []string{"noderestriction", ""}, `admission plugin "": not served as a validate webhook`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.host.Review(context.Background(), tc.phase, req, tc.plugins...)
			if !errors.Is(err, webhook.ErrNotServed) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %v, want ErrNotServed with %q", err, tc.message)
			}
		})
	}
}

// reviews is admitkit_webhook_reviews_total of plugin's mutating pod
// creates with result.
func reviews(t testing.TB, plugin, result string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"plugin": plugin, "phase": string(webhook.Mutate), "operation": string(admissionv1.Create), "result": result}
	for _, mf := range families {
		if mf.GetName() != "admitkit_webhook_reviews_total" {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
