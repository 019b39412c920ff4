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
	"bytes"
	"context"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/warning"
)

// review runs the chain's plugins on the request and builds the response,
// and returns how long each plugin reached took (see observeChain). The
// reviews of one request run one at a time, in the request's state.
func (h *Host) review(ctx context.Context, phase Phase, c *chain, req *admissionv1.AdmissionRequest, start time.Time) (*admissionv1.AdmissionResponse, []time.Duration) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	took := make([]time.Duration, 0, len(c.plugins))
	lapStart := start
	lap := func() {
		now := time.Now()
		took = append(took, now.Sub(lapStart))
		lapStart = now
	}
	operation := admission.Operation(req.Operation)
	var (
		attrs  *attributes
		state  *requestState
		before []byte
	)
	warnings := &warningRecorder{}
	var err error
	for _, p := range c.plugins {
		if !p.plugin.Handles(operation) {
			lap()
			continue
		}
		// The request is decoded for the first plugin that handles it, so
		// that a chain none of whose plugins handles the operation decodes
		// nothing; the plugins after it get the same attributes, as
		// kube-apiserver hands its chain's plugins one.
		if attrs == nil {
			if attrs, state, before, err = h.begin(ctx, phase, c, req); err != nil {
				lap()
				return refuse(resp, err), took
			}
			defer state.mu.Unlock()
			ctx = warning.WithWarningRecorder(ctx, warnings)
		}
		if phase == Mutate {
			err = p.mutator.Admit(ctx, attrs, h.objectInterfaces)
		} else {
			err = p.validator.Validate(ctx, attrs, h.objectInterfaces)
		}
		lap()
		if err != nil {
			break
		}
	}
	if attrs == nil {
		return resp, took
	}
	if err == nil && before != nil {
		err = h.patch(attrs, state, before, resp)
	}
	// What closes the review (encoding, the patch) is the last plugin's.
	took[len(took)-1] += time.Since(lapStart)
	resp.Warnings = warnings.warnings
	resp.AuditAnnotations = attrs.auditAnnotations()
	if err != nil {
		resp.Patch, resp.PatchType = nil, nil
		return refuse(resp, err), took
	}
	return resp, took
}

// begin decodes the request into the attributes the chain's plugins share,
// with the request's reinvocation context, returns the request's state
// locked, and, for a mutating review of an object, the encoding the patch
// is taken against.
func (h *Host) begin(ctx context.Context, phase Phase, c *chain, req *admissionv1.AdmissionRequest) (*attributes, *requestState, []byte, error) {
	attrs, err := h.newAttributes(req)
	if err != nil {
		return nil, nil, nil, err
	}
	state, recognized := h.reinvocations.state(c.key, requestOf(ctx), req, phase == Mutate)
	state.mu.Lock()
	attrs.reinvocation = state.begin(req, phase == Mutate, recognized)
	var before []byte
	if obj := attrs.GetObject(); phase == Mutate && obj != nil {
		if before, err = h.encode(attrs, obj); err != nil {
			state.mu.Unlock()
			return nil, nil, nil, err
		}
	}
	return attrs, state, before, nil
}

// patch puts the JSONPatch from before to the object the plugins changed
// into resp, and notes what it wrote in the request's state.
func (h *Host) patch(attrs *attributes, state *requestState, before []byte, resp *admissionv1.AdmissionResponse) error {
	after, err := h.encode(attrs, attrs.GetObject())
	if err != nil {
		return err
	}
	if bytes.Equal(before, after) {
		return nil
	}
	ops, err := diffJSON(before, after)
	if err == nil && len(ops) > 0 {
		resp.Patch, err = marshalPatch(ops)
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("computing the patch of %s: %w", attrs.GetResource().GroupResource(), err))
	}
	if len(ops) > 0 {
		state.wrote(ops)
		patchType := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &patchType
	}
	return nil
}

// encode writes obj as kube-apiserver encodes the object it sent, with the
// request's kind even where a plugin cleared it.
func (h *Host) encode(attrs *attributes, obj runtime.Object) ([]byte, error) {
	obj.GetObjectKind().SetGroupVersionKind(attrs.GetKind())
	var buf bytes.Buffer
	if err := h.serializer.Encode(obj, &buf); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("encoding the %s object: %w", attrs.GetResource().GroupResource(), err))
	}
	return buf.Bytes(), nil
}

// refuse turns the plugin's error into the status kube-apiserver itself
// would answer for it: an apierrors.APIStatus as it is (code, reason,
// message, details with their causes), any other error as a 500 with its
// message.
func refuse(resp *admissionv1.AdmissionResponse, err error) *admissionv1.AdmissionResponse {
	resp.Allowed = false
	resp.Result = responsewriters.ErrorToAPIStatus(err)
	return resp
}

// warningRecorder collects the warnings a plugin adds, each text once, in
// the order added, as kube-apiserver's own recorder keeps them.
type warningRecorder struct {
	warnings []string
}

func (r *warningRecorder) AddWarning(_, text string) {
	if text == "" {
		return
	}
	for _, w := range r.warnings {
		if w == text {
			return
		}
	}
	r.warnings = append(r.warnings, text)
}
