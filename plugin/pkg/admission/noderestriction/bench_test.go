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
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
)

// benchPod is a pod of realistic size: two containers with environment,
// mounts and resources, a projected token volume and some status.
func benchPod(node string) *corev1.Pod {
	pod := testPod("ns", "mypod", node)
	pod.Labels = map[string]string{"app": "web", "tier": "frontend", "pod-template-hash": "5d8f7c9b6"}
	pod.Spec.ServiceAccountName = "default"
	for _, name := range []string{"app", "sidecar"} {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name:         name,
			Image:        "registry.example.com/" + name + ":1.2.3",
			Env:          []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/tokens"}},
		})
	}
	pod.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault"}}},
	}}}}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return pod
}

func benchValidate(b *testing.B, p *Plugin, attrs admission.Attributes) {
	b.Helper()
	ctx := context.Background()
	if err := p.Validate(ctx, attrs, nil); err != nil {
		b.Fatalf("the benchmarked request must be allowed: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Validate(ctx, attrs, nil)
	}
}

func BenchmarkValidate(b *testing.B) {
	pod := benchPod("mynode")
	benchOtherUsers(b, pod)
	benchNodeLabelUpdates(b, pod)
	benchPodUpdates(b, pod)
	benchNodeCreates(b, pod)
	benchDenied(b, pod)
	b.Run("baseline: v1 Pod DeepCopy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = pod.DeepCopy()
		}
	})
}

// benchOtherUsers times requests that are not a node's, with and without daemons configured.
func benchOtherUsers(b *testing.B, pod *corev1.Pod) {
	pods := []*corev1.Pod{pod}
	b.Run("non-node request", func(b *testing.B) {
		bob := &user.DefaultInfo{Name: "bob", Groups: []string{"system:authenticated"}}
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods})
		benchValidate(b, p, noderestrictiontest.Request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, bob))
	})

	// With node-scoped daemons configured, other users' requests must cost
	// what they cost without: a service account that is not listed costs
	// one map lookup more.
	b.Run("non-node request, daemons configured", func(b *testing.B) {
		bob := &user.DefaultInfo{Name: "bob", Groups: []string{"system:authenticated"}}
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods, Config: noderestrictiontest.DaemonConfig()})
		benchValidate(b, p, noderestrictiontest.Request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, bob))
	})
	b.Run("unlisted service account, daemons configured", func(b *testing.B) {
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods, Config: noderestrictiontest.DaemonConfig()})
		benchValidate(b, p, noderestrictiontest.Request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, noderestrictiontest.DaemonUser("kube-system", "other", "mynode")))
	})
}

// benchNodeLabelUpdates times a kubelet's and a daemon's update of their Node's labels.
func benchNodeLabelUpdates(b *testing.B, pod *corev1.Pod) {
	pods := []*corev1.Pod{pod}
	b.Run("node label update", func(b *testing.B) {
		old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode", Labels: map[string]string{
			"kubernetes.io/hostname": "mynode", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"topology.kubernetes.io/zone": "z1", "node.kubernetes.io/instance-type": "m5.large",
		}}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}}}
		node := old.DeepCopy()
		node.Labels["topology.kubernetes.io/zone"] = "z2"
		node.Labels["example.com/rack"] = "r7"
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods})
		benchValidate(b, p, noderestrictiontest.Request(node, old, kindNode, gvrNodes, "", "mynode", "", admission.Update, noderestrictiontest.UserMyNode))
	})

	// A node-scoped daemon's requests, to set beside the kubelet's.
	b.Run("daemon node label update", func(b *testing.B) {
		old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode", Labels: map[string]string{
			"kubernetes.io/hostname": "mynode", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"topology.kubernetes.io/zone": "z1", "node.kubernetes.io/instance-type": "m5.large",
		}}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}}}
		node := old.DeepCopy()
		node.Labels["feature.node.kubernetes.io/cpu-avx2"] = "true"
		node.Labels["example.com/rack"] = "r7"
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods, Config: noderestrictiontest.DaemonConfig()})
		benchValidate(b, p, noderestrictiontest.Request(node, old, kindNode, gvrNodes, "", "mynode", "", admission.Update, noderestrictiontest.DaemonUser("kube-system", "agent", "mynode")))
	})
}

// benchPodUpdates times a daemon's pod and pod status updates, and a kubelet's status update.
func benchPodUpdates(b *testing.B, pod *corev1.Pod) {
	pods := []*corev1.Pod{pod}
	b.Run("daemon pod update", func(b *testing.B) {
		updated := pod.DeepCopy()
		updated.Labels["agent.example.com/seen"] = "true"
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods, Config: noderestrictiontest.DaemonConfig()})
		benchValidate(b, p, noderestrictiontest.Request(updated, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, noderestrictiontest.DaemonUser("kube-system", "agent", "mynode")))
	})
	b.Run("daemon pod status update", func(b *testing.B) {
		updated := pod.DeepCopy()
		updated.Status.Conditions[0].Status = corev1.ConditionFalse
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods, Config: noderestrictiontest.DaemonConfig()})
		benchValidate(b, p, noderestrictiontest.Request(updated, pod, kindPod, gvrPods, "ns", "mypod", "status", admission.Update, noderestrictiontest.DaemonUser("kube-system", "agent", "mynode")))
	})

	b.Run("pod status update", func(b *testing.B) {
		updated := pod.DeepCopy()
		updated.Status.Conditions[0].Status = corev1.ConditionFalse
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods})
		benchValidate(b, p, noderestrictiontest.Request(updated, pod, kindPod, gvrPods, "ns", "mypod", "status", admission.Update, noderestrictiontest.UserMyNode))
	})
}

// benchNodeCreates times a kubelet's mirror pod create and token request.
func benchNodeCreates(b *testing.B, pod *corev1.Pod) {
	pods := []*corev1.Pod{pod}
	b.Run("mirror pod create", func(b *testing.B) {
		mirror := benchPod("mynode")
		mirror.Spec.ServiceAccountName = ""
		mirror.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/app"}}}}
		mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "true"}
		mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "mynode", UID: "mynode-uid", Controller: ptr.To(true)}}
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods})
		benchValidate(b, p, noderestrictiontest.Request(mirror, nil, kindPod, gvrPods, "ns", "mypod", "", admission.Create, noderestrictiontest.UserMyNode))
	})

	b.Run("token request", func(b *testing.B) {
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods, Inspect: true})
		benchValidate(b, p, noderestrictiontest.Request(&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences:      []string{"vault"},
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "mypod", UID: "pod-uid"},
		}}, nil, kindToken, gvrSAs, "ns", "default", "token", admission.Create, noderestrictiontest.UserMyNode))
	})
}

// benchDenied times a refusal.
func benchDenied(b *testing.B, pod *corev1.Pod) {
	pods := []*corev1.Pod{pod}
	// A refusal builds its error and counts its reason: the cost of a
	// denied request, next to the allowed ones above.
	b.Run("denied taint change", func(b *testing.B) {
		old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode"}}
		node := old.DeepCopy()
		node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}
		p := newCasePlugin(b, noderestrictiontest.Case{Pods: pods})
		attrs := noderestrictiontest.Request(node, old, kindNode, gvrNodes, "", "mynode", "", admission.Update, noderestrictiontest.UserMyNode)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if p.Validate(ctx, attrs, nil) == nil {
				b.Fatal("the taint change must be refused")
			}
		}
	})
}
