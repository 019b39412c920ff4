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
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsfake "github.com/admitkit/admitkit/generated/clientset/versioned/fake"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/webhook"
	settingsadmission "github.com/admitkit/admitkit/registry/settings/admission"
)

// addPresets creates every preset as the webhook server admits a create
// of one (SettingsDefaults, then SettingsValidation: the registry's own
// defaults and strategy) and adds what it would store to the fake.
func (a *Admitter) addPresets(ctx context.Context, in Inputs, settings *settingsfake.Clientset) error {
	var objects []runtime.Object
	for _, p := range in.Presets {
		p := p.DeepCopy()
		p.SetGroupVersionKind(settingsv1alpha1.SchemeGroupVersion.WithKind("PodPreset"))
		if p.Namespace == "" {
			p.Namespace = metav1.NamespaceDefault
		}
		objects = append(objects, p)
	}
	for _, p := range in.ClusterPresets {
		p := p.DeepCopy()
		p.SetGroupVersionKind(settingsv1alpha1.SchemeGroupVersion.WithKind("ClusterPodPreset"))
		objects = append(objects, p)
	}
	for _, obj := range objects {
		stored, err := a.checkPreset(ctx, obj)
		if err != nil {
			return err
		}
		if err := settings.Tracker().Add(stored); err != nil {
			return &InputError{Object: describe(obj), Err: err}
		}
	}
	return nil
}

func (a *Admitter) checkPreset(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, &InputError{Object: describe(obj), Err: err}
	}
	r, err := a.review(ctx, &unstructured.Unstructured{Object: u}, nil, []string{settingsadmission.DefaultsPluginName}, []string{settingsadmission.ValidationPluginName})
	if err != nil {
		return nil, &InputError{Object: describe(obj), Err: err}
	}
	if r.Refusal != nil {
		return nil, &InputError{Object: describe(obj), Err: fmt.Errorf("refused as the server would refuse it: %s", r.Refusal.Message)}
	}
	stored, err := a.scheme.New(obj.GetObjectKind().GroupVersionKind())
	if err == nil {
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(r.Object.Object, stored)
	}
	if err != nil {
		return nil, &InputError{Object: describe(obj), Err: err}
	}
	return stored, nil
}

// checkMutators asks the LocationMutator about a create of each mutator,
// now that it enforces them: it refuses one it cannot decode, with the
// field at fault, and one whose schema conflicts with another it enforces.
func (a *Admitter) checkMutators(ctx context.Context, mutators []*unstructured.Unstructured) error {
	for _, m := range mutators {
		gvk := m.GroupVersionKind()
		resource, _ := mutatorResource(a.mutatorResources, gvk)
		raw, err := json.Marshal(m.Object)
		if err != nil {
			return &InputError{Object: describe(m), Err: err}
		}
		resp, err := a.host.Review(ctx, webhook.Validate, &admissionv1.AdmissionRequest{
			UID:       newUID(),
			Kind:      metav1.GroupVersionKind(gvk),
			Resource:  metav1.GroupVersionResource(resource),
			Name:      m.GetName(),
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		}, locationmutator.PluginName)
		if err != nil {
			return &InputError{Object: describe(m), Err: err}
		}
		if !resp.Allowed {
			return &InputError{Object: describe(m), Err: fmt.Errorf("refused as the server would refuse it: %s", resp.Result.Message)}
		}
	}
	return nil
}

// describe names an input by its kind, namespace and name.
func describe(obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if m, ok := obj.(metav1.Object); ok {
		if m.GetNamespace() != "" {
			return fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
		}
		return fmt.Sprintf("%s %s", kind, m.GetName())
	}
	return kind
}

// resourceOf is the resource kubectl's REST mapping gives a kind: its
// lower-cased plural.
func resourceOf(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	resource, _ := meta.UnsafeGuessKindToResource(gvk)
	return resource
}
