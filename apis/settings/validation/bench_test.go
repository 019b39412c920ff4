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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitkit/admitkit/apis/settings"
)

// A preset of n env vars, envFrom sources, volumes and mounts, n in 1,000,
// 4,000 and 16,000, valid, and with every name and path given twice: the
// cost per item (ns/item) stays flat. The plugins' scale benchmarks share a
// helper that also reports CPU time; apis/ cannot import the plugins'
// internal tree, and wall time per item is enough for one linear check.
func BenchmarkValidatePodPresetScale(b *testing.B) {
	perItem := func(b *testing.B, n int, f func()) {
		b.ReportAllocs()
		for b.Loop() {
			f()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(n)), "ns/item")
	}
	for _, n := range []int{1000, 4000, 16000} {
		valid := scalePreset(n, n)
		duplicated := scalePreset(n, n/2)
		b.Run(fmt.Sprintf("valid/items-%d", n), func(b *testing.B) {
			perItem(b, n, func() {
				if errs := ValidatePodPreset(valid, BuiltinPodFields); len(errs) > 0 {
					b.Fatal(errs.ToAggregate())
				}
			})
		})
		b.Run(fmt.Sprintf("duplicates/items-%d", n), func(b *testing.B) {
			perItem(b, n, func() {
				if errs := ValidatePodPreset(duplicated, BuiltinPodFields); len(errs) != n {
					b.Fatalf("%d errors, want %d", len(errs), n)
				}
			})
		})
	}
}

// scalePreset has n items of each list, named after i % distinct.
func scalePreset(n, distinct int) *settings.PodPreset {
	pp := &settings.PodPreset{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "sample"}}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("v%d", i%distinct)
		pp.Spec.Env = append(pp.Spec.Env, corev1.EnvVar{Name: "E" + name, Value: "x"})
		pp.Spec.EnvFrom = append(pp.Spec.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
		pp.Spec.Volumes = append(pp.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pp.Spec.VolumeMounts = append(pp.Spec.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/m/" + name})
	}
	return pp
}
