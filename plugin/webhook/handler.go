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

package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"
)

// maxReviewBytes bounds a review's body: kube-apiserver's own limit on a
// request body is 3 MiB, and a review carries the object twice (object and
// oldObject) with some room for the rest.
const maxReviewBytes = 8 << 20

// Handler serves the plugins' webhook paths, /healthz, /readyz and
// /metrics. A webhook path names one plugin or a chain of them, one path
// segment each (/mutate/podpreset/locationmutator): kube-apiserver takes a
// service path whose every segment is a lower-case DNS-1123 subdomain, so
// a segment per plugin is the one way a webhook configuration can name
// several.
func (h *Host) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mutate/{plugins...}", func(w http.ResponseWriter, r *http.Request) { h.serveReview(w, r, Mutate) })
	mux.HandleFunc("POST /validate/{plugins...}", func(w http.ResponseWriter, r *http.Request) { h.serveReview(w, r, Validate) })
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := h.Ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	mux.Handle("GET /metrics", legacyregistry.Handler())
	return mux
}

// serveReview answers one AdmissionReview. A body that is not an
// AdmissionReview v1 with a request gets 400, a path naming a plugin not
// served in the phase, or one plugin twice, 404, each with a metav1.Status
// saying why; everything the plugin
// decides, refusals included, is a 200 with the review's response.
func (h *Host) serveReview(w http.ResponseWriter, r *http.Request, phase Phase) {
	req, err := readReview(w, r)
	if err != nil {
		malformedReviews.Inc()
		klog.V(2).InfoS("Malformed admission review", "path", r.URL.Path, "err", err)
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	resp, err := h.Review(r.Context(), phase, req, strings.Split(r.PathValue("plugins"), "/")...)
	switch {
	case errors.Is(err, ErrNotServed):
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, err.Error())
		return
	case err != nil:
		malformedReviews.Inc()
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: resp,
	}
	writeJSON(w, http.StatusOK, &out)
}

// readReview reads the request of an AdmissionReview v1 body.
func readReview(w http.ResponseWriter, r *http.Request) (*admissionv1.AdmissionRequest, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the AdmissionReview: %w", err)
	}
	var review admissionv1.AdmissionReview
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &review); err != nil {
		return nil, fmt.Errorf("the body is not an AdmissionReview: %w", err)
	}
	if gv := admissionv1.SchemeGroupVersion.String(); review.APIVersion != gv || review.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("the body is a %q %q, not an AdmissionReview of %s (set admissionReviewVersions to [v1])", review.APIVersion, review.Kind, gv)
	}
	if review.Request == nil {
		return nil, errors.New("the AdmissionReview has no request")
	}
	return review.Request, nil
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	writeJSON(w, code, &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message,
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}
