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

package apiserver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/controller"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/plugin/webhook/offline"
)

// TestPodTemplateHashIsUpstreams: offline's pod-template-hash, which the
// root module computes without k8s.io/kubernetes, is the deployment
// controller's (controller.ComputeHash) for templates of every shape a
// hash reads differently: empty, maps (printed with sorted keys), nested
// pointers, quantities (printed by their fields), and with and without a
// collision count.
func TestPodTemplateHashIsUpstreams(t *testing.T) {
	web := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "web", "tier": "front", "a": "1"},
			Annotations: map[string]string{"z": "last", "b": "second"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: "nginx:1.27",
				Env: []corev1.EnvVar{{Name: "A", Value: "a"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.25")},
				},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532)},
			}},
			Volumes:                       []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			NodeSelector:                  map[string]string{"kubernetes.io/os": "linux"},
		},
	}
	for _, tc := range []struct {
		name      string
		template  corev1.PodTemplateSpec
		collision *int32
	}{
		{name: "empty"},
		{name: "web", template: web},
		{name: "web, collision 0", template: web, collision: ptr.To[int32](0)},
		{name: "web, collision 7", template: web, collision: ptr.To[int32](7)},
		{name: "one label", template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := controller.ComputeHash(&tc.template, tc.collision)
			if got := offline.PodTemplateHash(&tc.template, tc.collision); got != want {
				t.Errorf("PodTemplateHash = %q, controller.ComputeHash = %q", got, want)
			}
		})
	}
}
