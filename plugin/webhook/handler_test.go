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
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	sigsjson "sigs.k8s.io/json"

	"github.com/admitkit/admitkit/plugin/webhook"
)

func post(t testing.TB, h http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	return rec
}

func reviewBody(t testing.TB, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	data, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestHandler(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("prod")}, envPreset("p", "X", "1"))
	h := f.host.Handler()
	for _, tc := range []struct {
		name, method, path string
		body               []byte
		code               int
		contains           string
	}{
		{"mutating review", http.MethodPost, "/mutate/PodPreset", reviewBody(t, podCreate(t, "u", webPod())), 200, `"patchType":"JSONPatch"`},
		// The paths of hack/manifests: kube-apiserver accepts only lower-case service paths.
		{"mutating review, lower-case path", http.MethodPost, "/mutate/podpreset", reviewBody(t, podCreate(t, "u2", webPod())), 200, `"patchType":"JSONPatch"`},
		// hack/manifests' pods webhook: both plugins in one review.
		{"chain", http.MethodPost, "/mutate/podpreset/locationmutator", reviewBody(t, podCreate(t, "u3", webPod())), 200, `"auditAnnotations":{"mutations":"Assign/always-pull,AssignMetadata/owner"}`},
		{"validating chain", http.MethodPost, "/validate/locationmutator/TestRecording", reviewBody(t, podCreate(t, "u", webPod())), 200, `"allowed":true`},
		{"chain naming a plugin twice", http.MethodPost, "/mutate/podpreset/PodPreset", reviewBody(t, podCreate(t, "u", webPod())), 404, `\"PodPreset\" is named twice in \"podpreset/PodPreset\"`},
		{"chain with a plugin not served in the phase", http.MethodPost, "/mutate/podpreset/noderestriction", reviewBody(t, podCreate(t, "u", webPod())), 404, `\"noderestriction\": not served as a mutate webhook`},
		{"empty segment", http.MethodPost, "/mutate/podpreset/", reviewBody(t, podCreate(t, "u", webPod())), 404, `\"\": not served`},
		{"validating review", http.MethodPost, "/validate/LocationMutator", reviewBody(t, podCreate(t, "u", webPod())), 200, `"allowed":true`},
		{"not served in the phase", http.MethodPost, "/validate/PodPreset", reviewBody(t, podCreate(t, "u", webPod())), 404, `\"PodPreset\": not served as a validate webhook`},
		{"unknown plugin", http.MethodPost, "/mutate/Nope", reviewBody(t, podCreate(t, "u", webPod())), 404, "not served"},
		{"v1beta1 review", http.MethodPost, "/mutate/PodPreset", []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}`), 400, "not an AdmissionReview of admission.k8s.io/v1"},
		{"not JSON", http.MethodPost, "/mutate/PodPreset", []byte(`{`), 400, "not an AdmissionReview"},
		{"no request", http.MethodPost, "/mutate/PodPreset", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), 400, "has no request"},
		{"unknown operation", http.MethodPost, "/mutate/PodPreset", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"PATCH"}}`), 400, `operation \"PATCH\"`},
		{"GET of a review path", http.MethodGet, "/mutate/PodPreset", nil, 405, ""},
		{"healthz", http.MethodGet, "/healthz", nil, 200, "ok"},
		{"readyz", http.MethodGet, "/readyz", nil, 200, "ok"},
		{"metrics", http.MethodGet, "/metrics", nil, 200, `admitkit_webhook_reviews_total{operation="CREATE",phase="mutate",plugin="PodPreset",result="allowed"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, bytes.NewReader(tc.body)))
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("%s %s: %d %s, want %d with %q", tc.method, tc.path, rec.Code, rec.Body, tc.code, tc.contains)
			}
		})
	}
}

// FuzzHandler posts any body to the webhook paths. The oracle: a body that
// is not an AdmissionReview v1 with a judgeable request gets 400 with a
// message; otherwise 200 with the request's uid, and either allowed (with
// a patch that applies to the object) or refused with a status code of
// 400 or more and a message, which names the resource when the object
// could not be decoded. Anything else, or a panic, fails.
func FuzzHandler(f *testing.F) {
	seed := func(req *admissionv1.AdmissionRequest) { f.Add(uint8(0), reviewBody(f, req)) }
	seed(podCreate(f, "u", webPod()))
	bad := podCreate(f, "u", webPod())
	bad.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":"x"}}`)
	seed(bad)
	wrongKind := podCreate(f, "u", webPod())
	wrongKind.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Node"}`)
	seed(wrongKind)
	custom := podCreate(f, "u", webPod())
	custom.Kind = metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	custom.Resource = metav1.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	custom.Object.Raw = []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"containers":[{"name":"c"}]}}`)
	seed(custom)
	f.Add(uint8(1), []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"UPDATE","kind":{"version":"v1","kind":"Node"},"resource":{"version":"v1","resource":"nodes"},"subResource":"status","name":"n","userInfo":{"username":"system:node:n","groups":["system:nodes"]},"object":{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}},"oldObject":{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}},"options":{"apiVersion":"meta.k8s.io/v1","kind":"UpdateOptions"}}}`))
	f.Add(uint8(3), []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CONNECT","kind":{"version":"v1","kind":"PodExecOptions"},"resource":{"version":"v1","resource":"pods"},"subResource":"exec","options":{"kind":"Nope"}}}`))
	f.Add(uint8(2), []byte(`{"apiVersion":"admission.k8s.io/v1"`))
	// The chains: the pod create of hack/manifests' pods webhook, and a
	// kubelet's node update through both validators.
	f.Add(uint8(4), reviewBody(f, podCreate(f, "u", webPod())))
	f.Add(uint8(5), []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"UPDATE","kind":{"version":"v1","kind":"Node"},"resource":{"version":"v1","resource":"nodes"},"name":"n","userInfo":{"username":"system:node:n","groups":["system:nodes"]},"object":{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}},"oldObject":{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}},"options":{"apiVersion":"meta.k8s.io/v1","kind":"UpdateOptions"}}}`))

	fx := newFixture(f, []runtime.Object{namespace("prod")}, envPreset("p", "X", "1"))
	h := fx.host.Handler()
	paths := []string{"/mutate/PodPreset", "/validate/NodeRestriction", "/mutate/LocationMutator", "/validate/LocationMutator",
		"/mutate/podpreset/locationmutator", "/validate/locationmutator/noderestriction"}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		rec := post(t, h, paths[int(which)%len(paths)], body)
		out, _ := io.ReadAll(rec.Body)
		var review admissionv1.AdmissionReview
		// Case-sensitive, as Kubernetes decodes JSON.
		parsed := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &review) == nil && review.APIVersion == "admission.k8s.io/v1" && review.Kind == "AdmissionReview" && review.Request != nil
		switch rec.Code {
		case http.StatusBadRequest:
			var status metav1.Status
			if err := json.Unmarshal(out, &status); err != nil || status.Message == "" || status.Code != 400 {
				t.Fatalf("400 without a Status message: %s", out)
			}
			if parsed && review.Request.UID != "" && validOperation(review.Request.Operation) {
				t.Fatalf("a judgeable review got 400: %s", out)
			}
		case http.StatusOK:
			if !parsed {
				t.Fatalf("200 for a body that is no AdmissionReview v1 with a request: %q", body)
			}
			checkResponse(t, review.Request, out)
		default:
			t.Fatalf("status %d: %s", rec.Code, out)
		}
	})
}

func validOperation(op admissionv1.Operation) bool {
	switch op {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		return true
	}
	return false
}

func checkResponse(t *testing.T, req *admissionv1.AdmissionRequest, out []byte) {
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &got); err != nil || got.Response == nil {
		t.Fatalf("200 without an AdmissionReview response: %s", out)
	}
	resp := got.Response
	if resp.UID != req.UID {
		t.Fatalf("response uid %q for request uid %q", resp.UID, req.UID)
	}
	if !resp.Allowed {
		if resp.Result == nil || resp.Result.Code < 400 || resp.Result.Message == "" {
			t.Fatalf("refusal without a code and message: %s", out)
		}
		resource := schema.GroupVersionResource(req.Resource).GroupResource().String()
		if strings.Contains(resp.Result.Message, "cannot decode") && !strings.Contains(resp.Result.Message, resource) {
			t.Fatalf("decoding refusal does not name the resource %q: %s", resource, resp.Result.Message)
		}
		if len(resp.Patch) > 0 {
			t.Fatalf("refusal with a patch: %s", out)
		}
		return
	}
	if len(resp.Patch) == 0 {
		return
	}
	p, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("patch does not decode: %s", resp.Patch)
	}
	if _, err := p.Apply(canonical(t, req)); err != nil {
		t.Fatalf("patch %s does not apply to the object: %v", resp.Patch, err)
	}
}

// canonical is the object of req as kube-apiserver encodes it: decoded
// with the scheme (custom resources unstructured) and encoded again. The
// patch of a response applies to that.
func canonical(t *testing.T, req *admissionv1.AdmissionRequest) []byte {
	scheme := webhook.NewScheme()
	serializer := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{})
	gvk := schema.GroupVersionKind(req.Kind)
	into, err := scheme.New(gvk)
	if err != nil {
		into = &unstructured.Unstructured{}
	}
	obj, _, err := serializer.Decode(req.Object.Raw, &gvk, into)
	if err != nil {
		t.Fatalf("a patched object does not decode: %v", err)
	}
	var buf bytes.Buffer
	if err := serializer.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
