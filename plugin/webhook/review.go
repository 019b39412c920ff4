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

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/warning"
)

// review runs the plugin on the request and builds the response. The
// reviews of one request run one at a time, in the request's state.
func (h *Host) review(ctx context.Context, phase Phase, p *servedPlugin, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	operation := admission.Operation(req.Operation)
	if !p.plugin.Handles(operation) {
		return resp
	}
	attrs, err := h.newAttributes(req)
	if err != nil {
		return refuse(resp, err)
	}
	state, recognized := h.reinvocations.state(p.name, req, phase == Mutate)
	state.mu.Lock()
	defer state.mu.Unlock()
	attrs.reinvocation = state.begin(req, phase == Mutate, recognized)

	warnings := &warningRecorder{}
	ctx = warning.WithWarningRecorder(ctx, warnings)
	if phase == Mutate {
		err = h.admit(ctx, p.mutator, attrs, state, resp)
	} else {
		err = p.validator.Validate(ctx, attrs, h.objectInterfaces)
	}
	resp.Warnings = warnings.warnings
	resp.AuditAnnotations = attrs.auditAnnotations()
	if err != nil {
		resp.Patch, resp.PatchType = nil, nil
		return refuse(resp, err)
	}
	return resp
}

// admit runs a mutating plugin and puts the JSONPatch of what it changed
// into resp, and notes what it wrote in the request's state.
func (h *Host) admit(ctx context.Context, plugin admission.MutationInterface, attrs *attributes, state *requestState, resp *admissionv1.AdmissionResponse) error {
	obj := attrs.GetObject()
	if obj == nil {
		return plugin.Admit(ctx, attrs, h.objectInterfaces)
	}
	before, err := h.encode(attrs, obj)
	if err != nil {
		return err
	}
	if err := plugin.Admit(ctx, attrs, h.objectInterfaces); err != nil {
		return err
	}
	after, err := h.encode(attrs, obj)
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
