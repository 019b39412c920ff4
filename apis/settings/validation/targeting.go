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

package validation

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitkit/admitkit/apis/settings"
)

// SupportedConflictPolicies are the values spec.conflictPolicy may take
// besides empty, which means SkipAll.
var SupportedConflictPolicies = []settings.ConflictPolicy{
	settings.ConflictPolicySkipAll,
	settings.ConflictPolicyPodWins,
	settings.ConflictPolicyPresetWins,
	settings.ConflictPolicyReject,
}

// SupportedModes are the values spec.mode may take besides empty, which
// means Enforce.
var SupportedModes = []settings.Mode{settings.ModeEnforce, settings.ModeWarn, settings.ModeAudit}

// validateTargeting checks which containers a preset picks, what its
// conflicts do and whether it is enforced.
func validateTargeting(spec *settings.PodPresetSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateContainerSelector(spec.Containers, fldPath.Child("containers"))
	allErrs = append(allErrs, validateContainerSelector(spec.InitContainers, fldPath.Child("initContainers"))...)
	if spec.ConflictPolicy != "" && !slices.Contains(SupportedConflictPolicies, spec.ConflictPolicy) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("conflictPolicy"), spec.ConflictPolicy, SupportedConflictPolicies))
	}
	if spec.Mode != "" && !slices.Contains(SupportedModes, spec.Mode) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("mode"), spec.Mode, SupportedModes))
	}
	return allErrs
}

func validateContainerSelector(s *settings.ContainerSelector, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var allErrs field.ErrorList
	namesPath := fldPath.Child("names")
	// Leaving out nothing is what an unset selector already says; a user
	// who wrote it most likely forgot the names.
	if s.Exclude && len(s.Names) == 0 {
		allErrs = append(allErrs, field.Required(namesPath, "must name the containers to leave out when exclude is true"))
	}
	seen := sets.New[string]()
	for i, name := range s.Names {
		idxPath := namesPath.Index(i)
		switch {
		case name == "":
			allErrs = append(allErrs, field.Required(idxPath, ""))
		case seen.Has(name):
			allErrs = append(allErrs, field.Duplicate(idxPath, name))
		default:
			// Container names are DNS labels: a name that is not one can
			// never match, and is a typo the author should hear about.
			for _, msg := range validation.IsDNS1123Label(name) {
				allErrs = append(allErrs, field.Invalid(idxPath, name, msg))
			}
			seen.Insert(name)
		}
	}
	return allErrs
}

// WarningsOnSpecUpdate warns when an update takes away the container
// selection or the conflict policy the stored preset had. A client built
// before these fields existed drops them when it reads, changes and writes
// back a preset; the preset then silently reaches every container again,
// or goes back to SkipAll. The update is still taken: a client may mean it.
func WarningsOnSpecUpdate(spec, old *settings.PodPresetSpec, fldPath *field.Path) []string {
	var warnings []string
	removed := func(path *field.Path) {
		warnings = append(warnings, fmt.Sprintf("%s: this update removes the value the preset had; a client that does not know this field drops it when it writes back a preset it has read: set it again if that was not meant", path))
	}
	if old.Containers != nil && spec.Containers == nil {
		removed(fldPath.Child("containers"))
	}
	if old.InitContainers != nil && spec.InitContainers == nil {
		removed(fldPath.Child("initContainers"))
	}
	if old.ConflictPolicy != "" && spec.ConflictPolicy == "" {
		removed(fldPath.Child("conflictPolicy"))
	}
	if old.Mode != "" && spec.Mode == "" {
		removed(fldPath.Child("mode"))
	}
	return warnings
}
