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

package podpreset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/internal/admissiontest"
)

// internalPod stands in for kube-apiserver's internal core.Pod: a Go type
// the plugin cannot name, which only the scheme's conversions understand.
type internalPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec corev1.PodSpec
}

func (in *internalPod) DeepCopyInto(out *internalPod) {
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
}

func (in *internalPod) DeepCopyObject() runtime.Object {
	out := &internalPod{}
	in.DeepCopyInto(out)
	return out
}

// internalScheme knows core/v1 and the internal pod, and counts the
// conversions it makes.
func internalScheme(t *testing.T, conversions *int) admission.ObjectInterfaces {
	t.Helper()
	scheme := admissiontest.Scheme(t, corev1.AddToScheme)
	admissiontest.StandIn(t, scheme, corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), &internalPod{},
		func(in *internalPod, out *corev1.Pod) {
			*conversions++
			in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
			in.Spec.DeepCopyInto(&out.Spec)
		},
		func(in *corev1.Pod, out *internalPod) {
			*conversions++
			in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
			in.Spec.DeepCopyInto(&out.Spec)
		})
	return admission.NewObjectInterfacesFromScheme(scheme)
}

func TestInternalPod(t *testing.T) {
	p, _ := newTestPlugin(t, podPreset("hello", securityS2, settingsv1alpha1.PodPresetSpec{
		Volumes:      []corev1.Volume{emptyDir("vol")},
		VolumeMounts: []corev1.VolumeMount{{Name: "vol", MountPath: "/vol"}},
		Env:          []corev1.EnvVar{{Name: "INJECTED", Value: "yes"}},
	}))
	conversions := 0
	o := internalScheme(t, &conversions)
	v1 := testPod()
	pod := &internalPod{ObjectMeta: v1.ObjectMeta, Spec: v1.Spec}
	if err := admitPod(t, p, pod, func(opts *admitOptions) { opts.o = o }); err != nil {
		t.Fatal(err)
	}
	if conversions == 0 {
		t.Fatal("the internal pod was never converted")
	}
	if got := pod.Spec.Containers[0].Env; len(got) != 3 || got[2].Name != "INJECTED" {
		t.Errorf("internal pod env = %v, want the preset's env appended", got)
	}
	if len(pod.Spec.Volumes) != 1 || pod.Annotations[podPresetAnnotationPrefix+"hello"] != "10hello" {
		t.Errorf("internal pod volumes %v, annotations %v", pod.Spec.Volumes, pod.Annotations)
	}
}

// Whether any preset matches is decided from metadata: a pod that no
// preset selects, or that conflicts, is never converted back.
func TestInternalPodWithoutMatchIsNotConverted(t *testing.T) {
	p, _ := newTestPlugin(t, podPreset("hello", securityS3, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "X", Value: "x"}}}))
	conversions := 0
	o := internalScheme(t, &conversions)
	v1 := testPod()
	pod := &internalPod{ObjectMeta: v1.ObjectMeta, Spec: v1.Spec}
	if err := admitPod(t, p, pod, func(opts *admitOptions) { opts.o = o }); err != nil {
		t.Fatal(err)
	}
	if conversions != 0 {
		t.Errorf("%d conversions for a pod no preset selects, want 0", conversions)
	}
}

func TestInternalPodConflictIsLeftAlone(t *testing.T) {
	p, _ := newTestPlugin(t, podPreset("hello", securityS2, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "abc", Value: "other"}}}))
	conversions := 0
	o := internalScheme(t, &conversions)
	v1 := testPod()
	pod := &internalPod{ObjectMeta: v1.ObjectMeta, Spec: v1.Spec}
	want := pod.DeepCopyObject()
	if err := admitPod(t, p, pod, func(opts *admitOptions) { opts.o = o }); err != nil {
		t.Fatal(err)
	}
	if conversions != 2 { // one to v1 per Admit, none back
		t.Errorf("%d conversions, want 2 (to v1 on each of the two admissions, never back)", conversions)
	}
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Errorf("internal pod changed on conflict:\n%s", diff)
	}
}
