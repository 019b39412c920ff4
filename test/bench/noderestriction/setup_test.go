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

// Package noderestriction compares admitkit's NodeRestriction with
// Kubernetes' own on the internal objects kube-apiserver hands admission,
// in one test binary: the same requests, listers, feature gates and
// scheme for both.
package noderestriction

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	authenticationapi "k8s.io/kubernetes/pkg/apis/authentication"
	_ "k8s.io/kubernetes/pkg/apis/authentication/install"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	"k8s.io/kubernetes/pkg/auth/nodeidentifier"
	_ "k8s.io/kubernetes/pkg/features" // registers Kubernetes' gates in the default gate
	upstream "k8s.io/kubernetes/plugin/pkg/admission/noderestriction"

	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
	admitkit "github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

var (
	myNode = &user.DefaultInfo{Name: "system:node:mynode", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	bob    = &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}

	podsResource  = corev1.SchemeGroupVersion.WithResource("pods")
	nodesResource = corev1.SchemeGroupVersion.WithResource("nodes")
	saResource    = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	podKind       = corev1.SchemeGroupVersion.WithKind("Pod")
	nodeKind      = corev1.SchemeGroupVersion.WithKind("Node")
	tokenKind     = schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}

	// objectInterfaces is what kube-apiserver's handlers pass admission.
	objectInterfaces = admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme)
)

// noOpinion answers every authorizer question with no opinion, so that an
// audience no pod uses is refused by both plugins alike.
type noOpinion struct{}

func (noOpinion) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "", nil
}

// plugins is one of each plugin, initialized the way kube-apiserver's
// admission initializers do, over the same informers.
type plugins struct {
	upstream admission.MutationInterface
	admitkit admission.ValidationInterface
	// daemons is admitkit's plugin with node-scoped service accounts
	// configured (noderestrictiontest.DaemonConfig).
	daemons admission.ValidationInterface
}

func newPlugins(t testing.TB, objs ...runtime.Object) plugins {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *corev1.Pod:
			err = factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *corev1.Node:
			err = factory.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		default:
			t.Fatalf("no informer for %T", obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	up := upstream.NewPlugin(nodeidentifier.NewDefaultNodeIdentifier())
	up.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	up.SetExternalKubeInformerFactory(factory)
	up.SetUnconditionalAuthorizer(noOpinion{})
	if err := up.ValidateInitialization(); err != nil {
		t.Fatalf("upstream: %v", err)
	}

	ours := newAdmitkit(t, factory, nil)
	daemons := newAdmitkit(t, factory, noderestrictiontest.DaemonConfig())
	return plugins{upstream: up, admitkit: ours, daemons: daemons}
}

func newAdmitkit(t testing.TB, factory informers.SharedInformerFactory, cfg *v1alpha1.Configuration) *admitkit.Plugin {
	t.Helper()
	ours, err := admitkit.NewPlugin(admitkit.NewDefaultNodeIdentifier(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ours.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	ours.SetExternalKubeInformerFactory(factory)
	ours.SetUnconditionalAuthorizer(noOpinion{})
	if err := ours.ValidateInitialization(); err != nil {
		t.Fatalf("admitkit: %v", err)
	}
	return ours
}

// internal defaults a versioned object and converts it to its internal
// type, as kube-apiserver's decoder does with a request body.
func internal[T any, PT interface {
	*T
	runtime.Object
}](t testing.TB, versioned runtime.Object) PT {
	t.Helper()
	versioned = versioned.DeepCopyObject()
	legacyscheme.Scheme.Default(versioned)
	out := PT(new(T))
	if err := legacyscheme.Scheme.Convert(versioned, out, nil); err != nil {
		t.Fatalf("converting %T to %T: %v", versioned, out, err)
	}
	return out
}

// storedPod is the pod the lister holds: a realistic workload on mynode,
// two containers with environment and mounts, a projected token for the
// "vault" audience and some status.
func storedPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "mypod", UID: "pod-uid",
			Labels: map[string]string{"app": "web", "tier": "frontend", "pod-template-hash": "5d8f7c9b6"},
		},
		Spec: corev1.PodSpec{NodeName: "mynode", ServiceAccountName: "default"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, name := range []string{"app", "sidecar"} {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name:  name,
			Image: "registry.example.com/" + name + ":1.2.3",
			Env: []corev1.EnvVar{
				{Name: "MODE", Value: "production"},
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/tokens"}},
		})
	}
	pod.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token"}}},
	}}}}
	return pod
}

func storedNode() *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "mynode", UID: "mynode-uid", Labels: map[string]string{
			"kubernetes.io/hostname": "mynode", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"topology.kubernetes.io/zone": "z1", "node.kubernetes.io/instance-type": "m5.large",
		}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}, ProviderID: "aws:///z1/i-0abc",
			Taints: []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}},
	}
	// A kubelet's status as it reports it every few seconds.
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	node.Status = corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}, {Type: corev1.NodeHostName, Address: "mynode"}},
		NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.1.0"},
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficient", Message: "kubelet is posting status"})
	}
	for i := range 20 {
		node.Status.Images = append(node.Status.Images, corev1.ContainerImage{
			Names: []string{fmt.Sprintf("registry.example.com/app-%d@sha256:%064d", i, i), fmt.Sprintf("registry.example.com/app-%d:1.%d", i, i)}, SizeBytes: int64(i+1) << 24,
		})
	}
	return node
}

// mirrorPod is a static pod's mirror as the kubelet posts it: owned by
// mynode, host-path config, no API references.
func mirrorPod() *corev1.Pod {
	pod := storedPod()
	pod.Name, pod.UID = "static-web-mynode", ""
	pod.Spec.ServiceAccountName = ""
	pod.Status = corev1.PodStatus{}
	pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Node", Name: "mynode", UID: "mynode-uid", Controller: ptrTo(true),
	}}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}}
	}
	pod.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/app"}}}}
	return pod
}

func ptrTo[T any](v T) *T { return &v }

func tokenRequest(podName, podUID string, audiences ...string) *authenticationapi.TokenRequest {
	return &authenticationapi.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default"},
		Spec: authenticationapi.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: 3600,
			BoundObjectRef:    &authenticationapi.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: podName, UID: types.UID(podUID)},
		},
	}
}

// shape is one request benchmarked and compared.
type shape struct {
	name  string
	attrs admission.Attributes
}

// hotShapes are the six requests the speed target names, all allowed.
func hotShapes(t testing.TB) []shape {
	t.Helper()
	pod := internal[api.Pod](t, storedPod())
	updated := pod.DeepCopy()
	updated.Status.Conditions[0].Status = api.ConditionFalse

	oldNode := internal[api.Node](t, storedNode())
	node := oldNode.DeepCopy()
	node.Labels["topology.kubernetes.io/zone"] = "z2"
	node.Labels["example.com/rack"] = "r7"

	statusNode := oldNode.DeepCopy()
	statusNode.Status.Conditions[3].Status = api.ConditionTrue
	statusNode.Status.Conditions[3].LastHeartbeatTime = metav1.Now()

	return []shape{
		{"non-node-request", noderestrictiontest.Request(updated, pod, podKind, podsResource, "ns", "mypod", "", admission.Update, bob)},
		{"node-label-update", noderestrictiontest.Request(node, oldNode, nodeKind, nodesResource, "", "mynode", "", admission.Update, myNode)},
		{"node-status-update", noderestrictiontest.Request(statusNode, oldNode, nodeKind, nodesResource, "", "mynode", "status", admission.Update, myNode)},
		{"pod-status-update", noderestrictiontest.Request(updated, pod, podKind, podsResource, "ns", "mypod", "status", admission.Update, myNode)},
		{"mirror-pod-create", noderestrictiontest.Request(internal[api.Pod](t, mirrorPod()), nil, podKind, podsResource, "ns", "static-web-mynode", "", admission.Create, myNode)},
		{"token-request", noderestrictiontest.Request(tokenRequest("mypod", "pod-uid", "vault"), nil, tokenKind, saResource, "ns", "default", "token", admission.Create, myNode)},
	}
}
