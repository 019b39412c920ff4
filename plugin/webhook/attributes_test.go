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
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/admitkit/admitkit/plugin/webhook"
)

// TestAttributes checks what a plugin is given for a request: the fields
// kube-apiserver would put in its attributes in-process, with versioned
// objects and the operation's options type.
func TestAttributes(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("prod")})
	pod := webPod()
	pod.Name = "web-1"
	old := pod.DeepCopy()
	old.Labels = nil
	extra := map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/node-name": {"node-a"}}
	update := &admissionv1.AdmissionRequest{
		UID: "u", Kind: podKind, Resource: podsResource, SubResource: "status", Namespace: "prod", Name: "web-1",
		Operation: admissionv1.Update, DryRun: ptrTo(true),
		UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:cni", UID: "sa-uid", Groups: []string{"system:serviceaccounts"}, Extra: extra},
		Object:   raw(t, pod), OldObject: raw(t, old),
		Options: raw(t, &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}, FieldManager: "kubectl"}),
	}
	if resp := review(t, f.host, webhook.Validate, recordingPlugin, update); !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	a := f.recorded.last()
	if got, want := []any{a.GetKind(), a.GetResource(), a.GetSubresource(), a.GetNamespace(), a.GetName(), a.GetOperation(), a.IsDryRun()},
		[]any{corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion.WithResource("pods"), "status", "prod", "web-1", admission.Update, true}; !cmp.Equal(got, want) {
		t.Errorf("attributes %v, want %v", got, want)
	}
	wantUser := &user.DefaultInfo{Name: "system:serviceaccount:kube-system:cni", UID: "sa-uid", Groups: []string{"system:serviceaccounts"},
		Extra: map[string][]string{"authentication.kubernetes.io/node-name": {"node-a"}}}
	if diff := cmp.Diff(wantUser, a.GetUserInfo()); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}
	if got, ok := a.GetObject().(*corev1.Pod); !ok || got.Labels["app"] != "web" {
		t.Errorf("object %T %v, want the versioned pod", a.GetObject(), a.GetObject())
	}
	if got, ok := a.GetOldObject().(*corev1.Pod); !ok || got.Labels != nil {
		t.Errorf("old object %T %v, want the versioned old pod", a.GetOldObject(), a.GetOldObject())
	}
	if got, ok := a.GetOperationOptions().(*metav1.UpdateOptions); !ok || got.FieldManager != "kubectl" {
		t.Errorf("options %T %v, want UpdateOptions", a.GetOperationOptions(), a.GetOperationOptions())
	}

	// A custom resource is unstructured, as kube-apiserver hands it to
	// plugins; a CONNECT's options are its subresource's.
	widget := &admissionv1.AdmissionRequest{
		UID: "w", Kind: metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		Resource:  metav1.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
		Operation: admissionv1.Delete, Name: "w",
		OldObject: runtime.RawExtension{Raw: []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3}}`)},
		Options:   raw(t, &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}}),
	}
	review(t, f.host, webhook.Validate, recordingPlugin, widget)
	a = f.recorded.last()
	if u, ok := a.GetOldObject().(*unstructured.Unstructured); !ok || u.GetName() != "w" || a.GetObject() != nil {
		t.Errorf("custom resource delete: object %v, old object %T", a.GetObject(), a.GetOldObject())
	}
	if _, ok := a.GetOperationOptions().(*metav1.DeleteOptions); !ok {
		t.Errorf("options %T, want DeleteOptions", a.GetOperationOptions())
	}
	exec := &admissionv1.AdmissionRequest{
		UID: "e", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}, Resource: podsResource, SubResource: "exec",
		Namespace: "prod", Name: "web-1", Operation: admissionv1.Connect,
		Object:  raw(t, &corev1.PodExecOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodExecOptions"}, Command: []string{"sh"}}),
		Options: raw(t, &corev1.PodExecOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodExecOptions"}, Command: []string{"sh"}}),
	}
	review(t, f.host, webhook.Validate, recordingPlugin, exec)
	a = f.recorded.last()
	if o, ok := a.GetOperationOptions().(*corev1.PodExecOptions); !ok || len(o.Command) != 1 || a.GetResource().GroupResource() != (schema.GroupResource{Resource: "pods"}) {
		t.Errorf("connect options %T %v", a.GetOperationOptions(), a.GetOperationOptions())
	}
}

// TestReady: a host is not ready before it starts.
func TestReadyBeforeStart(t *testing.T) {
	f := newFixture(t, nil)
	if f.host.Ready() != nil {
		t.Fatal("a started, synced host is not ready")
	}
	h, err := webhook.New(webhook.Options{Plugins: f.plugins, Enabled: []string{recordingPlugin}, Scheme: f.scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Ready(); err == nil {
		t.Error("a host that was never started is ready")
	}
}
