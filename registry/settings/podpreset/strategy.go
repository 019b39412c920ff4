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

// Package podpreset holds the REST strategy of settings.k8s.io PodPresets:
// how the registry prepares, validates and selects them.
package podpreset

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

// Strategy is the create, update and delete strategy of PodPresets.
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

// NamespaceScoped is true: a PodPreset lives in the namespace of its pods.
func (Strategy) NamespaceScoped() bool { return true }

// PrepareForCreate starts the preset's generation at 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*settings.PodPreset).Generation = 1
}

// PrepareForUpdate keeps the new spec, which Kubernetes' removed API silently
// discarded, and counts every spec change in the generation so that a
// client can tell its change was taken.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pp, oldPP := obj.(*settings.PodPreset), old.(*settings.PodPreset)
	pp.Generation = oldPP.Generation
	if !apiequality.Semantic.DeepEqual(pp.Spec, oldPP.Spec) {
		pp.Generation++
	}
}

// Validate checks a new preset.
func (s Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidatePodPreset(obj.(*settings.PodPreset), s.podFields)
}

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// Canonicalize does nothing: a preset has one form.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: a PUT to a missing preset fails.
func (Strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is true: an update need not name a resourceVersion.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// ValidateUpdate checks an updated preset.
func (s Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodPresetUpdate(obj.(*settings.PodPreset), old.(*settings.PodPreset), s.podFields)
}

// WarningsOnUpdate warns when the update drops the preset's container
// selection or conflict policy, as an older client would.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	return validation.WarningsOnSpecUpdate(&obj.(*settings.PodPreset).Spec, &old.(*settings.PodPreset).Spec, field.NewPath("spec"))
}

// GetAttrs returns a preset's labels and the fields it can be selected by:
// metadata.name and metadata.namespace.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pp, ok := obj.(*settings.PodPreset)
	if !ok {
		return nil, nil, fmt.Errorf("not a PodPreset: %T", obj)
	}
	return pp.Labels, generic.ObjectMetaFieldsSet(&pp.ObjectMeta, true), nil
}

// Matcher selects presets by label and field.
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
