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

// Package podfields checks a preset's pod fields with kube-apiserver's own
// pod validation, in-process, for the custom kube-apiserver's settings
// registry (the fork recipe's step 3b). The webhook server, which links no
// k8s.io/kubernetes, asks its cluster's kube-apiserver instead
// (plugin/webhook/podfields), and both refuse the same presets with the
// same field paths and messages.
package podfields

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	// The internal core types, which legacyscheme converts the carrier pod to.
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/validation"
)

// Validate checks a preset's env, envFrom, volumes and volumeMounts with
// kube-apiserver's own pod validation, so that a preset is refused, at its
// own field, for anything that would make the pods it selects invalid.
// The fields are placed in a pod with one container and converted to the
// internal types pod validation reads; the pod's options come from the
// same feature gates a pod create is validated with.
var Validate validation.PodFieldsValidator = func(spec *settings.PodPresetSpec, fldPath *field.Path) field.ErrorList {
	carrier := &corev1.Pod{Spec: corev1.PodSpec{
		Volumes: spec.Volumes,
		Containers: []corev1.Container{{
			Env:          spec.Env,
			EnvFrom:      spec.EnvFrom,
			VolumeMounts: spec.VolumeMounts,
		}},
	}}
	var pod core.Pod
	if err := legacyscheme.Scheme.Convert(carrier, &pod, nil); err != nil {
		return field.ErrorList{field.InternalError(fldPath, err)}
	}
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&pod.Spec, nil, &pod.ObjectMeta, nil)
	container := &pod.Spec.Containers[0]
	volumes, allErrs := corevalidation.ValidateVolumes(pod.Spec.Volumes, &pod.ObjectMeta, fldPath.Child("volumes"), opts)
	allErrs = append(allErrs, corevalidation.ValidateEnv(container.Env, fldPath.Child("env"), opts)...)
	allErrs = append(allErrs, corevalidation.ValidateEnvFrom(container.EnvFrom, fldPath.Child("envFrom"), opts)...)
	// No container: whether a mount may propagate both ways depends on the
	// container being privileged, which only the pod knows.
	return append(allErrs, corevalidation.ValidateVolumeMounts(container.VolumeMounts, nil, volumes, nil, fldPath.Child("volumeMounts"), opts)...)
}
