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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"

	"github.com/admitkit/admitkit/plugin/internal/admissiontest"
)

// internalPod stands in for k8s.io/kubernetes' core.Pod, the object
// kube-apiserver really hands to admission plugins: another Go type,
// registered under the internal version, reachable only by conversion.
type internalPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Containers []internalContainer
}

type internalContainer struct {
	Name       string
	Image      string
	PullPolicy string
}

func (p *internalPod) DeepCopyInto(out *internalPod) {
	*out = *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Containers = append([]internalContainer(nil), p.Containers...)
}

func (p *internalPod) DeepCopyObject() runtime.Object {
	out := &internalPod{}
	p.DeepCopyInto(out)
	return out
}

type conversions struct{ toV1, fromV1 int }

func internalScheme(t *testing.T, counts *conversions) *runtime.Scheme {
	t.Helper()
	s := testScheme(t)
	admissiontest.StandIn(t, s, corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), &internalPod{},
		func(in *internalPod, out *corev1.Pod) {
			counts.toV1++
			in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
			out.Spec.Containers = nil
			for _, c := range in.Containers {
				out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image, ImagePullPolicy: corev1.PullPolicy(c.PullPolicy)})
			}
		},
		func(in *corev1.Pod, out *internalPod) {
			counts.fromV1++
			in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
			out.Containers = nil
			for _, c := range in.Spec.Containers {
				out.Containers = append(out.Containers, internalContainer{Name: c.Name, Image: c.Image, PullPolicy: string(c.ImagePullPolicy)})
			}
		})
	return s
}

func TestAdmitInternalObject(t *testing.T) {
	image := `apiVersion: mutations.gatekeeper.sh/v1alpha1
kind: AssignImage
metadata: {name: mirror}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {namespaces: [prod]}
  location: "spec.containers[name:*].image"
  parameters: {assignDomain: mirror.example.com}`
	p := newTestPlugin(t, config(pullAlways, ownerLabel, image))
	var counts conversions
	o := admission.NewObjectInterfacesFromScheme(internalScheme(t, &counts))

	pod := &internalPod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"},
		Containers: []internalContainer{{Name: "app", Image: "nginx:1"}, {Name: "side", Image: "quay.io/x/y:2", PullPolicy: "Never"}},
	}
	a := record(attrs(pod, podGVK, podGVR, "prod", "web", admission.Create, ""))
	if err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), a, o); err != nil {
		t.Fatal(err)
	}
	got := a.GetObject().(*internalPod)
	want := []internalContainer{
		{Name: "app", Image: "mirror.example.com/nginx:1", PullPolicy: "Always"},
		{Name: "side", Image: "mirror.example.com/x/y:2", PullPolicy: "Always"},
	}
	for i := range want {
		if got.Containers[i] != want[i] {
			t.Errorf("container %d = %+v, want %+v", i, got.Containers[i], want[i])
		}
	}
	if got.Labels["owner"] != "platform" {
		t.Errorf("labels %v", got.Labels)
	}
	if counts.toV1 == 0 || counts.fromV1 == 0 {
		t.Fatalf("conversions %+v: the internal object must be converted both ways", counts)
	}
	if a.annotations[AnnotationKey] != "Assign/always-pull,AssignImage/mirror,AssignMetadata/owner" {
		t.Errorf("annotation %q", a.annotations[AnnotationKey])
	}

	// Already mutated: converted to look, never converted back.
	counts = conversions{}
	if err := p.Admit(context.Background(), attrs(got, podGVK, podGVR, "prod", "web", admission.Update, ""), o); err != nil {
		t.Fatal(err)
	}
	if counts.fromV1 != 0 {
		t.Fatalf("conversions %+v for an object that did not change", counts)
	}

	// Matching nothing (excluded namespace, and the label mutator is for
	// pods only so it still matches: use a ConfigMap-only system) costs no
	// conversion at all.
	counts = conversions{}
	p2 := newTestPlugin(t, config(pullAlways))
	other := &internalPod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "kube-system"}, Containers: []internalContainer{{Name: "app"}}}
	if err := p2.Admit(context.Background(), attrs(other, podGVK, podGVR, "kube-system", "web", admission.Create, ""), o); err != nil {
		t.Fatal(err)
	}
	if counts != (conversions{}) || other.Containers[0].PullPolicy != "" {
		t.Fatalf("conversions %+v, object %+v", counts, other)
	}
}
