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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"

	"github.com/admitkit/admitkit/apis/settings/validation"
)

// Validation refuses a preset the registry would refuse in-process, with the
// registry's own strategy: 422 Invalid naming the kind and the preset, with
// a cause per field. On updates it returns the strategy's warnings, those
// of a client that dropped fields it does not know.
type Validation struct {
	*genericadmission.Handler
	podFields validation.PodFieldsValidator
}

var _ genericadmission.ValidationInterface = &Validation{}

// NewValidation returns the SettingsValidation plugin, which checks the
// fields presets put into pods with podFields (nil: the built-in rules).
func NewValidation(podFields validation.PodFieldsValidator) *Validation {
	return &Validation{
		Handler:   genericadmission.NewHandler(genericadmission.Create, genericadmission.Update),
		podFields: podFields,
	}
}

// Validate checks the preset of a create or update.
func (v *Validation) Validate(ctx context.Context, a genericadmission.Attributes, _ genericadmission.ObjectInterfaces) error {
	k, ok := kindOf(a)
	if !ok {
		return nil
	}
	obj, err := k.internal(a.GetObject())
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	var old runtime.Object
	if a.GetOperation() == genericadmission.Update {
		if old, err = k.internal(a.GetOldObject()); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	s := k.strategy(v.podFields)
	if old == nil {
		return refuseOrWarn(ctx, k, obj, s.Validate(ctx, obj), s.WarningsOnCreate(ctx, obj))
	}
	return refuseOrWarn(ctx, k, obj, s.ValidateUpdate(ctx, obj, old), s.WarningsOnUpdate(ctx, obj, old))
}

// refuseOrWarn answers as the registry does: the field errors as one
// Invalid error, or else the warnings.
func refuseOrWarn(ctx context.Context, k kind, obj runtime.Object, errs field.ErrorList, warnings []string) error {
	if len(errs) > 0 {
		name := ""
		if m, err := meta.Accessor(obj); err == nil {
			name = m.GetName()
		}
		return apierrors.NewInvalid(k.groupKind, name, errs)
	}
	for _, w := range warnings {
		warning.AddWarning(ctx, "", w)
	}
	return nil
}
