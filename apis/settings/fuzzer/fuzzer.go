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

// Package fuzzer gives the round-trip test values of settings.k8s.io types
// that survive encoding: random bytes are not a valid Quantity, and the
// decoder's defaulting would otherwise change a fuzzed preset.
package fuzzer

import (
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// Funcs returns the fuzzer functions of settings.k8s.io.
var Funcs = func(runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(1_000_000), resource.DecimalSI)
		},
		func(spec *settings.PodPresetSpec, c randfill.Continue) {
			c.FillNoCustom(spec)
			// The versioned preset shares the slices, so defaulting it
			// defaults spec in place.
			v1alpha1.SetObjectDefaults_PodPreset(&v1alpha1.PodPreset{Spec: v1alpha1.PodPresetSpec{
				Env:     spec.Env,
				Volumes: spec.Volumes,
			}})
		},
	}
}
