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

// Package validation checks PodPresets and ClusterPodPresets before the
// registry stores them, with the field paths and messages of kube-apiserver's
// pod validation for the parts a preset shares with a pod.
//
// A preset is checked for what makes it usable as a preset (names, its
// selectors, at least one payload), and its env, envFrom, volumes and
// volumeMounts by a PodFieldsValidator: the fields a pod gets from it must
// not make every pod it selects invalid. Servers built with kube-apiserver's
// own pod validation pass a validator built on it; BuiltinPodFields is the
// fallback, which leaves the fields inside each volume source, env source
// and downward API item to pod validation, run on every pod after admission
// has merged the preset into it.
package validation

import (
	"path"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitkit/admitkit/apis/settings"
)

// ValidatePodPresetName checks a PodPreset or ClusterPodPreset name (or
// generateName prefix): it must be a DNS-1123 subdomain.
var ValidatePodPresetName = apivalidation.NameIsDNSSubdomain

// ValidatePodPreset checks a PodPreset on create.
func ValidatePodPreset(pp *settings.PodPreset, podFields PodFieldsValidator) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&pp.ObjectMeta, true, ValidatePodPresetName, field.NewPath("metadata"))
	return append(allErrs, ValidatePodPresetSpec(&pp.Spec, field.NewPath("spec"), podFields)...)
}

// ValidatePodPresetUpdate checks a PodPreset on update: the metadata rules of
// an update (name and namespace are immutable) and the spec, once. Unlike
// Kubernetes' removed API the spec may change.
func ValidatePodPresetUpdate(pp, old *settings.PodPreset, podFields PodFieldsValidator) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&pp.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, ValidatePodPresetSpec(&pp.Spec, field.NewPath("spec"), podFields)...)
}

// ValidateClusterPodPreset checks a ClusterPodPreset on create.
func ValidateClusterPodPreset(cpp *settings.ClusterPodPreset, podFields PodFieldsValidator) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&cpp.ObjectMeta, false, ValidatePodPresetName, field.NewPath("metadata"))
	return append(allErrs, ValidateClusterPodPresetSpec(&cpp.Spec, field.NewPath("spec"), podFields)...)
}

// ValidateClusterPodPresetUpdate checks a ClusterPodPreset on update.
func ValidateClusterPodPresetUpdate(cpp, old *settings.ClusterPodPreset, podFields PodFieldsValidator) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&cpp.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, ValidateClusterPodPresetSpec(&cpp.Spec, field.NewPath("spec"), podFields)...)
}

// ValidateClusterPodPresetSpec checks the namespace selector and the
// embedded PodPresetSpec, whose fields sit directly under fldPath.
func ValidateClusterPodPresetSpec(spec *settings.ClusterPodPresetSpec, fldPath *field.Path, podFields PodFieldsValidator) field.ErrorList {
	allErrs := metav1validation.ValidateLabelSelector(&spec.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("namespaceSelector"))
	return append(allErrs, ValidatePodPresetSpec(&spec.PodPresetSpec, fldPath, podFields)...)
}

// ValidatePodPresetSpec checks a preset's selector and payload, the payload
// with podFields (BuiltinPodFields when nil). Every error is reported, not
// only the first.
func ValidatePodPresetSpec(spec *settings.PodPresetSpec, fldPath *field.Path, podFields PodFieldsValidator) field.ErrorList {
	allErrs := metav1validation.ValidateLabelSelector(&spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))

	// A nil test, as upstream had it: an explicitly empty list still counts
	// as saying something. The odd path is upstream's and users match on it.
	if spec.Env == nil && spec.EnvFrom == nil && spec.VolumeMounts == nil && spec.Volumes == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("volumes", "env", "envFrom", "volumeMounts"), "must specify at least one"))
	}

	allErrs = append(allErrs, validateTargeting(spec, fldPath)...)
	if podFields == nil {
		podFields = BuiltinPodFields
	}
	return append(allErrs, podFields(spec, fldPath)...)
}

// PodFieldsValidator checks what admission copies from a preset into pods:
// its env, envFrom, volumes and volumeMounts, under fldPath (a preset's
// spec). Errors name the preset's own fields, so that a preset which would
// make every pod it selects invalid is refused when it is written, with the
// field to fix, rather than every pod being refused later.
type PodFieldsValidator func(spec *settings.PodPresetSpec, fldPath *field.Path) field.ErrorList

// BuiltinPodFields is admitkit's own check of a preset's pod fields, for
// servers that cannot hand the registry kube-apiserver's pod validation
// (which lives in k8s.io/kubernetes): volumes named, unique and of one
// source, well-formed env and envFrom entries, and mounts that name a volume
// of the same preset at a unique path. It does not look inside volume
// sources, env var sources or downward API items: pods that a preset with a
// bad one selects are refused by pod validation instead.
func BuiltinPodFields(spec *settings.PodPresetSpec, fldPath *field.Path) field.ErrorList {
	volumes, allErrs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	allErrs = append(allErrs, validateEnv(spec.Env, fldPath.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(spec.EnvFrom, fldPath.Child("envFrom"))...)
	return append(allErrs, validateVolumeMounts(spec.VolumeMounts, volumes, fldPath.Child("volumeMounts"))...)
}

// validateVolumes returns the names the volumes declare, for the mounts to
// be checked against.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		vol := &volumes[i]
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		switch {
		case vol.Name == "":
			allErrs = append(allErrs, field.Required(namePath, ""))
		case names.Has(vol.Name):
			allErrs = append(allErrs, field.Duplicate(namePath, vol.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(vol.Name) {
				allErrs = append(allErrs, field.Invalid(namePath, vol.Name, msg))
			}
			names.Insert(vol.Name)
		}
		allErrs = append(allErrs, validateVolumeSourceCount(&vol.VolumeSource, idxPath)...)
	}
	return names, allErrs
}

// validateVolumeSourceCount requires exactly one volume source. The sources
// are the pointer fields of VolumeSource; reading them by reflection keeps
// the check right as k8s.io/api adds new ones.
func validateVolumeSourceCount(source *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	value := reflect.ValueOf(source).Elem()
	count := 0
	for i := 0; i < value.NumField(); i++ {
		if value.Field(i).Kind() != reflect.Pointer || value.Field(i).IsNil() {
			continue
		}
		count++
		if count > 1 {
			name, _, _ := strings.Cut(value.Type().Field(i).Tag.Get("json"), ",")
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 volume type"))
		}
	}
	if count == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a volume type"))
	}
	return allErrs
}

func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range vars {
		ev := &vars[i]
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), ev.Name, msg))
			}
		}
		allErrs = append(allErrs, validateEnvVarSource(ev, idxPath.Child("valueFrom"))...)
	}
	return allErrs
}

func validateEnvVarSource(ev *corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var allErrs field.ErrorList
	sources := 0
	if from.FieldRef != nil {
		sources++
		allErrs = append(allErrs, requireFields(fldPath.Child("fieldRef"), "apiVersion", from.FieldRef.APIVersion, "fieldPath", from.FieldRef.FieldPath)...)
	}
	if from.ResourceFieldRef != nil {
		sources++
		allErrs = append(allErrs, requireFields(fldPath.Child("resourceFieldRef"), "resource", from.ResourceFieldRef.Resource)...)
	}
	if from.ConfigMapKeyRef != nil {
		sources++
		allErrs = append(allErrs, validateKeySelector(fldPath.Child("configMapKeyRef"), from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key)...)
	}
	if from.SecretKeyRef != nil {
		sources++
		allErrs = append(allErrs, validateKeySelector(fldPath.Child("secretKeyRef"), from.SecretKeyRef.Name, from.SecretKeyRef.Key)...)
	}
	if from.FileKeyRef != nil {
		sources++
		allErrs = append(allErrs, requireFields(fldPath.Child("fileKeyRef"), "volumeName", from.FileKeyRef.VolumeName, "path", from.FileKeyRef.Path, "key", from.FileKeyRef.Key)...)
	}
	switch {
	case sources == 0:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case sources > 1:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return allErrs
}

// requireFields reports every empty value of the name/value pairs it is given.
func requireFields(fldPath *field.Path, namesAndValues ...string) field.ErrorList {
	var allErrs field.ErrorList
	for i := 0; i+1 < len(namesAndValues); i += 2 {
		if namesAndValues[i+1] == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child(namesAndValues[i]), ""))
		}
	}
	return allErrs
}

func validateKeySelector(fldPath *field.Path, name, key string) field.ErrorList {
	allErrs := validateObjectName(fldPath.Child("name"), name)
	if key == "" {
		return append(allErrs, field.Required(fldPath.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("key"), key, msg))
	}
	return allErrs
}

// validateObjectName checks the name of a referenced ConfigMap or Secret.
func validateObjectName(fldPath *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range sources {
		source := &sources[i]
		idxPath := fldPath.Index(i)
		if source.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(source.Prefix) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("prefix"), source.Prefix, msg))
			}
		}
		count := 0
		if source.ConfigMapRef != nil {
			count++
			allErrs = append(allErrs, validateObjectName(idxPath.Child("configMapRef", "name"), source.ConfigMapRef.Name)...)
		}
		if source.SecretRef != nil {
			count++
			allErrs = append(allErrs, validateObjectName(idxPath.Child("secretRef", "name"), source.SecretRef.Name)...)
		}
		switch {
		case count == 0:
			allErrs = append(allErrs, field.Invalid(idxPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case count > 1:
			allErrs = append(allErrs, field.Invalid(idxPath, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

var supportedMountPropagations = []corev1.MountPropagationMode{
	corev1.MountPropagationBidirectional,
	corev1.MountPropagationHostToContainer,
	corev1.MountPropagationNone,
}

var supportedRecursiveReadOnly = []corev1.RecursiveReadOnlyMode{
	corev1.RecursiveReadOnlyDisabled,
	corev1.RecursiveReadOnlyIfPossible,
	corev1.RecursiveReadOnlyEnabled,
}

// validateVolumeMounts checks mounts against the preset's own volumes: a
// preset cannot rely on a volume that only some pods define. Whether
// Bidirectional propagation is allowed depends on the container being
// privileged, which pod validation checks once the mount is in a container.
func validateVolumeMounts(mounts []corev1.VolumeMount, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mountPaths := sets.New[string]()
	for i := range mounts {
		mnt := &mounts[i]
		idxPath := fldPath.Index(i)
		switch {
		case mnt.Name == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		case !volumes.Has(mnt.Name):
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), mnt.Name))
		}
		switch {
		case mnt.MountPath == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("mountPath"), ""))
		case mountPaths.Has(mnt.MountPath):
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), mnt.MountPath, "must be unique"))
		default:
			mountPaths.Insert(mnt.MountPath)
		}
		if mnt.SubPath != "" {
			allErrs = append(allErrs, validateRelativeDescendingPath(mnt.SubPath, idxPath.Child("subPath"))...)
		}
		if mnt.SubPathExpr != "" {
			if mnt.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPathExpr"), mnt.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			allErrs = append(allErrs, validateRelativeDescendingPath(mnt.SubPathExpr, idxPath.Child("subPathExpr"))...)
		}
		if mnt.MountPropagation != nil && !slices.Contains(supportedMountPropagations, *mnt.MountPropagation) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("mountPropagation"), *mnt.MountPropagation, supportedMountPropagations))
		}
		allErrs = append(allErrs, validateRecursiveReadOnly(mnt, idxPath.Child("recursiveReadOnly"))...)
	}
	return allErrs
}

func validateRecursiveReadOnly(mnt *corev1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if mnt.RecursiveReadOnly == nil {
		return nil
	}
	mode := *mnt.RecursiveReadOnly
	if !slices.Contains(supportedRecursiveReadOnly, mode) {
		return field.ErrorList{field.NotSupported(fldPath, mode, supportedRecursiveReadOnly)}
	}
	if mode == corev1.RecursiveReadOnlyDisabled {
		return nil
	}
	var allErrs field.ErrorList
	if !mnt.ReadOnly {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
	}
	if mnt.MountPropagation != nil && *mnt.MountPropagation != corev1.MountPropagationNone {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
	}
	return allErrs
}

// validateRelativeDescendingPath keeps a sub path inside its volume.
func validateRelativeDescendingPath(target string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if path.IsAbs(target) {
		allErrs = append(allErrs, field.Invalid(fldPath, target, "must be a relative path"))
	}
	for _, element := range strings.Split(target, "/") {
		if element == ".." {
			allErrs = append(allErrs, field.Invalid(fldPath, target, "must not contain '..'"))
			break
		}
	}
	return allErrs
}
