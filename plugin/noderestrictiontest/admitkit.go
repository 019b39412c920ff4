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

package noderestrictiontest

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

// Admitkit is admitkit's own cases: requests in the other served versions,
// requests Kubernetes' tests do not make, and the allowances and
// node-scoped service accounts of a configuration (the only cases
// Kubernetes' plugin cannot judge).
func Admitkit() []Case {
	var cases []Case
	for _, group := range [][]Case{servedVersionCases(), otherRequestCases(), allowanceCases(), daemonCases(), daemonReachCases()} {
		cases = append(cases, group...)
	}
	return cases
}

// servedVersionCases send requests in the other versions a node may use.
func servedVersionCases() []Case {
	pods := podList(newPod("ns", "mypod", "mynode", false), newPod("ns", "otherpod", "othernode", false))
	evictionBeta := func(name string) *policyv1beta1.Eviction {
		return &policyv1beta1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	kindEvictionBeta := policyv1beta1.SchemeGroupVersion.WithKind("Eviction")
	csrBeta := func(cn string, signer *string) *certificatesv1beta1.CertificateSigningRequest {
		return &certificatesv1beta1.CertificateSigningRequest{Spec: certificatesv1beta1.CertificateSigningRequestSpec{Request: csrPEM(cn, true), SignerName: signer}}
	}
	kindCSRBeta := certificatesv1beta1.SchemeGroupVersion.WithKind("CertificateSigningRequest")
	sliceBeta1 := func(node string) *resourcev1beta1.ResourceSlice {
		return &resourcev1beta1.ResourceSlice{Spec: resourcev1beta1.ResourceSliceSpec{NodeName: node}}
	}
	sliceBeta2 := func(node *string) *resourcev1beta2.ResourceSlice {
		return &resourcev1beta2.ResourceSlice{Spec: resourcev1beta2.ResourceSliceSpec{NodeName: node}}
	}
	leaseBeta := &coordinationv1beta1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: "mynode"}}
	leaseBetaOther := &coordinationv1beta1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: "othernode"}}
	gvrSlicesBeta := schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1beta1", Resource: "resourceslices"}

	// A v1 PodCertificateRequest, the GA version.
	pcrV1 := &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "foo"}, Spec: certificatesv1.PodCertificateRequestSpec{
		SignerName: "example.com/foo", PodName: "pcrpod", PodUID: "pod-uid", ServiceAccountName: "pcr-sa", ServiceAccountUID: "pcr-sa-uid", NodeName: "othernode", NodeUID: "x",
	}}

	return []Case{
		{Name: "policy/v1beta1 eviction of my pod", Pods: pods, Attrs: Request(evictionBeta("mypod"), nil, kindEvictionBeta, gvrPods, "ns", "mypod", "eviction", admission.Create, UserMyNode)},
		{Name: "policy/v1beta1 eviction of another node's pod", Pods: pods, Err: "node mynode can only evict pods with spec.nodeName set to itself",
			Attrs: Request(evictionBeta("otherpod"), nil, kindEvictionBeta, gvrPods, "ns", "otherpod", "eviction", admission.Create, UserMyNode)},
		{Name: "policy/v1beta1 eviction naming the pod in the body", Pods: pods,
			Attrs: Request(evictionBeta("mypod"), nil, kindEvictionBeta, gvrPods, "ns", "", "eviction", admission.Create, UserMyNode)},
		{Name: "eviction body of the wrong type", Pods: pods, Err: "unexpected type *v1.Pod",
			Attrs: Request(newPod("ns", "mypod", "mynode", false), nil, kindEvictionBeta, gvrPods, "ns", "mypod", "eviction", admission.Create, UserMyNode)},
		{Name: "certificates/v1beta1 CSR without signer", Attrs: Request(csrBeta("system:node:othernode", nil), nil, kindCSRBeta, gvrCSRs, "", "", "", admission.Create, UserMyNode)},
		{Name: "certificates/v1beta1 CSR for another node", Err: "can only create a node CSR with CN=system:node:mynode",
			Attrs: Request(csrBeta("system:node:othernode", ptr.To(certificatesv1beta1.KubeletServingSignerName)), nil, kindCSRBeta, gvrCSRs, "", "", "", admission.Create, UserMyNode)},
		{Name: "certificates/v1beta1 CSR for my node", Attrs: Request(csrBeta("system:node:mynode", ptr.To(certificatesv1beta1.KubeAPIServerClientKubeletSignerName)), nil, kindCSRBeta, gvrCSRs, "", "", "", admission.Create, UserMyNode)},
		{Name: "resource/v1beta1 slice without node", Err: "can only create ResourceSlice with the same NodeName",
			Attrs: Request(sliceBeta1(""), nil, schema.GroupVersionKind{}, gvrSlicesBeta, "", "s", "", admission.Create, UserMyNode)},
		{Name: "resource/v1beta1 slice for my node", Attrs: Request(sliceBeta1("mynode"), nil, schema.GroupVersionKind{}, gvrSlicesBeta, "", "s", "", admission.Create, UserMyNode)},
		{Name: "resource/v1beta1 slice of another node deleted", Err: "can only delete ResourceSlice with the same NodeName",
			Attrs: Request(nil, sliceBeta1("othernode"), schema.GroupVersionKind{}, gvrSlicesBeta, "", "s", "", admission.Delete, UserMyNode)},
		{Name: "resource/v1beta2 slice for my node", Attrs: Request(sliceBeta2(ptr.To("mynode")), nil, schema.GroupVersionKind{}, gvrSlices, "", "s", "", admission.Create, UserMyNode)},
		{Name: "resource/v1beta2 slice without node", Err: "can only create ResourceSlice", Attrs: Request(sliceBeta2(nil), nil, schema.GroupVersionKind{}, gvrSlices, "", "s", "", admission.Create, UserMyNode)},
		{Name: "coordination/v1beta1 lease of my node", Attrs: Request(leaseBeta, nil, schema.GroupVersionKind{}, gvrLeases, corev1.NamespaceNodeLease, "", "", admission.Create, UserMyNode)},
		{Name: "coordination/v1beta1 lease of another node", Err: "can only access node lease with the same name as the requesting node",
			Attrs: Request(leaseBetaOther, nil, schema.GroupVersionKind{}, gvrLeases, corev1.NamespaceNodeLease, "", "", admission.Create, UserMyNode)},
		{Name: "certificates/v1 PodCertificateRequest for another node", Gates: map[string]bool{},
			Err:   `PodCertificateRequest.Spec.NodeName="othernode", which is not the requesting node "mynode"`,
			Attrs: Request(pcrV1, nil, certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"), certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests"), "ns", "foo", "", admission.Create, UserMyNode)},
	}
}

// otherRequestCases are requests Kubernetes' tests do not make.
func otherRequestCases() []Case {
	pod := newPod("ns", "mypod", "mynode", false)
	pods := podList(pod)
	nameless := &user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}
	impostor := &user.DefaultInfo{Name: "system:node:mynode"}
	groupOnly := &user.DefaultInfo{Name: "mynode", Groups: []string{user.NodesGroup}}
	return []Case{
		{Name: "pods/resize", Pods: pods, Err: `unexpected pod subresource "resize", only 'status' and 'eviction' are allowed`,
			Attrs: Request(pod, pod, kindPod, gvrPods, "ns", "mypod", "resize", admission.Update, UserMyNode)},
		{Name: "pods/binding", Pods: pods, Err: `unexpected pod subresource "binding"`,
			Attrs: Request(pod, nil, kindPod, gvrPods, "ns", "mypod", "binding", admission.Create, UserMyNode)},
		{Name: "pods/ephemeralcontainers", Pods: pods, Err: `unexpected pod subresource "ephemeralcontainers"`,
			Attrs: Request(pod, pod, kindPod, gvrPods, "ns", "mypod", "ephemeralcontainers", admission.Update, UserMyNode)},
		{Name: "node user without a name", Err: `could not determine node from user "system:node:"`,
			Attrs: Request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, nameless)},
		{Name: "node name without the nodes group is no node", Attrs: Request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, impostor)},
		{Name: "nodes group without a node name is no node", Attrs: Request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, groupOnly)},
		{Name: "no user at all", Attrs: Request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, nil)},
		{Name: "PVC delete", Err: "may only update PVC status", Attrs: Request(nil, nil, schema.GroupVersionKind{}, gvrPVCs, "ns", "c", "", admission.Delete, UserMyNode)},
		{Name: "PVC status create", Err: `unexpected operation "CREATE"`, Attrs: Request(testPVC("", "1G", nil), nil, schema.GroupVersionKind{}, gvrPVCs, "ns", "c", "status", admission.Create, UserMyNode)},
		{Name: "PVC status update adding a label", Err: "is not allowed to update fields other than status.quantity and status.conditions",
			Attrs: Request(func() *corev1.PersistentVolumeClaim {
				c := testPVC("", "1G", nil)
				c.Labels = map[string]string{"a": "b"}
				return c
			}(), testPVC("", "1G", nil),
				schema.GroupVersionKind{}, gvrPVCs, "ns", "c", "status", admission.Update, UserMyNode)},
		{Name: "service account update passes", Attrs: Request(&corev1.ServiceAccount{}, &corev1.ServiceAccount{}, schema.GroupVersionKind{}, gvrSAs, "ns", "mysa", "", admission.Update, UserMyNode)},
		{Name: "token request of the wrong type", Err: "unexpected type *v1.Pod", Attrs: Request(pod, nil, kindToken, gvrSAs, "ns", "mysa", "token", admission.Create, UserMyNode)},
		{Name: "PodCertificateRequest update", Gates: map[string]bool{}, Err: "unexpected operation UPDATE",
			Attrs: Request(nil, nil, schema.GroupVersionKind{}, gvrPCRs, "ns", "foo", "", admission.Update, UserMyNode)},
		{Name: "PodCertificateRequest status", Gates: map[string]bool{}, Err: "unexpected subresource status",
			Attrs: Request(nil, nil, schema.GroupVersionKind{}, gvrPCRs, "ns", "foo", "status", admission.Create, UserMyNode)},
		{Name: "CSINode status create", Gates: map[string]bool{gateCSIVolumeHealth: true}, Err: `unexpected operation "CREATE"`,
			Attrs: Request(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode"}}, nil, schema.GroupVersionKind{}, gvrCSINodes, "", "mynode", "status", admission.Create, UserMyNode)},
		{Name: "mirror pod with an unknown volume type", Err: `error checking mirror pod for API references: unknown volume type for volume  "v"`,
			Attrs: Request(func() *corev1.Pod {
				p := newPod("ns", "m", "mynode", true)
				p.Spec.Volumes = []corev1.Volume{{Name: "v"}}
				return p
			}(), nil, kindPod, gvrPods, "ns", "m", "", admission.Create, UserMyNode)},
		{Name: "mirror pod with an image pull secret", Err: "can not create pods that reference secrets",
			Attrs: Request(func() *corev1.Pod {
				p := newPod("ns", "m", "mynode", true)
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
				return p
			}(), nil, kindPod, gvrPods, "ns", "m", "", admission.Create, UserMyNode)},
		{Name: "mirror pod with an ephemeral container config map", Err: "can not create pods that reference configmaps",
			Attrs: Request(func() *corev1.Pod {
				p := newPod("ns", "m", "mynode", true)
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
				}}}
				return p
			}(), nil, kindPod, gvrPods, "ns", "m", "", admission.Create, UserMyNode)},
		{Name: "mirror pod with a downward API and an empty dir", Attrs: Request(func() *corev1.Pod {
			p := newPod("ns", "m", "mynode", true)
			p.Spec.Volumes = []corev1.Volume{
				{Name: "d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{DownwardAPI: &corev1.DownwardAPIProjection{}}}}}},
				{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			}
			return p
		}(), nil, kindPod, gvrPods, "ns", "m", "", admission.Create, UserMyNode)},
	}
}

// allowanceCases judge the allowances a configuration grants.
func allowanceCases() []Case {
	cfg := &v1alpha1.Configuration{
		TypeMeta:             metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind},
		AllowedLabels:        []string{"node-role.kubernetes.io/worker"},
		AllowedLabelPrefixes: []string{"team.k8s.io/"},
		AllowedTaintKeys:     []string{"example.com/maintenance"},
	}
	node := func(labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode", Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	maint := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}
	maintExec := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoExecute}
	other := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	update := func(name string, config *v1alpha1.Configuration, obj, old *corev1.Node, err string) Case {
		return Case{Name: name, Config: config, Err: err, Attrs: Request(obj, old, kindNode, gvrNodes, "", "mynode", "", admission.Update, UserMyNode)}
	}
	register := func(name string, config *v1alpha1.Configuration, obj *corev1.Node, err string) Case {
		return Case{Name: name, Config: config, Err: err, Attrs: Request(obj, nil, kindNode, gvrNodes, "", "mynode", "", admission.Create, UserMyNode)}
	}
	return []Case{
		update("listed label added", cfg, node(map[string]string{"node-role.kubernetes.io/worker": ""}), node(nil), ""),
		update("listed label removed", cfg, node(nil), node(map[string]string{"node-role.kubernetes.io/worker": ""}), ""),
		update("listed label without configuration", nil, node(map[string]string{"node-role.kubernetes.io/worker": ""}), node(nil),
			"is not allowed to modify labels: node-role.kubernetes.io/worker"),
		update("label under a listed prefix", cfg, node(map[string]string{"team.k8s.io/owner": "a"}), node(map[string]string{"team.k8s.io/owner": "b"}), ""),
		update("prefix does not cover subdomains", cfg, node(map[string]string{"x.team.k8s.io/owner": "a"}), node(nil),
			"is not allowed to modify labels: x.team.k8s.io/owner"),
		update("unlisted label next to a listed one", cfg, node(map[string]string{"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": ""}), node(nil),
			"is not allowed to modify labels: node-role.kubernetes.io/control-plane"),
		update("reserved label stays forbidden", cfg, node(map[string]string{"node-restriction.kubernetes.io/x": ""}), node(nil),
			"is not allowed to modify labels: node-restriction.kubernetes.io/x"),
		register("register with a listed label", cfg, node(map[string]string{"node-role.kubernetes.io/worker": ""}), ""),
		register("register with a listed label, no configuration", nil, node(map[string]string{"node-role.kubernetes.io/worker": ""}),
			"is not allowed to set the following labels: node-role.kubernetes.io/worker"),
		update("listed taint added", cfg, node(nil, other, maint), node(nil, other), ""),
		update("listed taint removed", cfg, node(nil, other), node(nil, maint, other), ""),
		update("listed taint changed", cfg, node(nil, maintExec), node(nil, maint), ""),
		update("listed taint added without configuration", nil, node(nil, maint), node(nil), "is not allowed to modify taints"),
		update("other taint removed", cfg, node(nil, maint), node(nil, maint, other), "is not allowed to modify taints"),
		update("other taint changed next to a listed one", cfg, node(nil, maint, corev1.Taint{Key: "dedicated", Value: "cpu", Effect: corev1.TaintEffectNoSchedule}), node(nil, other),
			"is not allowed to modify taints"),
	}
}
