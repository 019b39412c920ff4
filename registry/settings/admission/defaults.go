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
	genericadmission "k8s.io/apiserver/pkg/admission"
)

// Defaults gives a preset that is created or updated the defaults the
// v1alpha1 defaulters give it when kube-apiserver decodes it in-process:
// volumes and env as a pod's get them, so that the PodPreset plugin finds an
// item equal to the pod's own where it is.
type Defaults struct {
	*genericadmission.Handler
}

var _ genericadmission.MutationInterface = &Defaults{}

// NewDefaults returns the SettingsDefaults plugin.
func NewDefaults() *Defaults {
	return &Defaults{Handler: genericadmission.NewHandler(genericadmission.Create, genericadmission.Update)}
}

// Admit defaults the preset of a create or update. Defaulting twice gives
// what defaulting once gives, so a reinvocation changes nothing more.
func (d *Defaults) Admit(_ context.Context, a genericadmission.Attributes, _ genericadmission.ObjectInterfaces) error {
	k, ok := kindOf(a)
	if !ok {
		return nil
	}
	obj := a.GetObject()
	v, same, err := k.versioned(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	scheme.Default(v)
	if same {
		return nil
	}
	if err := k.writeBack(v, obj); err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}
