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
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	authenticationapi "k8s.io/kubernetes/pkg/apis/authentication"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
)

// TestSameDecisions holds the benchmark to comparing like with like: on
// the benchmarked requests and on denials of each rule they exercise, both
// plugins must decide alike, with the same error text.
func TestSameDecisions(t *testing.T) {
	other := storedPod()
	other.Name, other.UID, other.Spec.NodeName = "otherpod", "other-uid", "othernode"
	p := newPlugins(t, storedPod(), other, storedNode())

	shapes := hotShapes(t)
	hot := len(shapes)
	shapes = append(shapes, mirrorDenials(t)...)
	shapes = append(shapes, nodeDenials(t)...)
	shapes = append(shapes, statusDenials(t, other)...)
	shapes = append(shapes, tokenDenials()...)

	ctx := context.Background()
	denials := 0
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			want := errorText(p.upstream.Admit(ctx, s.attrs, objectInterfaces))
			got := errorText(p.admitkit.Validate(ctx, s.attrs, objectInterfaces))
			if got != want {
				t.Errorf("upstream: %s\nadmitkit: %s", want, got)
			}
			if want != "allowed" {
				denials++
			}
		})
	}
	if denials < len(shapes)-hot {
		t.Errorf("only %d of the %d extra requests were denied by upstream: the cases no longer test denials", denials, len(shapes)-hot)
	}
}

// mirrorDenials are mirror pod creates each rule of the mirror pod check
// refuses.
func mirrorDenials(t *testing.T) []shape {
	claim := "claim-1"
	mirror := func(change func(*corev1.Pod)) *api.Pod {
		m := mirrorPod()
		change(m)
		return internal[api.Pod](t, m)
	}
	mirrorCreate := func(name string, change func(*corev1.Pod)) shape {
		return shape{name, noderestrictiontest.Request(mirror(change), nil, podKind, podsResource, "ns", "static-web-mynode", "", admission.Create, myNode)}
	}
	return []shape{
		mirrorCreate("mirror pod with a secret volume", func(m *corev1.Pod) {
			m.Spec.Volumes = append(m.Spec.Volumes, corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}})
		}),
		mirrorCreate("mirror pod with a config map in its environment", func(m *corev1.Pod) {
			m.Spec.Containers[1].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}
		}),
		mirrorCreate("mirror pod with a secret key in an init container", func(m *corev1.Pod) {
			m.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "i", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}}}
		}),
		mirrorCreate("mirror pod with a projected token", func(m *corev1.Pod) {
			m.Spec.Volumes = storedPod().Spec.Volumes
		}),
		mirrorCreate("mirror pod with a PVC", func(m *corev1.Pod) {
			m.Spec.Volumes = append(m.Spec.Volumes, corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}})
		}),
		mirrorCreate("mirror pod with an ISCSI secret", func(m *corev1.Pod) {
			m.Spec.Volumes = append(m.Spec.Volumes, corev1.Volume{Name: "i", VolumeSource: corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{
				TargetPortal: "t:3260", IQN: "iqn.2001-04.com.example:storage", SecretRef: &corev1.LocalObjectReference{Name: "chap"}}}})
		}),
		mirrorCreate("mirror pod with an image pull secret", func(m *corev1.Pod) {
			m.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
		}),
		mirrorCreate("mirror pod with a resource claim", func(m *corev1.Pod) {
			m.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
		}),
		mirrorCreate("mirror pod for another node", func(m *corev1.Pod) { m.Spec.NodeName = "othernode" }),
		mirrorCreate("mirror pod with a stale node UID", func(m *corev1.Pod) { m.OwnerReferences[0].UID = "old-uid" }),
		mirrorCreate("mirror pod without a controller reference", func(m *corev1.Pod) { m.OwnerReferences[0].Controller = nil }),
		mirrorCreate("pod that is not a mirror pod", func(m *corev1.Pod) { m.Annotations = nil }),
	}
}

// nodeDenials are Node updates each rule of the node check refuses.
func nodeDenials(t *testing.T) []shape {
	oldNode := internal[api.Node](t, storedNode())
	nodeUpdate := func(name string, change func(*api.Node)) shape {
		n := oldNode.DeepCopy()
		change(n)
		return shape{name, noderestrictiontest.Request(n, oldNode, nodeKind, nodesResource, "", "mynode", "", admission.Update, myNode)}
	}
	return []shape{
		nodeUpdate("node adding a taint", func(n *api.Node) {
			n.Spec.Taints = append(n.Spec.Taints, api.Taint{Key: "k", Effect: api.TaintEffectNoExecute})
		}),
		nodeUpdate("node changing a taint's effect", func(n *api.Node) { n.Spec.Taints[0].Effect = api.TaintEffectNoExecute }),
		nodeUpdate("node stamping a taint", func(n *api.Node) { n.Spec.Taints[0].TimeAdded = &metav1.Time{} }),
		nodeUpdate("node setting a forbidden label", func(n *api.Node) { n.Labels["node-role.kubernetes.io/control-plane"] = "" }),
		nodeUpdate("node setting configSource", func(n *api.Node) {
			//lint:ignore SA1019 upstream still refuses a kubelet setting the removed DynamicKubeletConfig field
			n.Spec.ConfigSource = &api.NodeConfigSource{ConfigMap: &api.ConfigMapNodeConfigSource{Namespace: "kube-system", Name: "c", KubeletConfigKey: "k"}}
		}),
		nodeUpdate("node changing its owner references", func(n *api.Node) {
			n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "x", UID: "x"}}
		}),
	}
}

// statusDenials are pod status updates each rule of the status check
// refuses, on the stored pod and on other, another node's.
func statusDenials(t *testing.T, other *corev1.Pod) []shape {
	pod := internal[api.Pod](t, storedPod())
	otherPod := internal[api.Pod](t, other)
	claim := "claim-1"
	quantity := resource.MustParse("1")
	statusUpdate := func(name string, old *api.Pod, change func(*api.Pod)) shape {
		n := old.DeepCopy()
		change(n)
		return shape{name, noderestrictiontest.Request(n, old, podKind, podsResource, "ns", old.Name, "status", admission.Update, myNode)}
	}
	return []shape{
		statusUpdate("pod status changing labels", pod, func(p *api.Pod) { p.Labels["app"] = "db" }),
		statusUpdate("pod status of another node's pod", otherPod, func(p *api.Pod) { p.Status.Phase = api.PodFailed }),
		statusUpdate("pod status adding a resource claim status", pod, func(p *api.Pod) {
			p.Status.ResourceClaimStatuses = []api.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &claim}}
		}),
		statusUpdate("pod status adding an extended resource claim status", pod, func(p *api.Pod) {
			p.Status.ExtendedResourceClaimStatus = &api.PodExtendedResourceClaimStatus{ResourceClaimName: claim}
		}),
		statusUpdate("pod status adding a node allocatable claim status", pod, func(p *api.Pod) {
			p.Status.NodeAllocatableResourceClaimStatuses = []api.NodeAllocatableResourceClaimStatus{{
				ResourceClaimName: claim, Mapping: []api.NodeAllocatableMappedResources{{Name: "cpu", Quantity: &quantity}}}}
		}),
	}
}

// tokenDenials are token requests each rule of the token check refuses.
func tokenDenials() []shape {
	token := func(name string, podName, uid string, audiences ...string) shape {
		return shape{name, noderestrictiontest.Request(tokenRequest(podName, uid, audiences...), nil, tokenKind, saResource, "ns", "default", "token", admission.Create, myNode)}
	}
	return []shape{
		token("token for another node's pod", "otherpod", "other-uid", "vault"),
		token("token for a recreated pod", "mypod", "old-uid", "vault"),
		token("token for an audience the pod does not use", "mypod", "pod-uid", "elsewhere"),
		token("token for two audiences", "mypod", "pod-uid", "vault", "api"),
		token("token for a missing pod", "nopod", "no-uid"),
		shape{"token not bound to a pod", noderestrictiontest.Request(func() *authenticationapi.TokenRequest {
			tr := tokenRequest("mypod", "pod-uid")
			tr.Spec.BoundObjectRef = nil
			return tr
		}(), nil, tokenKind, saResource, "ns", "default", "token", admission.Create, myNode)},
	}
}

func errorText(err error) string {
	if err == nil {
		return "allowed"
	}
	return fmt.Sprintf("%T: %v", err, err)
}
