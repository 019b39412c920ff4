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

package noderestriction

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

type layoutInner struct {
	B string
	C *layoutLeaf
}

type layoutLeaf struct {
	_ int64
	D string
}

type layoutOuter struct {
	X int32
	layoutInner
	Ptr   *layoutInner
	L     []layoutLeaf
	Times *metav1.Time
	low   string //nolint:unused // an unexported field the resolver must refuse
}

type layoutEmbedsPointer struct {
	*layoutInner
}

func TestResolver(t *testing.T) {
	outer := reflect.TypeFor[layoutOuter]()
	v := &layoutOuter{layoutInner: layoutInner{B: "b", C: &layoutLeaf{D: "d"}}, Ptr: &layoutInner{B: "pb"}, L: []layoutLeaf{{D: "0"}, {D: "1"}}}
	base := unsafe.Pointer(v)

	r := &resolver{}
	promoted := r.field(outer, reflect.String, "B")
	throughPointers := r.field(outer, reflect.String, "C", "D")
	viaPtr := r.field(outer, reflect.String, "Ptr", "C", "D")
	list := r.field(outer, reflect.Slice, "L")
	leafD := r.field(elem(&list), reflect.String, "D")
	times := exactType[*metav1.Time](r, outer, "Times")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := promoted.str(base); got != "b" {
		t.Errorf("promoted field: %q", got)
	}
	if got := throughPointers.str(base); got != "d" {
		t.Errorf("through a pointer: %q", got)
	}
	if got := viaPtr.str(base); got != "" {
		t.Errorf("through a nil pointer: %q, want empty", got)
	}
	data, n := list.slice(base)
	if n != 2 || leafD.str(list.at(data, 1)) != "1" {
		t.Errorf("slice: %d elements, second %q", n, leafD.str(list.at(data, 1)))
	}
	if got := *typedAt[*metav1.Time](&times, base); got != nil {
		t.Errorf("typed nil pointer read as %v", got)
	}

	for _, tt := range []struct {
		name string
		t    reflect.Type
		kind reflect.Kind
		path []string
		err  string
	}{
		{"missing", outer, reflect.String, []string{"Nope"}, "has no field Nope"},
		{"unexported", outer, reflect.String, []string{"low"}, "has no field low"},
		{"wrong kind", outer, reflect.Slice, []string{"B"}, "is a string, not a slice"},
		{"not a struct", outer, reflect.String, []string{"B", "D"}, "is not a struct"},
		{"through a slice", outer, reflect.String, []string{"L", "D"}, "is not a struct"},
		{"embedded pointer", reflect.TypeFor[layoutEmbedsPointer](), reflect.String, []string{"B"}, "through a pointer"},
	} {
		r := &resolver{}
		r.field(tt.t, tt.kind, tt.path...)
		if r.err == nil || !strings.Contains(r.err.Error(), tt.err) {
			t.Errorf("%s: got %v, want %q", tt.name, r.err, tt.err)
		}
	}
	r = &resolver{}
	exactType[*corev1.Pod](r, outer, "Times")
	if r.err == nil {
		t.Errorf("exactType accepted a *metav1.Time as a *v1.Pod")
	}

	r = &resolver{}
	directList := r.direct(outer, reflect.Slice, "L")
	directPtr := r.direct(outer, reflect.Pointer, "Ptr")
	directTimes := r.direct(outer, reflect.Pointer, "Times")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := directList.directLen(base); got != 2 {
		t.Errorf("directLen: %d, want 2", got)
	}
	if got := directPtr.directPtr(base); got != unsafe.Pointer(v.Ptr) {
		t.Errorf("directPtr: %p, want %p", got, v.Ptr)
	}
	if got := directTimes.directPtr(base); got != nil {
		t.Errorf("directPtr of a nil field: %p", got)
	}
	r.direct(outer, reflect.String, "Ptr", "B")
	if r.err == nil || !strings.Contains(r.err.Error(), "reached through a pointer") {
		t.Errorf("direct followed a pointer: %v", r.err)
	}
}

// TestPointerIn holds the interface read to reflect's answer.
func TestPointerIn(t *testing.T) {
	for _, obj := range []runtime.Object{&corev1.Pod{}, &corev1.Node{}, (*corev1.Pod)(nil), &reorderedNode{}} {
		if got, want := pointerIn(obj), reflect.ValueOf(obj).UnsafePointer(); got != want {
			t.Errorf("%T: pointerIn %p, reflect %p", obj, got, want)
		}
	}
}

// countingTyper counts the questions it answers; its Go type is not
// comparable, which the cache must not mind.
type countingTyper func(runtime.Object) ([]schema.GroupVersionKind, bool, error)

func (f countingTyper) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	return f(obj)
}
func (f countingTyper) Recognizes(schema.GroupVersionKind) bool { return true }

type typerOnly struct {
	admission.ObjectInterfaces
	typer runtime.ObjectTyper
}

func (t typerOnly) GetObjectTyper() runtime.ObjectTyper { return t.typer }

func TestShapeCache(t *testing.T) {
	scheme := readerScheme(t)
	objects := admission.NewObjectInterfacesFromScheme(scheme)
	pod := internalPod(*testPod("ns", "p", "mynode", false))
	// Fresh caches, so that no other test has confirmed a type already.
	pods := &shapeCache[podStatusShape]{kind: podStatusShapes.kind, build: podStatusShapes.build}
	nodes := &shapeCache[nodeShape]{kind: nodeShapes.kind, build: nodeShapes.build}

	if _, _, err := pods.read(&pod, nil); err == nil || !strings.Contains(err.Error(), "unexpected type *noderestriction.internalPod: no object typer") {
		t.Errorf("without a typer: %v", err)
	}
	if _, _, err := pods.read((*internalPod)(nil), objects); err == nil || !strings.Contains(err.Error(), "unexpected type *noderestriction.internalPod") {
		t.Errorf("typed nil: %v", err)
	}
	// A node has no pod fields; a node-shaped type is not a Node to a
	// typer that does not know it, even though its fields resolve.
	if _, _, err := pods.read(&reorderedNode{}, objects); err == nil || !strings.Contains(err.Error(), "unexpected type *noderestriction.reorderedNode") {
		t.Errorf("a node read as a pod: %v", err)
	}
	lookalike := &reorderedNode{}
	if _, _, err := nodes.read(lookalike, admission.NewObjectInterfacesFromScheme(runtime.NewScheme())); err == nil {
		t.Errorf("a typer that does not know the type must not see a Node")
	}
	if _, _, err := nodes.read(lookalike, objects); err != nil {
		t.Fatal(err)
	}

	// The typer is asked once per Go type; after that the type alone
	// admits an object, typed nils still refused.
	calls := 0
	typer := countingTyper(func(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
		calls++
		return scheme.ObjectKinds(obj)
	})
	o := typerOnly{ObjectInterfaces: objects, typer: typer}
	for range 3 {
		p, s, err := pods.read(&pod, o)
		if err != nil || s.nodeName.str(p) != "mynode" {
			t.Fatalf("read through a counting typer: %v", err)
		}
	}
	if calls != 1 {
		t.Errorf("the typer was asked %d times for 3 reads of one type, want once", calls)
	}
	if _, _, err := pods.read((*internalPod)(nil), o); err == nil {
		t.Errorf("a typed nil of a confirmed type was read")
	}
	// A confirmation outlives reads of other types, and is per cache: a
	// type confirmed as a Node is still not a Pod.
	if _, _, err := pods.read(&reorderedNode{}, o); err == nil {
		t.Errorf("a node type was read as a pod")
	}
	if _, _, err := pods.read(&pod, o); err != nil || calls != 1 {
		t.Errorf("after another type: %v, %d typer calls, want still 1", err, calls)
	}
}

// TestMirrorWalkMatchesVersioned compares the API-reference walk over
// internal pods with the versioned one on every volume source alone and in
// pairs, every projection alone and in pairs, and the named references.
func TestMirrorWalkMatchesVersioned(t *testing.T) {
	objects := admission.NewObjectInterfacesFromScheme(readerScheme(t))
	check := func(name string, pod *corev1.Pod) {
		t.Helper()
		ip := internalPod(*pod)
		p, s, err := mirrorPodShapes.read(&ip, objects)
		if err != nil {
			t.Fatal(err)
		}
		wantRef, wantWhat, wantErr := podReferencesAPIObjects(pod)
		gotRef, gotWhat, gotErr := s.referencesAPIObjects(p)
		if gotRef != wantRef || gotWhat != wantWhat || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: internal (%v, %q, %v), versioned (%v, %q, %v)", name, gotRef, gotWhat, gotErr, wantRef, wantWhat, wantErr)
		}
	}
	withSources := func(fields ...int) *corev1.Pod {
		var vs corev1.VolumeSource
		v := reflect.ValueOf(&vs).Elem()
		for _, f := range fields {
			fv := v.Field(f)
			fv.Set(reflect.New(fv.Type().Elem()))
		}
		// Names where the source has one, so that references show.
		if vs.Secret != nil {
			vs.Secret.SecretName = "s"
		}
		if vs.ConfigMap != nil {
			vs.ConfigMap.Name = "cm"
		}
		if vs.CephFS != nil {
			vs.CephFS.SecretRef = &corev1.LocalObjectReference{Name: "ceph"}
		}
		if vs.AzureFile != nil {
			vs.AzureFile.SecretName = "az"
		}
		if vs.Projected != nil {
			vs.Projected.Sources = []corev1.VolumeProjection{{DownwardAPI: &corev1.DownwardAPIProjection{}}}
		}
		pod := testPod("ns", "m", "mynode", true)
		pod.Spec.Volumes = []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, {Name: "v", VolumeSource: vs}}
		return pod
	}
	n := reflect.TypeFor[corev1.VolumeSource]().NumField()
	check("no source", withSources())
	for i := range n {
		check(reflect.TypeFor[corev1.VolumeSource]().Field(i).Name, withSources(i))
		for j := i + 1; j < n; j++ {
			check("pair", withSources(i, j))
		}
	}

	withProjections := func(fields ...int) *corev1.Pod {
		var vp corev1.VolumeProjection
		v := reflect.ValueOf(&vp).Elem()
		for _, f := range fields {
			fv := v.Field(f)
			fv.Set(reflect.New(fv.Type().Elem()))
		}
		if vp.Secret != nil {
			vp.Secret.Name = "s"
		}
		if vp.ConfigMap != nil {
			vp.ConfigMap.Name = "cm"
		}
		pod := testPod("ns", "m", "mynode", true)
		pod.Spec.Volumes = []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{DownwardAPI: &corev1.DownwardAPIProjection{}}, vp},
		}}}}
		return pod
	}
	np := reflect.TypeFor[corev1.VolumeProjection]().NumField()
	check("empty projection", withProjections())
	for i := range np {
		check(reflect.TypeFor[corev1.VolumeProjection]().Field(i).Name, withProjections(i))
		for j := i + 1; j < np; j++ {
			check("projection pair", withProjections(i, j))
		}
	}

	ref := corev1.LocalObjectReference{Name: "x"}
	for name, change := range map[string]func(*corev1.PodSpec){
		"service account":     func(s *corev1.PodSpec) { s.ServiceAccountName = "sa" },
		"image pull secret":   func(s *corev1.PodSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{ref} },
		"unnamed pull secret": func(s *corev1.PodSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{{}} },
		"resource claim":      func(s *corev1.PodSpec) { s.ResourceClaims = []corev1.PodResourceClaim{{Name: "c"}} },
		"init env secret": func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Env: []corev1.EnvVar{{ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref}}}}}}
		},
		"env config map": func(s *corev1.PodSpec) {
			s.Containers = []corev1.Container{{Env: []corev1.EnvVar{{ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref}}}}}}
		},
		"env field ref": func(s *corev1.PodSpec) {
			s.Containers = []corev1.Container{{Env: []corev1.EnvVar{{ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{}}}}}}
		},
		"envFrom secret": func(s *corev1.PodSpec) {
			s.Containers = []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}}}}}
		},
		"envFrom unnamed": func(s *corev1.PodSpec) {
			s.Containers = []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}}}
		},
		"ephemeral envFrom map": func(s *corev1.PodSpec) {
			s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}}}}}}
		},
		"CSI publish secret": func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{NodePublishSecretRef: &ref}}}}
		},
		"StorageOS secret": func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{VolumeSource: corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{SecretRef: &ref}}}}
		},
		"many host paths": func(s *corev1.PodSpec) {
			s.Volumes = make([]corev1.Volume, 12)
			for i := range s.Volumes {
				s.Volumes[i].HostPath = &corev1.HostPathVolumeSource{}
			}
		},
		"secret after many paths": func(s *corev1.PodSpec) {
			s.Volumes = make([]corev1.Volume, 12)
			for i := range s.Volumes {
				s.Volumes[i].HostPath = &corev1.HostPathVolumeSource{}
			}
			s.Volumes[11] = corev1.Volume{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}
		},
	} {
		pod := testPod("ns", "m", "mynode", true)
		change(&pod.Spec)
		check(name, pod)
	}
}
