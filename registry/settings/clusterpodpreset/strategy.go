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

// Package clusterpodpreset holds the REST strategy of settings.k8s.io
// ClusterPodPresets: how the registry prepares, validates and selects them.
package clusterpodpreset

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/validation"
)

// Strategy is the create, update and delete strategy of ClusterPodPresets.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	podFields validation.PodFieldsValidator
}

// NewStrategy returns the strategy for a server whose scheme is typer,
// checking the fields presets put into pods with podFields.
func NewStrategy(typer runtime.ObjectTyper, podFields validation.PodFieldsValidator) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, podFields: podFields}
}

// NamespaceScoped is false: a ClusterPodPreset selects its namespaces.
func (Strategy) NamespaceScoped() bool { return false }

// PrepareForCreate starts the preset's generation at 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*settings.ClusterPodPreset).Generation = 1
}

// PrepareForUpdate keeps the new spec and counts every spec change in the
// generation.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	cpp, oldCPP := obj.(*settings.ClusterPodPreset), old.(*settings.ClusterPodPreset)
	cpp.Generation = oldCPP.Generation
	if !apiequality.Semantic.DeepEqual(cpp.Spec, oldCPP.Spec) {
		cpp.Generation++
	}
}

// Validate checks a new cluster preset.
func (s Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateClusterPodPreset(obj.(*settings.ClusterPodPreset), s.podFields)
}

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// Canonicalize does nothing: a preset has one form.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: a PUT to a missing preset fails.
func (Strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is true: an update need not name a resourceVersion.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// ValidateUpdate checks an updated cluster preset.
func (s Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClusterPodPresetUpdate(obj.(*settings.ClusterPodPreset), old.(*settings.ClusterPodPreset), s.podFields)
}

// WarningsOnUpdate warns when the update drops the preset's container
// selection or conflict policy, as an older client would.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	return validation.WarningsOnSpecUpdate(&obj.(*settings.ClusterPodPreset).Spec.PodPresetSpec, &old.(*settings.ClusterPodPreset).Spec.PodPresetSpec, field.NewPath("spec"))
}

// GetAttrs returns a cluster preset's labels and the field it can be
// selected by: metadata.name.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	cpp, ok := obj.(*settings.ClusterPodPreset)
	if !ok {
		return nil, nil, fmt.Errorf("not a ClusterPodPreset: %T", obj)
	}
	return cpp.Labels, generic.ObjectMetaFieldsSet(&cpp.ObjectMeta, false), nil
}

// Matcher selects cluster presets by label and field.
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
