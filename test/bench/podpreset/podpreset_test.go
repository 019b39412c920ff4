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

// Package podpreset measures the PodPreset plugin on what kube-apiserver
// hands it: internal pods and the server's scheme, next to the whole-pod
// conversions it costs, so that its share of a pod create can be told
// apart from the conversions'.
package podpreset

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsfake "github.com/admitkit/admitkit/generated/clientset/versioned/fake"
	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
	"github.com/admitkit/admitkit/plugin/initializer"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
)

const namespace = "load"

var objectInterfaces = admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme)

// v1Pod is the integration load's pod: two containers, defaulted as the
// API server defaults a pod it decodes.
func v1Pod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "load-", Namespace: namespace, Labels: map[string]string{"app": "load"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "registry.example.com/app:1.0"},
			{Name: "sidecar", Image: "registry.example.com/sidecar:1.0"},
		}},
	}
	legacyscheme.Scheme.Default(pod)
	return pod
}

func internalPod(b *testing.B) *api.Pod {
	out := &api.Pod{}
	if err := legacyscheme.Scheme.Convert(v1Pod(), out, nil); err != nil {
		b.Fatal(err)
	}
	return out
}

// newPlugin serves the five presets of the integration load: three
// PodPresets and two ClusterPodPresets.
func newPlugin(b *testing.B) *podpreset.Plugin {
	var objs []runtime.Object
	for i := range 3 {
		pp := &settingsv1alpha1.PodPreset{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%d", i), Namespace: namespace, ResourceVersion: "1"},
			Spec: settingsv1alpha1.PodPresetSpec{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "load"}},
				Env:      []corev1.EnvVar{{Name: fmt.Sprintf("LOAD_%d", i), Value: "yes"}},
			},
		}
		if i == 0 {
			pp.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			pp.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		}
		objs = append(objs, pp)
	}
	for i := 3; i < 5; i++ {
		objs = append(objs, &settingsv1alpha1.ClusterPodPreset{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%d", i), ResourceVersion: "1"},
			Spec: settingsv1alpha1.ClusterPodPresetSpec{
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"load": namespace}},
				PodPresetSpec:     settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: fmt.Sprintf("LOAD_%d", i), Value: "yes"}}},
			},
		})
	}
	kube := kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{"load": namespace}}})
	settingsFactory := settingsinformers.NewSharedInformerFactory(settingsfake.NewSimpleClientset(objs...), 0)
	kubeFactory := informers.NewSharedInformerFactory(kube, 0)
	p := podpreset.NewPlugin()
	initializer.New(settingsFactory).Initialize(p)
	p.SetDrainedNotification(b.Context().Done())
	p.SetExternalKubeInformerFactory(kubeFactory)
	p.SetExternalKubeClientSet(kube)
	if err := admission.ValidateInitialization(p); err != nil {
		b.Fatal(err)
	}
	settingsFactory.Start(b.Context().Done())
	kubeFactory.Start(b.Context().Done())
	deadline := time.Now().Add(10 * time.Second)
	for {
		pod := internalPod(b)
		err := p.Admit(context.Background(), attributes(pod), objectInterfaces)
		if err == nil && len(pod.Annotations) == 5 {
			return p
		}
		if time.Now().After(deadline) {
			b.Fatalf("presets never applied: %v %v", err, pod.Annotations)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func attributes(pod runtime.Object) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), namespace, "",
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{})
}

// BenchmarkInternalPod admits the load's pod as kube-apiserver does, beside
// the two whole-pod conversions that admission of an internal pod implies
// and a DeepCopy of the internal pod. Pods are prepared in batches outside
// the timer, since admission changes them.
func BenchmarkInternalPod(b *testing.B) {
	b.Run("admit", func(b *testing.B) {
		p := newPlugin(b)
		const batch = 256
		attrs := make([]admission.Attributes, batch)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%batch == 0 {
				b.StopTimer()
				for j := range attrs {
					attrs[j] = attributes(internalPod(b))
				}
				b.StartTimer()
			}
			if err := p.Admit(context.Background(), attrs[i%batch], objectInterfaces); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("convert-to-v1-and-back", func(b *testing.B) {
		pod := internalPod(b)
		b.ReportAllocs()
		for b.Loop() {
			v1 := &corev1.Pod{}
			if err := legacyscheme.Scheme.Convert(pod, v1, nil); err != nil {
				b.Fatal(err)
			}
			if err := legacyscheme.Scheme.Convert(v1, &api.Pod{}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("internal-deepcopy", func(b *testing.B) {
		pod := internalPod(b)
		b.ReportAllocs()
		for b.Loop() {
			_ = pod.DeepCopy()
		}
	})
}
