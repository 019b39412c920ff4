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
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericadmission "k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/install"
	"github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/apis/settings/validation"
	"github.com/admitkit/admitkit/registry/settings/clusterpodpreset"
	"github.com/admitkit/admitkit/registry/settings/podpreset"
)

// scheme converts and defaults settings.k8s.io objects whatever scheme the
// host decodes requests with: internal and v1alpha1, as the registry has them.
var scheme = runtime.NewScheme()

func init() { install.Install(scheme) }

// strategy is what the plugins call of a resource's registry strategy.
type strategy interface {
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	WarningsOnCreate(ctx context.Context, obj runtime.Object) []string
	WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string
}

// kind is one resource of settings.k8s.io the plugins act on.
type kind struct {
	groupKind   schema.GroupKind
	newInternal func() runtime.Object
	newVersion  func() runtime.Object
	strategy    func(validation.PodFieldsValidator) strategy
}

var kinds = map[schema.GroupResource]kind{
	settings.Resource("podpresets"): {
		groupKind:   settings.Kind("PodPreset"),
		newInternal: func() runtime.Object { return &settings.PodPreset{} },
		newVersion:  func() runtime.Object { return &v1alpha1.PodPreset{} },
		strategy: func(podFields validation.PodFieldsValidator) strategy {
			return podpreset.NewStrategy(scheme, podFields)
		},
	},
	settings.Resource("clusterpodpresets"): {
		groupKind:   settings.Kind("ClusterPodPreset"),
		newInternal: func() runtime.Object { return &settings.ClusterPodPreset{} },
		newVersion:  func() runtime.Object { return &v1alpha1.ClusterPodPreset{} },
		strategy: func(podFields validation.PodFieldsValidator) strategy {
			return clusterpodpreset.NewStrategy(scheme, podFields)
		},
	},
}

// kindOf returns the resource a request writes, if the plugins act on it:
// a create or update of a preset itself, not of a subresource.
func kindOf(a genericadmission.Attributes) (kind, bool) {
	if a.GetSubresource() != "" || a.GetObject() == nil {
		return kind{}, false
	}
	k, ok := kinds[a.GetResource().GroupResource()]
	return k, ok
}

// versioned returns obj as the v1alpha1 type, and whether that is obj
// itself. A host decodes a custom resource either into the type its scheme
// registers or, without it, into an Unstructured.
func (k kind) versioned(obj runtime.Object) (runtime.Object, bool, error) {
	out := k.newVersion()
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
			return nil, false, fmt.Errorf("decoding %s %q: %w", k.groupKind, o.GetName(), err)
		}
		return out, false, nil
	case nil:
		return nil, false, fmt.Errorf("no %s in the request", k.groupKind)
	}
	if reflect.TypeOf(obj) == reflect.TypeOf(out) {
		return obj, true, nil
	}
	if err := scheme.Convert(obj, out, nil); err != nil {
		return nil, false, fmt.Errorf("converting %T to %s v1alpha1: %w", obj, k.groupKind, err)
	}
	return out, false, nil
}

// internal returns obj as the internal type the strategies read.
func (k kind) internal(obj runtime.Object) (runtime.Object, error) {
	if reflect.TypeOf(obj) == reflect.TypeOf(k.newInternal()) {
		return obj, nil
	}
	v, _, err := k.versioned(obj)
	if err != nil {
		return nil, err
	}
	out := k.newInternal()
	if err := scheme.Convert(v, out, nil); err != nil {
		return nil, fmt.Errorf("converting %s to the internal version: %w", k.groupKind, err)
	}
	return out, nil
}

// writeBack puts the changed v, the versioned form of obj, into obj.
func (k kind) writeBack(v, obj runtime.Object) error {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
		if err != nil {
			return fmt.Errorf("encoding %s %q: %w", k.groupKind, u.GetName(), err)
		}
		u.Object = content
		return nil
	}
	return scheme.Convert(v, obj, nil)
}
