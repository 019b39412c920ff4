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
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// benchPod is a three-container pod of the size a Deployment typically makes.
func benchPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "web-7d9f8c6b5-", Namespace: testNamespace,
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5", "tier": "frontend"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-30T10:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5", UID: "3f2a"}},
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web"}}}},
				emptyDir("cache"),
			},
			ServiceAccountName: "web",
		},
	}
	for i := 0; i < 3; i++ {
		c := corev1.Container{
			Name:  fmt.Sprintf("c%d", i),
			Image: "registry.example.com/web:1.2.3",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080 + int32(i), Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
			VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web"}, {Name: "cache", MountPath: "/cache"}},
		}
		for j := 0; j < 5; j++ {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", j), Value: "value"})
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	return pod
}

func benchPreset(i int, selector metav1.LabelSelector) *settingsv1alpha1.PodPreset {
	name := fmt.Sprintf("preset-%02d", i)
	return podPreset(name, selector, settingsv1alpha1.PodPresetSpec{
		Env:          []corev1.EnvVar{{Name: fmt.Sprintf("P%d_A", i), Value: "a"}, {Name: fmt.Sprintf("P%d_B", i), Value: "b"}},
		EnvFrom:      []corev1.EnvFromSource{configMapEnv(name, "")},
		Volumes:      []corev1.Volume{emptyDir(name)},
		VolumeMounts: []corev1.VolumeMount{{Name: name, MountPath: "/presets/" + name}},
	})
}

func createAttributes(pod runtime.Object) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), testNamespace, "",
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{})
}

// The floor every figure is compared with.
func BenchmarkPodDeepCopy(b *testing.B) {
	pod := benchPod()
	b.ReportAllocs()
	for b.Loop() {
		_ = pod.DeepCopy()
	}
}

// 50 presets in the namespace, none selecting the pod: the common case on
// every pod create, decided without converting anything.
func BenchmarkAdmitNoMatchingPresets(b *testing.B) {
	var objs []runtime.Object
	for i := 0; i < 50; i++ {
		objs = append(objs, benchPreset(i, metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("other-%d", i)}}))
	}
	p, _ := newTestPlugin(b, objs...)
	attrs := createAttributes(benchPod())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Admit(ctx, attrs, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// Five presets selecting a three-container pod, each adding two env vars,
// an envFrom source, a volume and its mount. Each admission changes its
// pod, so pods are copied in batches outside the timer (stopping the timer
// for every pod would cost more than the admission).
func BenchmarkAdmitFiveMatchingPresets(b *testing.B) {
	var objs []runtime.Object
	for i := 0; i < 5; i++ {
		objs = append(objs, benchPreset(i, metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}))
	}
	p, _ := newTestPlugin(b, objs...)
	original := benchPod()
	ctx := context.Background()
	const batch = 256
	attrs := make([]admission.Attributes, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%batch == 0 {
			b.StopTimer()
			for j := range attrs {
				attrs[j] = createAttributes(original.DeepCopy())
			}
			b.StartTimer()
		}
		if err := p.Admit(ctx, attrs[i%batch], nil); err != nil {
			b.Fatal(err)
		}
	}
}
