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

package admission

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericadmission "k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/v1alpha1"
	clusterpodpresetstorage "github.com/admitkit/admitkit/registry/settings/clusterpodpreset/storage"
	"github.com/admitkit/admitkit/registry/settings/internal/registrytest"
	podpresetstorage "github.com/admitkit/admitkit/registry/settings/podpreset/storage"
)

const namespace = "default"

// store is the in-process registry of one resource, the oracle: what
// kube-apiserver answers when it serves settings.k8s.io itself.
type store interface {
	rest.Creater
	rest.Updater
}

// registry decodes a request body as kube-apiserver's handler does
// (v1alpha1 JSON, defaulted, converted to the internal type) and creates or
// updates it in real etcd storage.
type registry struct {
	stores  map[schema.GroupResource]store
	decoder runtime.Decoder
}

func newRegistry(t *testing.T) registry {
	getter := registrytest.NewRESTOptionsGetter(t)
	pp, err := podpresetstorage.NewREST(registrytest.Scheme, getter, nil)
	if err != nil {
		t.Fatal(err)
	}
	cpp, err := clusterpodpresetstorage.NewREST(registrytest.Scheme, getter, nil)
	if err != nil {
		t.Fatal(err)
	}
	return registry{
		stores: map[schema.GroupResource]store{
			settings.Resource("podpresets"):        pp,
			settings.Resource("clusterpodpresets"): cpp,
		},
		decoder: serializer.NewCodecFactory(registrytest.Scheme).UniversalDecoder(settings.SchemeGroupVersion),
	}
}

// write sends body to the registry, as a create when old is empty, and
// returns the stored object, the error and the warnings.
func (r registry) write(t *testing.T, gr schema.GroupResource, body, old string) (runtime.Object, []string, error) {
	t.Helper()
	ctx, warnings := withWarnings(genericapirequest.WithNamespace(context.Background(), namespaceOf(gr)))
	s := r.stores[gr]
	if old != "" {
		if _, err := s.Create(ctx, r.decode(t, old), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating the old object: %v", err)
		}
		obj := r.decode(t, body)
		name := obj.(metav1.Object).GetName()
		out, _, err := s.Update(ctx, name, rest.DefaultUpdatedObjectInfo(obj), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		return out, warnings.texts, err
	}
	out, err := s.Create(ctx, r.decode(t, body), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	return out, warnings.texts, err
}

func (r registry) decode(t *testing.T, body string) runtime.Object {
	t.Helper()
	obj, _, err := r.decoder.Decode([]byte(body), nil, nil)
	if err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return obj
}

func namespaceOf(gr schema.GroupResource) string {
	if gr.Resource == "podpresets" {
		return namespace
	}
	return ""
}

type recorder struct{ texts []string }

func (r *recorder) AddWarning(_, text string) { r.texts = append(r.texts, text) }

func withWarnings(ctx context.Context) (context.Context, *recorder) {
	r := &recorder{}
	return warning.WithWarningRecorder(ctx, r), r
}

// webhook runs body through both plugins as the webhook host does for a
// CRD: the object decoded into the v1alpha1 type (typed) or, when the host's
// scheme lacks it, into an Unstructured, and not defaulted.
func webhook(t *testing.T, gr schema.GroupResource, body, old string, typed bool) (runtime.Object, []string, error) {
	t.Helper()
	k := kinds[gr]
	obj, oldObj := decodeAs(t, k, body, typed), decodeAs(t, k, old, typed)
	op := genericadmission.Create
	if oldObj != nil {
		op = genericadmission.Update
		// A custom resource is updated only at a resourceVersion, which the
		// client read, so both objects carry the stored one.
		obj.(metav1.Object).SetResourceVersion("7")
		oldObj.(metav1.Object).SetResourceVersion("7")
		// The stored object was defaulted when it was written.
		if err := NewDefaults().Admit(context.Background(), attributes(gr, oldObj, nil, genericadmission.Create), nil); err != nil {
			t.Fatalf("defaulting the old object: %v", err)
		}
	}
	ctx, warnings := withWarnings(context.Background())
	a := attributes(gr, obj, oldObj, op)
	if err := NewDefaults().Admit(ctx, a, nil); err != nil {
		return nil, warnings.texts, err
	}
	if err := NewValidation(nil).Validate(ctx, a, nil); err != nil {
		return nil, warnings.texts, err
	}
	internal, err := k.internal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return internal, warnings.texts, nil
}

func decodeAs(t *testing.T, k kind, body string, typed bool) runtime.Object {
	t.Helper()
	if body == "" {
		return nil
	}
	var obj runtime.Object = &unstructured.Unstructured{}
	if typed {
		obj = k.newVersion()
	}
	if err := json.Unmarshal([]byte(body), obj); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return obj
}

func attributes(gr schema.GroupResource, obj, old runtime.Object, op genericadmission.Operation) genericadmission.Attributes {
	name := obj.(metav1.Object).GetName()
	gvk := v1alpha1.SchemeGroupVersion.WithKind(kinds[gr].groupKind.Kind)
	return genericadmission.NewAttributesRecord(obj, old, gvk, namespaceOf(gr), name,
		v1alpha1.SchemeGroupVersion.WithResource(gr.Resource), "", op, nil, false, nil)
}

// Every case goes through the in-process registry and through the plugins,
// with the object typed and unstructured: the same refusal (status, reason,
// message, causes), the same warnings, and for what is admitted, the same
// defaulted object.
func TestSameAsRegistry(t *testing.T) {
	pp, cpp := settings.Resource("podpresets"), settings.Resource("clusterpodpresets")
	const valid = `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"p","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"web"}},"env":[{"name":"A","value":"1"}],"conflictPolicy":"PodWins","containers":{"names":["app"]},"volumes":[{"name":"cache","emptyDir":{}},{"name":"s","secret":{"secretName":"s"}},{"name":"c","configMap":{"name":"c","items":[{"key":"k","path":"p"}]}}],"volumeMounts":[{"name":"cache","mountPath":"/cache"}]}}`
	cases := []struct {
		name     string
		resource schema.GroupResource
		body     string
		old      string
	}{
		{"valid, defaulted", pp, valid, ""},
		{"no payload", pp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"p","namespace":"default"},"spec":{}}`, ""},
		{"bad name", pp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"Bad_Name","namespace":"default"},"spec":{"env":[{"name":"A"}]}}`, ""},
		{"bad selector", pp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"p","namespace":"default"},"spec":{"selector":{"matchLabels":{"a b":"c"}},"env":[{"name":"A"}]}}`, ""},
		{"mount of a missing volume", pp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"p","namespace":"default"},"spec":{"volumeMounts":[{"name":"nope","mountPath":"/x"},{"name":"","mountPath":"/x"}]}}`, ""},
		{"two volume sources", pp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"p","namespace":"default"},"spec":{"volumes":[{"name":"v","emptyDir":{},"hostPath":{"path":"/x"}},{"name":"w"}]}}`, ""},
		{"bad env sources", pp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"p","namespace":"default"},"spec":{"env":[{"name":"1=x","valueFrom":{}}],"envFrom":[{"prefix":"=","configMapRef":{"name":"c"},"secretRef":{"name":"s"}}]}}`, ""},
		{"bad targeting", pp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"p","namespace":"default"},"spec":{"env":[{"name":"A"}],"containers":{"exclude":true},"conflictPolicy":"Sometimes","mode":"Loud"}}`, ""},
		{"update keeps fields", pp, valid, valid},
		{"update drops conflictPolicy and containers", pp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"p","namespace":"default"},"spec":{"env":[{"name":"A","value":"2"}]}}`, valid},
		{"update to invalid", pp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"p","namespace":"default"},"spec":{"volumeMounts":[{"name":"gone","mountPath":"/x"}]}}`, valid},
		{"cluster preset, valid", cpp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"ClusterPodPreset","metadata":{"name":"c"},"spec":{"namespaceSelector":{"matchLabels":{"team":"a"}},"volumes":[{"name":"v","hostPath":{"path":"/x"}}],"mode":"Warn"}}`, ""},
		{"cluster preset, bad namespace selector", cpp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"ClusterPodPreset","metadata":{"name":"c"},"spec":{"namespaceSelector":{"matchExpressions":[{"key":"a","operator":"Within"}]},"env":[{"name":"A"}]}}`, ""},
		{"cluster preset, update drops mode", cpp, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"ClusterPodPreset","metadata":{"name":"c"},"spec":{"env":[{"name":"A"}]}}`, `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"ClusterPodPreset","metadata":{"name":"c"},"spec":{"env":[{"name":"A"}],"mode":"Audit"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantObj, wantWarnings, wantErr := newRegistry(t).write(t, c.resource, c.body, c.old)
			for _, typed := range []bool{true, false} {
				obj, warnings, err := webhook(t, c.resource, c.body, c.old, typed)
				if diff := cmp.Diff(status(wantErr), status(err)); diff != "" {
					t.Errorf("typed=%v: error differs from the registry's (-registry +webhook):\n%s", typed, diff)
				}
				if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
					t.Errorf("typed=%v: warnings differ (-registry +webhook):\n%s", typed, diff)
				}
				if wantErr == nil && err == nil && !apiequality.Semantic.DeepEqual(spec(wantObj), spec(obj)) {
					t.Errorf("typed=%v: spec differs from the registry's (-registry +webhook):\n%s", typed, cmp.Diff(spec(wantObj), spec(obj)))
				}
			}
		})
	}
}

func status(err error) *metav1.Status {
	if err == nil {
		return nil
	}
	s, ok := err.(apierrors.APIStatus)
	if !ok {
		return &metav1.Status{Message: "not an API status: " + err.Error()}
	}
	st := s.Status()
	return &st
}

// spec is what defaulting decides; metadata (uid, timestamps, generation)
// is the storage's.
func spec(obj runtime.Object) any {
	switch o := obj.(type) {
	case *settings.PodPreset:
		return o.Spec
	case *settings.ClusterPodPreset:
		return o.Spec
	}
	return obj
}

// The plugins leave alone what they do not act on, and refuse an object
// they cannot read with 400 naming the kind, never a panic.
func TestScope(t *testing.T) {
	pods := genericadmission.NewAttributesRecord(&unstructured.Unstructured{Object: map[string]any{"spec": "x"}}, nil,
		schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, namespace, "p", schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "", genericadmission.Create, nil, false, nil)
	status := genericadmission.NewAttributesRecord(&v1alpha1.PodPreset{}, &v1alpha1.PodPreset{},
		v1alpha1.SchemeGroupVersion.WithKind("PodPreset"), namespace, "p", v1alpha1.SchemeGroupVersion.WithResource("podpresets"), "status", genericadmission.Update, nil, false, nil)
	for _, a := range []genericadmission.Attributes{pods, status} {
		if err := NewDefaults().Admit(context.Background(), a, nil); err != nil {
			t.Errorf("Admit %s/%s: %v", a.GetResource().Resource, a.GetSubresource(), err)
		}
		if err := NewValidation(nil).Validate(context.Background(), a, nil); err != nil {
			t.Errorf("Validate %s/%s: %v", a.GetResource().Resource, a.GetSubresource(), err)
		}
	}
	bad := attributes(settings.Resource("podpresets"), &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "p"}, "spec": map[string]any{"env": "not a list"}}}, nil, genericadmission.Create)
	for name, err := range map[string]error{
		"Admit":    NewDefaults().Admit(context.Background(), bad, nil),
		"Validate": NewValidation(nil).Validate(context.Background(), bad, nil),
	} {
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `PodPreset.settings.k8s.io "p"`) {
			t.Errorf("%s of an unreadable preset: %v, want 400 naming it", name, err)
		}
	}
}

// kube-apiserver calls a mutating webhook again when a later one changed the
// object: defaulting what is defaulted changes nothing.
func TestDefaultsTwice(t *testing.T) {
	obj := &v1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: namespace}}
	obj.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
	a := attributes(settings.Resource("podpresets"), obj, nil, genericadmission.Create)
	if err := NewDefaults().Admit(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	once := obj.DeepCopy()
	if once.Spec.Volumes[0].Secret.DefaultMode == nil {
		t.Fatal("secret volume's defaultMode not defaulted")
	}
	if err := NewDefaults().Admit(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(once, obj); diff != "" {
		t.Errorf("second defaulting changed the preset:\n%s", diff)
	}
}
