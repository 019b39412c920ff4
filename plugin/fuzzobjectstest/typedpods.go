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

package fuzzobjectstest

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TypedObject is a Deployment one time in three, else a Pod, in namespace
// default, with the fields Mutators' locations favour.
func TypedObject(s *Source) runtime.Object {
	if s.Next(3) == 0 {
		d := &appsv1.Deployment{ObjectMeta: typedMeta(s)}
		if s.Next(2) == 0 {
			r := int32(s.Next(3))
			d.Spec.Replicas = &r
		}
		d.Spec.Template.ObjectMeta = typedMeta(s)
		d.Spec.Template.Spec = typedPodSpec(s)
		return d
	}
	return TypedPod(s)
}

// TypedPod is a pod named web (or generated from web-) in namespace
// default, with up to three containers named app, proxy, sidecar or "",
// images, pull policies, args, env, ports and security contexts.
func TypedPod(s *Source) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: typedMeta(s), Spec: typedPodSpec(s)}
}

func typedContainer(s *Source) corev1.Container {
	c := corev1.Container{Name: []string{"app", "proxy", "sidecar", ""}[s.Next(4)]}
	if s.Next(2) == 0 {
		c.Image = []string{"nginx:1.27", "docker.io/fluent/fluent-bit:3", "r.io/lib/app:v1", "envoy"}[s.Next(4)]
	}
	if s.Next(3) == 0 {
		c.ImagePullPolicy = corev1.PullIfNotPresent
	}
	switch s.Next(4) {
	case 0:
		c.Args = []string{"--v=2", "-x"}[:s.Next(3)]
	case 1:
		c.Args = []string{}
	}
	for i := s.Next(3); i > 0; i-- {
		e := corev1.EnvVar{Name: []string{"A", "B", "app"}[s.Next(3)]}
		if s.Next(2) == 0 {
			e.Value = "v"
		}
		c.Env = append(c.Env, e)
	}
	for i := s.Next(3); i > 0; i-- {
		c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: []int32{80, 8080, 0}[s.Next(3)], Name: []string{"", "http"}[s.Next(2)]})
	}
	if s.Next(3) == 0 {
		c.SecurityContext = &corev1.SecurityContext{}
		if s.Next(2) == 0 {
			f := false
			c.SecurityContext.AllowPrivilegeEscalation = &f
		}
	}
	return c
}

func typedPodSpec(s *Source) corev1.PodSpec {
	var spec corev1.PodSpec
	for i := s.Next(4); i > 0; i-- {
		spec.Containers = append(spec.Containers, typedContainer(s))
	}
	if s.Next(3) == 0 {
		spec.InitContainers = []corev1.Container{typedContainer(s)}
	}
	if s.Next(3) == 0 {
		spec.SecurityContext = &corev1.PodSecurityContext{}
		if s.Next(2) == 0 {
			t := true
			spec.SecurityContext.RunAsNonRoot = &t
		}
	}
	if s.Next(3) == 0 {
		g := int64(s.Next(3) * 15)
		spec.TerminationGracePeriodSeconds = &g
	}
	if s.Next(4) == 0 {
		spec.NodeSelector = map[string]string{"app": "x"}
	}
	if s.Next(4) == 0 {
		spec.Hostname = "h"
	}
	return spec
}

func typedMeta(s *Source) metav1.ObjectMeta {
	om := metav1.ObjectMeta{Name: []string{"web", ""}[s.Next(2)], Namespace: "default"}
	if om.Name == "" {
		om.GenerateName = "web-"
	}
	if s.Next(2) == 0 {
		om.Labels = map[string]string{"app": "web"}
	}
	if s.Next(3) == 0 {
		om.Annotations = map[string]string{"owner": ""}
	}
	return om
}
