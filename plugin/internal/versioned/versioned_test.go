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

package versioned

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/internal/admissiontest"
)

// internalPod stands in for kube-apiserver's internal Pod: another Go type,
// with a field renamed, that only the scheme's conversions map to v1.
type internalPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Host string
}

func (p *internalPod) DeepCopyObject() runtime.Object { c := *p; return &c }

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

func objects(t *testing.T) admission.ObjectInterfaces {
	t.Helper()
	s := admissiontest.Scheme(t, corev1.AddToScheme)
	admissiontest.StandIn(t, s, podGVK.GroupKind(), &internalPod{},
		func(in *internalPod, out *corev1.Pod) { out.ObjectMeta, out.Spec.NodeName = in.ObjectMeta, in.Host },
		func(in *corev1.Pod, out *internalPod) { out.ObjectMeta, out.Host = in.ObjectMeta, in.Spec.NodeName })
	return admission.NewObjectInterfacesFromScheme(s)
}

func TestAs(t *testing.T) {
	o := objects(t)
	v1Pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n"}}
	tests := []struct {
		name    string
		obj     runtime.Object
		o       admission.ObjectInterfaces
		same    bool // the object itself comes back
		wantErr bool
	}{
		{name: "versioned, no scheme needed", obj: v1Pod, same: true},
		{name: "internal, converted", obj: &internalPod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Host: "n"}, o: o},
		{name: "internal without a scheme", obj: &internalPod{}, wantErr: true},
		{name: "nil", obj: nil, o: o, wantErr: true},
		{name: "typed nil", obj: (*internalPod)(nil), o: o, wantErr: true},
		{name: "a kind the scheme cannot convert to a Pod", obj: &corev1.Node{}, o: o, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := As[corev1.Pod](tt.obj, podGVK, tt.o)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if tt.same != (runtime.Object(got) == tt.obj) {
				t.Errorf("same object = %v, want %v", !tt.same, tt.same)
			}
			if got.Name != "p" || got.Spec.NodeName != "n" || got.GroupVersionKind() != podGVK && !tt.same {
				t.Errorf("got %s on %q as %v", got.Name, got.Spec.NodeName, got.GroupVersionKind())
			}
		})
	}
}

func TestToAndBack(t *testing.T) {
	o := objects(t)
	internal := &internalPod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Host: "n"}
	out, converted, err := To(internal, podGVK, o)
	if err != nil || !converted {
		t.Fatalf("To(internal) = %T, converted %v, %v", out, converted, err)
	}
	out.(*corev1.Pod).Spec.NodeName = "m"
	if err := Back(out, internal, o); err != nil {
		t.Fatal(err)
	}
	if internal.Host != "m" {
		t.Errorf("the change did not reach the request's object: host %q", internal.Host)
	}
	v1Pod := &corev1.Pod{}
	if out, converted, err := To(v1Pod, podGVK, o); err != nil || converted || out != v1Pod {
		t.Errorf("To(versioned) = %p, converted %v, %v; want the object itself", out, converted, err)
	}
	// The typer answers for an object of the right type: no empty object
	// is made to compare types with.
	if n := testing.AllocsPerRun(10, func() { _, _, _ = To(v1Pod, podGVK, o) }); n != 0 {
		t.Errorf("To(versioned) allocates %v times a call, want 0", n)
	}
}

type internalStatus struct{ Phase string }

type statusOnly struct {
	metav1.TypeMeta
	Status internalStatus
	//lint:ignore U1000 an unexported field, which Field must not reach
	secret internalStatus
}

func (s *statusOnly) DeepCopyObject() runtime.Object { c := *s; return &c }

func TestField(t *testing.T) {
	s := runtime.NewScheme()
	if err := s.AddConversionFunc((*internalStatus)(nil), (*corev1.PodStatus)(nil), func(a, b any, _ conversion.Scope) error {
		b.(*corev1.PodStatus).Phase = corev1.PodPhase(a.(*internalStatus).Phase)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	o := admission.NewObjectInterfacesFromScheme(s)
	obj := &statusOnly{Status: internalStatus{Phase: "Running"}}
	var status corev1.PodStatus
	if err := Field(obj, "Status", &status, o); err != nil || status.Phase != corev1.PodRunning {
		t.Errorf("Field(Status) = %q, %v", status.Phase, err)
	}
	for _, tt := range []struct {
		name  string
		obj   runtime.Object
		field string
		out   any
	}{
		{name: "no such field", obj: obj, field: "Spec", out: &corev1.PodSpec{}},
		{name: "unexported field", obj: obj, field: "secret", out: &corev1.PodStatus{}},
		{name: "no registered conversion", obj: obj, field: "Status", out: &corev1.NodeStatus{}},
		{name: "typed nil", obj: (*statusOnly)(nil), field: "Status", out: &corev1.PodStatus{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := Field(tt.obj, tt.field, tt.out, o); err == nil {
				t.Errorf("Field(%s) converted %T", tt.field, tt.out)
			}
		})
	}
}
