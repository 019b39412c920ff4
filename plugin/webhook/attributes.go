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
	"fmt"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/klog/v2"
)

// attributes are the admission.Attributes of one review: the request's
// fields as kube-apiserver would hand them to the plugin in-process, the
// request's reinvocation context, and the audit annotations the plugin adds,
// which the response carries back.
type attributes struct {
	admission.Attributes
	reinvocation admission.ReinvocationContext

	mu          sync.Mutex
	annotations map[string]string
}

var _ admission.Attributes = &attributes{}

// AddAnnotation records an audit annotation at the Metadata level.
func (a *attributes) AddAnnotation(key, value string) error {
	return a.AddAnnotationWithLevel(key, value, auditinternal.LevelMetadata)
}

// AddAnnotationWithLevel keeps kube-apiserver's rules (a qualified key, no
// level below Metadata, no overwrite with another value) by asking the
// wrapped record first. A webhook response has no levels:
// kube-apiserver adds what it carries at the Metadata level.
func (a *attributes) AddAnnotationWithLevel(key, value string, level auditinternal.Level) error {
	if err := a.Attributes.AddAnnotationWithLevel(key, value, level); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.annotations == nil {
		a.annotations = map[string]string{}
	}
	a.annotations[key] = value
	return nil
}

// GetReinvocationContext returns the context shared by every review of the
// same request.
func (a *attributes) GetReinvocationContext() admission.ReinvocationContext {
	return a.reinvocation
}

// auditAnnotations are the plugin's audit annotations as a webhook
// response carries them: by the name after the key's "/". kube-apiserver
// records each as "<webhook name>/<name>" and drops a key with a second
// "/", so the plugin's own key ("<plugin domain>/<name>") cannot be sent
// as it is; a webhook named after the plugin's domain
// (locationmutator.admission.admitkit.io, podpreset.admission.admitkit.io)
// gets exactly the keys the plugin records in-process, and the webhook of a
// chain (pods.admission.admitkit.io) its plugins' names under its own.
// Should two keys of one review share a name (two plugins of a chain
// naming theirs alike), the first in key order is kept.
func (a *attributes) auditAnnotations() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.annotations) == 0 {
		return nil
	}
	out := make(map[string]string, len(a.annotations))
	for _, key := range sortedKeys(a.annotations) {
		name := key[strings.LastIndex(key, "/")+1:]
		if _, taken := out[name]; taken {
			klog.V(2).InfoS("Audit annotation left out of the webhook response: another key has the same name", "key", key)
			continue
		}
		out[name] = a.annotations[key]
	}
	return out
}

// newAttributes builds the attributes of req, without their reinvocation
// context, which the caller sets. The objects are decoded into
// the scheme's versioned types, or left unstructured when the scheme does
// not know their kind (custom resources, as kube-apiserver hands them to
// plugins too). What cannot be decoded is refused with a 400 that names the
// resource.
func (h *Host) newAttributes(req *admissionv1.AdmissionRequest) (*attributes, error) {
	kind := schema.GroupVersionKind(req.Kind)
	resource := schema.GroupVersionResource(req.Resource)
	obj, err := h.decodeObject(req.Object, kind)
	if err != nil {
		return nil, undecodable("object", resource, req.SubResource, err)
	}
	old, err := h.decodeObject(req.OldObject, kind)
	if err != nil {
		return nil, undecodable("oldObject", resource, req.SubResource, err)
	}
	options, err := h.decodeOptions(req)
	if err != nil {
		return nil, undecodable("options", resource, req.SubResource, err)
	}
	dryRun := req.DryRun != nil && *req.DryRun
	record := admission.NewAttributesRecord(obj, old, kind, req.Namespace, req.Name, resource, req.SubResource,
		admission.Operation(req.Operation), options, dryRun, userInfo(req))
	return &attributes{Attributes: record}, nil
}

// decodeObject decodes raw, whose kind defaults to kind. An empty raw is no
// object (the object of a DELETE, the old object of a CREATE).
func (h *Host) decodeObject(raw runtime.RawExtension, kind schema.GroupVersionKind) (runtime.Object, error) {
	if len(raw.Raw) == 0 {
		return nil, nil
	}
	into, err := h.scheme.New(kind)
	if runtime.IsNotRegisteredError(err) {
		into = &unstructured.Unstructured{}
	} else if err != nil {
		return nil, err
	}
	obj, actual, err := h.serializer.Decode(raw.Raw, &kind, into)
	if err != nil {
		return nil, err
	}
	if *actual != kind {
		return nil, fmt.Errorf("it is a %v where the request's kind is %v", actual, kind)
	}
	return obj, nil
}

// decodeOptions decodes the operation's options into the type kube-apiserver
// gives plugins: CreateOptions, UpdateOptions or DeleteOptions, or for a
// CONNECT the connect options of the subresource (PodExecOptions, ...) the
// scheme knows by their kind.
func (h *Host) decodeOptions(req *admissionv1.AdmissionRequest) (runtime.Object, error) {
	if len(req.Options.Raw) == 0 {
		return nil, nil
	}
	var into runtime.Object
	switch req.Operation {
	case admissionv1.Create:
		into = &metav1.CreateOptions{}
	case admissionv1.Update:
		into = &metav1.UpdateOptions{}
	case admissionv1.Delete:
		into = &metav1.DeleteOptions{}
	default:
		obj, _, err := h.serializer.Decode(req.Options.Raw, nil, nil)
		return obj, err
	}
	// The meta.k8s.io options are plain structs; the scheme registers them
	// under every group version, not under meta.k8s.io/v1, which they name.
	if err := json.Unmarshal(req.Options.Raw, into); err != nil {
		return nil, err
	}
	return into, nil
}

func undecodable(field string, resource schema.GroupVersionResource, subresource string, err error) error {
	name := resource.GroupResource().String()
	if subresource != "" {
		name += "/" + subresource
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the admission webhook cannot decode the %s of this %s request: %v", field, name, err))
}

// userInfo is the requester as kube-apiserver authenticated it, extra
// included (a kubelet's service account token carries its node's name there).
func userInfo(req *admissionv1.AdmissionRequest) user.Info {
	u := &user.DefaultInfo{
		Name:   req.UserInfo.Username,
		UID:    req.UserInfo.UID,
		Groups: req.UserInfo.Groups,
	}
	if len(req.UserInfo.Extra) > 0 {
		u.Extra = make(map[string][]string, len(req.UserInfo.Extra))
		for k, v := range req.UserInfo.Extra {
			u.Extra[k] = v
		}
	}
	return u
}
