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

package compiler

import "k8s.io/apimachinery/pkg/util/validation/field"

// compilePresets compiles src's PodPresets and ClusterPodPresets into r.
// SKELETON: the presets helper replaces this file.
func compilePresets(src Sources, r *Result) {
	for _, p := range src.PodPresets {
		r.Refused = append(r.Refused, Refusal{Source{"PodPreset", p.Namespace, p.Name}, field.ErrorList{field.InternalError(nil, errNotYet)}})
	}
	for _, p := range src.ClusterPodPresets {
		r.Refused = append(r.Refused, Refusal{Source{"ClusterPodPreset", "", p.Name}, field.ErrorList{field.InternalError(nil, errNotYet)}})
	}
}
