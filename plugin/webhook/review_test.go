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
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/webhook"
)

func review(t testing.TB, h *webhook.Host, phase webhook.Phase, plugin string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	return reviewChain(t, h, phase, req, plugin)
}

// reviewChain reviews req with the plugins in one review, as the webhook
// path naming them all does.
func reviewChain(t testing.TB, h *webhook.Host, phase webhook.Phase, req *admissionv1.AdmissionRequest, plugins ...string) *admissionv1.AdmissionResponse {
	t.Helper()
	resp, err := h.Review(context.Background(), phase, req, plugins...)
	if err != nil {
		t.Fatalf("Review(%s, %v): %v", phase, plugins, err)
	}
	if resp.UID != req.UID {
		t.Fatalf("response uid %q, request uid %q", resp.UID, req.UID)
	}
	return resp
}

// patched applies resp's patch to the object of req with a real JSON Patch
// library, as kube-apiserver does, and decodes the result.
func patched(t testing.TB, req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) *corev1.Pod {
	t.Helper()
	doc := req.Object.Raw
	if len(resp.Patch) > 0 {
		if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
		}
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("decoding patch %s: %v", resp.Patch, err)
		}
		if doc, err = p.Apply(doc); err != nil {
			t.Fatalf("applying patch %s: %v", resp.Patch, err)
		}
	}
	var pod corev1.Pod
	if err := json.Unmarshal(doc, &pod); err != nil {
		t.Fatal(err)
	}
	return &pod
}

func TestReviewPodPreset(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("prod")}, envPreset("cluster-env", "CLUSTER", "prod-1"))
	req := podCreate(t, "uid-1", webPod())
	resp := review(t, f.host, webhook.Mutate, "PodPreset", req)
	if !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	pod := patched(t, req, resp)
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "CLUSTER", Value: "prod-1"}}, pod.Spec.Containers[0].Env); diff != "" {
		t.Errorf("env after the patch (-want +got):\n%s", diff)
	}
	if got := pod.Annotations["podpreset.admission.kubernetes.io/podpreset-cluster-env"]; got != "1" {
		t.Errorf("preset annotation = %q, want the preset's resourceVersion 1", got)
	}

	// A dry run is changed the same way.
	dry := podCreate(t, "uid-2", webPod())
	dry.DryRun = ptrTo(true)
	if diff := cmp.Diff(string(resp.Patch), string(review(t, f.host, webhook.Mutate, "PodPreset", dry).Patch)); diff != "" {
		t.Errorf("dry-run patch differs (-want +got):\n%s", diff)
	}
}

// TestReviewReinvocation sends what kube-apiserver sends when it calls a
// mutating webhook again on one request: a new UID, and the object as the
// first call left it plus what a later webhook changed. What the plugins
// count, warn about and annotate stays once per request; a new request
// with the same fields (a controller's next, identical pod) counts again.
func TestReviewReinvocation(t *testing.T) {
	warn := envPreset("w", "Y", "2")
	warn.Spec.Mode = "Warn"
	f := newFixture(t, []runtime.Object{namespace("prod")}, envPreset("a", "X", "1"), warn)
	injectedBefore := counter(t, "apiserver_admission_podpreset_pods_injected_total")

	first := podCreate(t, "call-1", webPod())
	firstResp := review(t, f.host, webhook.Mutate, "PodPreset", first)
	if len(firstResp.Warnings) != 1 || !strings.Contains(firstResp.Warnings[0], "w") {
		t.Errorf("first call's warnings = %q, want the Warn preset's", firstResp.Warnings)
	}
	// A later webhook adds a label: kube-apiserver calls again.
	later := patched(t, first, firstResp)
	later.Labels["team"] = "a"
	again := review(t, f.host, webhook.Mutate, "PodPreset", podCreate(t, "call-2", later))
	if len(again.Warnings) != 0 || len(again.Patch) != 0 {
		t.Errorf("second call warned %q and patched %s; want neither", again.Warnings, again.Patch)
	}
	if got := counter(t, "apiserver_admission_podpreset_pods_injected_total") - injectedBefore; got != 1 {
		t.Errorf("pod counted as injected %v times, want once", got)
	}
	// The controller's next pod, the same as the first.
	next := review(t, f.host, webhook.Mutate, "PodPreset", podCreate(t, "call-3", webPod()))
	if len(next.Warnings) != 1 || len(next.Patch) == 0 {
		t.Errorf("a new request's warnings %q and patch %s; want both", next.Warnings, next.Patch)
	}
	if got := counter(t, "apiserver_admission_podpreset_pods_injected_total") - injectedBefore; got != 2 {
		t.Errorf("pods counted as injected %v times, want twice", got)
	}

	// LocationMutator records what a second call changes under a key of
	// its own: here the pull policy of a container a later webhook added.
	lmFirst := podCreate(t, "lm-1", webPod())
	lmResp := review(t, f.host, webhook.Mutate, locationmutator.PluginName, lmFirst)
	lmLater := patched(t, lmFirst, lmResp)
	lmLater.Spec.Containers = append(lmLater.Spec.Containers, corev1.Container{Name: "sidecar", Image: "envoy"})
	lmAgain := review(t, f.host, webhook.Mutate, locationmutator.PluginName, podCreate(t, "lm-2", lmLater))
	// The keys are the names after the plugin's domain: kube-apiserver
	// prefixes them with the webhook's name.
	want := map[string]string{"mutations": "Assign/always-pull,AssignMetadata/owner"}
	if diff := cmp.Diff(want, lmResp.AuditAnnotations); diff != "" {
		t.Errorf("first audit annotations (-want +got):\n%s", diff)
	}
	want = map[string]string{"mutations-on-reinvocation": "Assign/always-pull"}
	if diff := cmp.Diff(want, lmAgain.AuditAnnotations); diff != "" {
		t.Errorf("second call's audit annotations (-want +got):\n%s", diff)
	}
}

func TestReviewLocationMutator(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("prod")})
	req := podCreate(t, "uid", webPod())
	resp := review(t, f.host, webhook.Mutate, locationmutator.PluginName, req)
	pod := patched(t, req, resp)
	if pod.Labels["owner"] != "platform" || pod.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("patched pod has labels %v and pull policy %q", pod.Labels, pod.Spec.Containers[0].ImagePullPolicy)
	}
	// LocationMutator also validates: its validating path serves.
	if resp := review(t, f.host, webhook.Validate, locationmutator.PluginName, req); !resp.Allowed {
		t.Errorf("validate refused: %v", resp.Result)
	}
}

func TestReviewNodeRestriction(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("prod"), node("node-a"), node("node-b")})
	kubelet := authenticationv1.UserInfo{Username: "system:node:node-a", Groups: []string{"system:nodes", "system:authenticated"}}
	cni := authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:cni", Groups: []string{"system:serviceaccounts"}}
	cniOnA := cni
	cniOnA.Extra = map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/node-name": {"node-a"}}
	update := func(user authenticationv1.UserInfo, nodeName, subresource string) *admissionv1.AdmissionRequest {
		n := node(nodeName)
		n.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
		return &admissionv1.AdmissionRequest{
			UID: "u", Kind: nodeKind, Resource: nodesResource, SubResource: subresource, Name: nodeName,
			Operation: admissionv1.Update, UserInfo: user, Object: raw(t, n), OldObject: raw(t, n),
			Options: raw(t, &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}}),
		}
	}
	for _, tc := range []struct {
		name    string
		req     *admissionv1.AdmissionRequest
		message string // "" means allowed
	}{
		{"kubelet updates its node's status", update(kubelet, "node-a", "status"), ""},
		{"kubelet updates another node's status", update(kubelet, "node-b", "status"), `node "node-a" is not allowed to modify node "node-b"`},
		{"node-scoped account on its node", update(cniOnA, "node-a", ""), ""},
		{"node-scoped account on another node", update(cniOnA, "node-b", ""), "is held to node \"node-a\""},
		{"node-scoped account without the node-name extra", update(cni, "node-a", ""), "names no single node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := review(t, f.host, webhook.Validate, "NodeRestriction", tc.req)
			if tc.message == "" {
				if !resp.Allowed {
					t.Fatalf("refused: %v", resp.Result.Message)
				}
				return
			}
			if resp.Allowed {
				t.Fatal("allowed, want a refusal")
			}
			if resp.Result.Code != 403 || resp.Result.Reason != metav1.StatusReasonForbidden || !strings.Contains(resp.Result.Message, tc.message) {
				t.Errorf("refusal %d %s %q, want 403 Forbidden with %q", resp.Result.Code, resp.Result.Reason, resp.Result.Message, tc.message)
			}
		})
	}
}

func TestReviewRefusals(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("prod")})
	req := podCreate(t, "uid", webPod())

	invalid := review(t, f.host, webhook.Validate, invalidPlugin, req).Result
	want := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: `Pod "web" is invalid: [spec.containers[0].image: Required value: an image is required, metadata.labels[app]: Invalid value: "x/y": not a label value]`,
		Details: &metav1.StatusDetails{Kind: "Pod", Name: "web", Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldValueRequired, Message: "Required value: an image is required", Field: "spec.containers[0].image"},
			{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "x/y": not a label value`, Field: "metadata.labels[app]"},
		}},
	}
	if diff := cmp.Diff(want, invalid); diff != "" {
		t.Errorf("invalid refusal (-want +got):\n%s", diff)
	}

	plain := review(t, f.host, webhook.Validate, plainPlugin, req).Result
	if plain.Code != 500 || plain.Reason != metav1.StatusReasonUnknown || plain.Message != "something broke" {
		t.Errorf("plain error became %d %s %q, want kube-apiserver's 500 Unknown with the message", plain.Code, plain.Reason, plain.Message)
	}

	bad := podCreate(t, "uid", webPod())
	bad.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Pod","spec":"not an object"}`)
	undecodable := review(t, f.host, webhook.Mutate, "PodPreset", bad)
	if undecodable.Allowed || undecodable.Result.Code != 400 || !strings.Contains(undecodable.Result.Message, "cannot decode the object of this pods request") {
		t.Errorf("undecodable object: allowed %v, %v", undecodable.Allowed, undecodable.Result)
	}

	if _, err := f.host.Review(context.Background(), webhook.Mutate, req, "NodeRestriction"); !errors.Is(err, webhook.ErrNotServed) {
		t.Errorf("NodeRestriction as a mutating webhook: %v, want ErrNotServed", err)
	}
	noUID := podCreate(t, "", webPod())
	if _, err := f.host.Review(context.Background(), webhook.Mutate, noUID, "PodPreset"); err == nil {
		t.Error("a request without uid was judged")
	}
}

func ptrTo[T any](v T) *T { return &v }

// counter is the value of the counter name without labels in the legacy
// registry.
func counter(t testing.TB, name string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return 0
}

// TestReviewConcurrent reviews identical pod creates at once, as a
// ReplicaSet's burst sends them: each is a request of its own, and the
// shared reinvocation cache stays race-free (go test -race).
func TestReviewConcurrent(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("prod")}, envPreset("a", "X", "1"))
	injectedBefore := counter(t, "apiserver_admission_podpreset_pods_injected_total")
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		req := podCreate(t, types.UID(fmt.Sprint(i)), webPod())
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := f.host.Review(context.Background(), webhook.Mutate, req, "PodPreset")
			if err != nil || len(resp.Patch) == 0 {
				t.Errorf("review %d: %v, %+v", i, err, resp)
			}
		}()
	}
	wg.Wait()
	if got := counter(t, "apiserver_admission_podpreset_pods_injected_total") - injectedBefore; got != n {
		t.Errorf("%d identical requests counted %v times", n, got)
	}
}
