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

package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Pod is a pod with labels and one container per name, each running the
// image registry.example.com/<name>:1.
func Pod(name string, labels map[string]string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "registry.example.com/" + c + ":1"})
	}
	return pod
}

// MirrorPod is the mirror pod a kubelet creates for its static pod name on
// the node nodeName whose UID is nodeUID.
func MirrorPod(name, nodeName string, nodeUID types.UID) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "hash"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID, Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/static:1"}},
		},
	}
}

// AnnotationMutator is an AssignMetadata adding annotation key=value to
// the pods of one namespace.
func AnnotationMutator(t testing.TB, name, namespace, key, value string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata:
  name: `+name+`
spec:
  match:
    scope: Namespaced
    kinds:
    - apiGroups: [""]
      kinds: ["Pod"]
    namespaces: ["`+namespace+`"]
  location: "metadata.annotations.`+key+`"
  parameters:
    assign:
      value: "`+value+`"
`), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}
