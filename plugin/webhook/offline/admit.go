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

package offline

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/admitkit/admitkit/plugin/webhook"
)

// Result is what admitting one object gave.
type Result struct {
	// Object is the object admitted, with every plugin's changes; nil when
	// refused.
	Object *unstructured.Unstructured
	// Warnings are the plugins' warnings, in the order given.
	Warnings []string
	// Refusal is the status the server answers a refused create with.
	Refusal *metav1.Status
	// AuditAnnotations are the plugins' audit annotations, by name, as
	// the webhook responses carry them.
	AuditAnnotations map[string]string
}

// Admit judges obj as a create by requester (nil: an anonymous admin), a
// request of its own: the defaults of its decoding, then every mutating
// plugin in chain order, each changing what the one before it left, the
// defaults again (kube-apiserver defaults what a webhook patched), then
// every validating plugin. An error means obj could not be judged (a
// namespace it needs was not given, or it is not an object).
func (a *Admitter) Admit(ctx context.Context, obj *unstructured.Unstructured, requester user.Info) (*Result, error) {
	if ns := obj.GetNamespace(); a.namespaces != nil && ns != "" && !a.namespaces[ns] {
		return nil, &InputError{Object: describe(obj), Err: fmt.Errorf("namespace %q is not given, and a namespaceSelector reads namespaces", ns)}
	}
	decoded, err := a.decoded(obj)
	if err != nil {
		return nil, &InputError{Object: describe(obj), Err: err}
	}
	ctx = webhook.WithRequest(ctx, string(newUID()))
	return a.review(ctx, decoded, requester, a.mutating, a.validating)
}

// decoded is obj as kube-apiserver decodes a create of it: a Secret's
// stringData merged into its data (the conversion to the internal type
// does that, so admission sees only data), a StatefulSet in its v1 form,
// and the defaults of a kind it knows.
func (a *Admitter) decoded(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out := obj
	switch obj.GroupVersionKind() {
	case corev1.SchemeGroupVersion.WithKind("Secret"):
		out = obj.DeepCopy()
		if err := mergeStringData(out); err != nil {
			return nil, err
		}
	case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
		out = obj.DeepCopy()
		if err := withClaimTemplateKinds(out); err != nil {
			return nil, err
		}
	}
	return a.withDefaults(out)
}

// withClaimTemplateKinds gives a StatefulSet's claim templates the
// apiVersion and kind that kube-apiserver's conversion to v1 writes into
// every StatefulSet it sends a webhook or stores.
func withClaimTemplateKinds(ss *unstructured.Unstructured) error {
	templates, found, err := unstructured.NestedSlice(ss.Object, "spec", "volumeClaimTemplates")
	if err != nil || !found {
		return err
	}
	for i, template := range templates {
		claim, ok := template.(map[string]any)
		if !ok {
			return fmt.Errorf("spec.volumeClaimTemplates[%d]: not an object", i)
		}
		claim["apiVersion"], claim["kind"] = "v1", "PersistentVolumeClaim"
	}
	return unstructured.SetNestedSlice(ss.Object, templates, "spec", "volumeClaimTemplates")
}

// mergeStringData moves a Secret's stringData into its data, base64
// encoded; a key in both takes stringData's value.
func mergeStringData(secret *unstructured.Unstructured) error {
	stringData, found, err := unstructured.NestedStringMap(secret.Object, "stringData")
	if err != nil || !found {
		return err
	}
	data, _, err := unstructured.NestedMap(secret.Object, "data")
	if err != nil {
		return err
	}
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range stringData {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	unstructured.RemoveNestedField(secret.Object, "stringData")
	return unstructured.SetNestedMap(secret.Object, data, "data")
}

// withDefaults gives obj the defaults kube-apiserver's decoding gives a
// kind it knows.
func (a *Admitter) withDefaults(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	typed, err := a.scheme.New(obj.GroupVersionKind())
	if a.defaulter == nil || err != nil {
		return obj, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return nil, err
	}
	a.defaulter.Default(typed)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: u}
	out.SetGroupVersionKind(obj.GroupVersionKind())
	return out, nil
}

// review runs obj as one create request through the mutating plugins, then
// the validating ones, each phase one Host.Review of its plugins in chain
// order: the review the webhook server answers on a path naming them all,
// and the one way kube-apiserver runs them in-process, where each plugin
// changes the object the one before it left.
func (a *Admitter) review(ctx context.Context, obj *unstructured.Unstructured, requester user.Info, mutating, validating []string) (*Result, error) {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	req := newCreate(obj, requester)
	result := &Result{}
	for _, phase := range []struct {
		phase   webhook.Phase
		plugins []string
	}{{webhook.Mutate, mutating}, {webhook.Validate, validating}} {
		if len(phase.plugins) == 0 {
			continue
		}
		req.Object.Raw = raw
		resp, err := a.host.Review(ctx, phase.phase, req, phase.plugins...)
		if err != nil {
			return nil, err
		}
		result.Warnings = append(result.Warnings, resp.Warnings...)
		for k, v := range resp.AuditAnnotations {
			if result.AuditAnnotations == nil {
				result.AuditAnnotations = map[string]string{}
			}
			result.AuditAnnotations[k] = v
		}
		if !resp.Allowed {
			result.Refusal = resp.Result
			return result, nil
		}
		if len(resp.Patch) > 0 {
			if raw, err = applyPatch(raw, resp.Patch); err != nil {
				return nil, fmt.Errorf("the patch of %s: %w", strings.Join(phase.plugins, ", "), err)
			}
			if raw, err = a.defaultAgain(raw); err != nil {
				return nil, fmt.Errorf("the object %s patched: %w", strings.Join(phase.plugins, ", "), err)
			}
		}
	}
	result.Object = &unstructured.Unstructured{}
	return result, result.Object.UnmarshalJSON(raw)
}

// defaultAgain gives a patched object the defaults of its kind again, as
// kube-apiserver decodes and defaults what a mutating webhook patched: a
// container whose limits a mutator set gets the same requests.
func (a *Admitter) defaultAgain(raw []byte) ([]byte, error) {
	if a.defaulter == nil {
		return raw, nil
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	defaulted, err := a.withDefaults(obj)
	if err != nil {
		return nil, err
	}
	return json.Marshal(defaulted.Object)
}

func applyPatch(doc, patch []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	return p.Apply(doc)
}

// newCreate is the request kube-apiserver sends for a create of obj.
func newCreate(obj *unstructured.Unstructured, requester user.Info) *admissionv1.AdmissionRequest {
	gvk := obj.GroupVersionKind()
	resource := resourceOf(gvk)
	req := &admissionv1.AdmissionRequest{
		UID:             newUID(),
		Kind:            metav1.GroupVersionKind(gvk),
		Resource:        metav1.GroupVersionResource(resource),
		RequestKind:     &metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		RequestResource: &metav1.GroupVersionResource{Group: resource.Group, Version: resource.Version, Resource: resource.Resource},
		Name:            obj.GetName(),
		Namespace:       obj.GetNamespace(),
		Operation:       admissionv1.Create,
		Options:         runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
	}
	if requester != nil {
		req.UserInfo = authenticationv1.UserInfo{Username: requester.GetName(), UID: requester.GetUID(), Groups: requester.GetGroups()}
		for k, v := range requester.GetExtra() {
			if req.UserInfo.Extra == nil {
				req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			}
			req.UserInfo.Extra[k] = v
		}
	}
	return req
}

func newUID() types.UID { return types.UID(uuid.NewString()) }
