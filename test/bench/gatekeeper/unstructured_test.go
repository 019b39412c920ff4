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

package gatekeeper

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// unstructuredRequest is a request of the benchmarks' (attrs) whose object
// is the pod's unstructured form, as a custom resource arrives at Admit:
// the LocationMutator then walks the map, not the typed pod.
type unstructuredRequest struct {
	admission.Attributes
	obj *unstructured.Unstructured
}

func (r unstructuredRequest) GetObject() runtime.Object { return r.obj }

// unstructuredRequestOf is a request for op on u. The typed pod of the
// record underneath is never read.
func unstructuredRequestOf(u *unstructured.Unstructured, op admission.Operation) admission.Attributes {
	return unstructuredRequest{Attributes: attrs(nil, op), obj: u}
}

func asUnstructured(tb testing.TB, pod *corev1.Pod) *unstructured.Unstructured {
	tb.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		tb.Fatal(err)
	}
	return &unstructured.Unstructured{Object: u}
}

// admitUnstructured admits the unstructured form of pod and returns what
// the LocationMutator made of it, decoded back.
func admitUnstructured(tb testing.TB, sh shape, pod *corev1.Pod, op admission.Operation) *corev1.Pod {
	tb.Helper()
	u := asUnstructured(tb, pod)
	if err := ourPlugin(tb, sh.mutators(tb)).Admit(context.Background(), unstructuredRequestOf(u, op), objectInterfaces(tb)); err != nil {
		tb.Fatal(err)
	}
	out := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		tb.Fatal(err)
	}
	return out
}

// The LocationMutator makes the same pod of the unstructured form as of
// the typed one, which TestSameResult compares with Gatekeeper's.
func TestSameResultUnstructured(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			typed, _, _, _ := run(t, sh)
			got := admitUnstructured(t, sh, threeContainerPod(), admission.Create)
			if !equality.Semantic.DeepEqual(got, typed) {
				t.Errorf("fresh pod, unstructured: %+v\ntyped: %+v", got.Spec, typed.Spec)
			}
			// What BenchmarkSideBySideUnstructured's mutated pod is.
			if again := admitUnstructured(t, sh, typed, admission.Update); !equality.Semantic.DeepEqual(again, typed) {
				t.Errorf("mutated pod changed again: %+v\nwas: %+v", again.Spec, typed.Spec)
			}
		})
	}
}

// BenchmarkSideBySideUnstructured is BenchmarkSideBySide's admitkit side on
// the pod's unstructured form (a map, as custom resources arrive), with a
// deep copy of the map per request when the mutators change it, and that
// copy alone ("copy-unstructured"), as BenchmarkSideBySide has. Gatekeeper's
// side is the same request as there, since its webhook always decodes the
// JSON into an unstructured object: the ratio of a shape is
// BenchmarkSideBySide's <shape>/<pod>/gatekeeper over this one's
// <shape>/<pod>/admitkit-unstructured.
func BenchmarkSideBySideUnstructured(b *testing.B) {
	o := objectInterfaces(b)
	for _, sh := range shapes {
		ours, _, plugin, _ := run(b, sh)
		fresh := asUnstructured(b, threeContainerPod())
		if sh.mutates {
			b.Run(sh.name+"/fresh/copy-unstructured", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					copied = fresh.DeepCopy()
				}
			})
		}
		b.Run(sh.name+"/fresh/admitkit-unstructured", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				u := fresh
				if sh.mutates {
					u = fresh.DeepCopy()
				}
				if err := plugin.Admit(context.Background(), unstructuredRequestOf(u, admission.Create), o); err != nil {
					b.Fatal(err)
				}
			}
		})
		a := unstructuredRequestOf(asUnstructured(b, ours), admission.Update)
		b.Run(sh.name+"/mutated/admitkit-unstructured", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := plugin.Admit(context.Background(), a, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
