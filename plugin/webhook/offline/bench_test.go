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

package offline

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkAdmit1000 admits 1,000 pods against 5 presets and 10 mutators,
// as a CI run over a repository of manifests does; BenchmarkAdmitNoState
// is the same pods with nothing to apply, the cost of the path alone.
// ns/op is per 1,000 manifests.
func BenchmarkAdmit1000(b *testing.B) {
	var in Inputs
	for i := range 5 {
		in.Presets = append(in.Presets, preset(fmt.Sprintf("preset-%d", i), fmt.Sprintf("VAR_%d", i), "x"))
	}
	for i, location := range []string{
		"spec.containers[name:*].securityContext.runAsNonRoot", "spec.containers[name:*].securityContext.readOnlyRootFilesystem",
		"spec.containers[name:*].securityContext.allowPrivilegeEscalation", "spec.containers[name:*].securityContext.privileged",
		"spec.enableServiceLinks", "spec.hostNetwork", "spec.hostPID", "spec.hostIPC", "spec.shareProcessNamespace",
		"spec.automountServiceAccountToken",
	} {
		in.Mutators = append(in.Mutators, assign(fmt.Sprintf("assign-%d", i), location, i%2 == 0))
	}
	benchmarkAdmit(b, in)
}

func BenchmarkAdmitNoState(b *testing.B) { benchmarkAdmit(b, Inputs{}) }

func benchmarkAdmit(b *testing.B, in Inputs) {
	a := newAdmitter(b, in)
	pods := make([]*unstructured.Unstructured, 1000)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("pod-%d", i))
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pods {
			r, err := a.Admit(ctx, p, nil)
			if err != nil || r.Refusal != nil {
				b.Fatal(err, r.Refusal)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pods)), "ns/manifest")
}
