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

package locationmutator

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// deploymentOnlyAssigns are n Assigns for Deployments: a pod matches none.
func deploymentOnlyAssigns(n int) []string {
	format := readTestdata("deployment-only-assign.yaml.fmt")
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// The request is a Pod; every mutator binds to Deployments only.
func BenchmarkAdmitNonMatching(b *testing.B) {
	o := admission.NewObjectInterfacesFromScheme(testScheme(b))
	for _, n := range []int{0, 100, 1000} {
		p := newTestPlugin(b, config(deploymentOnlyAssigns(n)...))
		a := attrs(threeContainerPod(), podGVK, podGVR, "prod", "web", admission.Create, "")
		b.Run(fmt.Sprintf("mutators-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Admit(context.Background(), a, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// tenPodMutators reads the ten mutators that all match threeContainerPod
// in namespace prod. They live in a file so that test/bench/gatekeeper
// runs Gatekeeper on exactly these.
func tenPodMutators(tb testing.TB) []string {
	data, err := os.ReadFile("testdata/ten-pod-mutators.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		// config indents each manifest as a list item; a comment line
		// would end up there in place of the item.
		var lines []string
		for _, l := range strings.Split(doc, "\n") {
			if !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		out = append(out, strings.Join(lines, "\n"))
	}
	return out
}

// Ten matching mutators on a 3-container pod, end to end through Admit.
// "fresh" changes the pod every time; "mutated" admits a pod that already
// has every change. The typed path is the default; "unstructured/..." runs
// the same on the pod's unstructured form, as custom resources arrive.
func BenchmarkAdmitTenMatching(b *testing.B) {
	mutators := tenPodMutators(b)
	if len(mutators) != 10 {
		b.Fatalf("%d mutators", len(mutators))
	}
	benchAdmit(b, mutators, func(done *corev1.Pod) {
		if !strings.HasPrefix(done.Spec.Containers[0].Image, "mirror.example.com/") {
			b.Fatalf("not mutated: %+v", done.Spec.Containers[0])
		}
	})
}

// quantityLimit sets every container's memory limit: a value with an
// unstructured form of its own (a Quantity), in a map entry.
const quantityLimit = `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: memory-limit}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.containers[name:*].resources.limits.memory"
  parameters: {assign: {value: 1Gi}}`

// The ten mutators with the last (AssignImage) replaced by a memory limit,
// which every container gets as a Quantity.
func BenchmarkAdmitTenMatchingWithQuantity(b *testing.B) {
	mutators := append(tenPodMutators(b)[:9:9], quantityLimit)
	benchAdmit(b, mutators, func(done *corev1.Pod) {
		if got := done.Spec.Containers[2].Resources.Limits.Memory().String(); got != "1Gi" {
			b.Fatalf("memory limit %q", got)
		}
	})
}

// One Assign of imagePullPolicy, the real-server comparison's case.
func BenchmarkAdmitOneAssign(b *testing.B) {
	benchAdmit(b, []string{pullAlways}, func(done *corev1.Pod) {
		if done.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
			b.Fatalf("not mutated: %+v", done.Spec.Containers[0])
		}
	})
}

// benchAdmit runs the mutators on a typed pod and on the pod's unstructured
// form (as custom resources arrive), fresh and already mutated.
func benchAdmit(b *testing.B, mutators []string, check func(*corev1.Pod)) {
	o := admission.NewObjectInterfacesFromScheme(testScheme(b))
	for _, path := range []string{"", "unstructured/"} {
		p := newTestPlugin(b, config(mutators...))
		pod := func() runtime.Object {
			if path == "" {
				return threeContainerPod()
			}
			return asUnstructured(b, threeContainerPod())
		}
		fresh := pod()
		b.Run(path+"fresh", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Admit(context.Background(), attrs(fresh.DeepCopyObject(), podGVK, podGVR, "prod", "web", admission.Create, ""), o); err != nil {
					b.Fatal(err)
				}
			}
		})
		done := pod()
		if err := p.Admit(context.Background(), attrs(done, podGVK, podGVR, "prod", "web", admission.Create, ""), o); err != nil {
			b.Fatal(err)
		}
		if path == "" {
			check(done.(*corev1.Pod))
		} else {
			check(asPod(b, done))
		}
		a := attrs(done, podGVK, podGVR, "prod", "web", admission.Update, "")
		b.Run(path+"mutated", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Admit(context.Background(), a, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The cost of copying the same pod, for scale.
func BenchmarkPodDeepCopy(b *testing.B) {
	pod := threeContainerPod()
	b.ReportAllocs()
	var sink *corev1.Pod
	for b.Loop() {
		sink = pod.DeepCopy()
	}
	_ = sink
}
