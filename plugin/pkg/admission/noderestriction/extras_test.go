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
	"reflect"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

func TestLoadConfiguration(t *testing.T) {
	const head = "apiVersion: noderestriction.admission.admitkit.io/v1alpha1\nkind: Configuration\n"
	tests := []struct {
		name   string
		config string
		want   *v1alpha1.Configuration
		err    string
	}{
		{name: "empty document", config: "  \n"},
		{name: "labels, prefixes and taints", config: head + "allowedLabels: [node-role.kubernetes.io/worker]\nallowedLabelPrefixes: [example.k8s.io/, other.k8s.io]\nallowedTaintKeys: [example.com/maintenance]\n",
			want: &v1alpha1.Configuration{
				TypeMeta:             metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind},
				AllowedLabels:        []string{"node-role.kubernetes.io/worker"},
				AllowedLabelPrefixes: []string{"example.k8s.io/", "other.k8s.io"},
				AllowedTaintKeys:     []string{"example.com/maintenance"},
			}},
		{name: "JSON works too", config: `{"apiVersion":"noderestriction.admission.admitkit.io/v1alpha1","kind":"Configuration","allowedLabels":["a.k8s.io/b"]}`,
			want: &v1alpha1.Configuration{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}, AllowedLabels: []string{"a.k8s.io/b"}}},
		{name: "unknown field", config: head + "allowedLabel: [x]\n", err: `unknown field "allowedLabel"`},
		{name: "wrong apiVersion", config: "apiVersion: v1\nkind: Configuration\n", err: `apiVersion: Unsupported value: "v1"`},
		{name: "wrong kind", config: "apiVersion: noderestriction.admission.admitkit.io/v1alpha1\nkind: Config\n", err: `kind: Unsupported value: "Config"`},
		{name: "reserved label", config: head + "allowedLabels: [a.k8s.io/x, b.k8s.io/y, node-restriction.kubernetes.io/foo]\n",
			err: `allowedLabels[2]: Invalid value: "node-restriction.kubernetes.io/foo": labels in the node-restriction.kubernetes.io namespace are reserved`},
		{name: "reserved label subdomain", config: head + "allowedLabels: [team.node-restriction.kubernetes.io/foo]\n", err: `allowedLabels[0]: Invalid value`},
		{name: "reserved prefix", config: head + "allowedLabelPrefixes: [node-restriction.kubernetes.io/]\n", err: `allowedLabelPrefixes[0]: Invalid value: "node-restriction.kubernetes.io/"`},
		{name: "reserved prefix subdomain", config: head + "allowedLabelPrefixes: [ok.k8s.io, x.node-restriction.kubernetes.io]\n", err: `allowedLabelPrefixes[1]: Invalid value`},
		{name: "label key that is no qualified name", config: head + "allowedLabels: [\"bad key\"]\n", err: `allowedLabels[0]: Invalid value: "bad key"`},
		{name: "prefix that is no DNS subdomain", config: head + "allowedLabelPrefixes: [Bad_Prefix]\n", err: `allowedLabelPrefixes[0]: Invalid value: "Bad_Prefix"`},
		{name: "taint key that is no qualified name", config: head + "allowedTaintKeys: [\"a/b/c\"]\n", err: `allowedTaintKeys[0]: Invalid value: "a/b/c"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadConfiguration(strings.NewReader(tt.config))
			checkErr(t, err, tt.err)
			if tt.err == "" {
				if diff := cmpDiff(tt.want, got); diff != "" {
					t.Errorf("configuration (-want +got):\n%s", diff)
				}
			}
		})
	}
	if cfg, err := LoadConfiguration(nil); cfg != nil || err != nil {
		t.Errorf("nil reader: got %v, %v; want no configuration", cfg, err)
	}
}

// initializedPlugin goes through Register and the standard initializer, as
// kube-apiserver does, with empty informers and an authorizer that allows.
func initializedPlugin(t *testing.T, config string) (admission.Interface, error) {
	t.Helper()
	plugins := admission.NewPlugins()
	Register(plugins)
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	init := initializer.New(nil, nil, factory, allowAll{}, newGates(t, "", nil), nil, nil, nil)
	var r *strings.Reader
	if config != "" {
		r = strings.NewReader(config)
	}
	if r == nil {
		return plugins.InitPlugin(PluginName, nil, init)
	}
	return plugins.InitPlugin(PluginName, r, init)
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

func (a allowAll) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

func (allowAll) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

func TestRegister(t *testing.T) {
	p, err := initializedPlugin(t, "")
	if err != nil {
		t.Fatalf("without configuration: %v", err)
	}
	if _, ok := p.(admission.ValidationInterface); !ok {
		t.Errorf("the plugin must validate")
	}
	if _, ok := p.(admission.MutationInterface); ok {
		t.Errorf("the plugin must not mutate")
	}
	for _, op := range []admission.Operation{admission.Create, admission.Update, admission.Delete} {
		if !p.Handles(op) {
			t.Errorf("does not handle %s", op)
		}
	}
	if p.Handles(admission.Connect) {
		t.Errorf("handles CONNECT")
	}
	_, err = initializedPlugin(t, "apiVersion: noderestriction.admission.admitkit.io/v1alpha1\nkind: Configuration\nallowedLabels: [x, node-restriction.kubernetes.io/x]\n")
	if err == nil || !strings.Contains(err.Error(), "allowedLabels[1]: Invalid value") {
		t.Errorf("a bad configuration must stop start-up naming the field, got %v", err)
	}
}

func TestConfiguredAllowances(t *testing.T) {
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
	update := func(name string, config *v1alpha1.Configuration, obj, old *corev1.Node, err string) admitCase {
		return admitCase{name: name, config: config, err: err, attrs: request(obj, old, kindNode, gvrNodes, "", "mynode", "", admission.Update, userMyNode)}
	}
	register := func(name string, config *v1alpha1.Configuration, obj *corev1.Node, err string) admitCase {
		return admitCase{name: name, config: config, err: err, attrs: request(obj, nil, kindNode, gvrNodes, "", "mynode", "", admission.Create, userMyNode)}
	}
	cases := []admitCase{
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
	runCases(t, cases)
	t.Run("internal", func(t *testing.T) {
		if n := replayOnInternal(t, cases); n != len(cases) {
			t.Errorf("replayed %d of %d cases on internal nodes", n, len(cases))
		}
	})

	if _, err := NewPlugin(NewDefaultNodeIdentifier(), &v1alpha1.Configuration{TypeMeta: cfg.TypeMeta, AllowedLabelPrefixes: []string{"node-restriction.kubernetes.io"}}); err == nil ||
		!strings.Contains(err.Error(), "allowedLabelPrefixes[0]") {
		t.Errorf("NewPlugin must refuse a reserved prefix, got %v", err)
	}
}

// TestServedVersions sends the same requests in the other versions a node
// may use.
func TestServedVersions(t *testing.T) {
	pods := podLister(t, testPod("ns", "mypod", "mynode", false), testPod("ns", "otherpod", "othernode", false))
	evictionBeta := func(name string) *policyv1beta1.Eviction {
		return &policyv1beta1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	kindEvictionBeta := policyv1beta1.SchemeGroupVersion.WithKind("Eviction")
	csrBeta := func(cn string, signer *string) *certificatesv1beta1.CertificateSigningRequest {
		return &certificatesv1beta1.CertificateSigningRequest{Spec: certificatesv1beta1.CertificateSigningRequestSpec{Request: csrPEM(t, cn, true), SignerName: signer}}
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

	runCases(t, []admitCase{
		{name: "policy/v1beta1 eviction of my pod", pods: pods, attrs: request(evictionBeta("mypod"), nil, kindEvictionBeta, gvrPods, "ns", "mypod", "eviction", admission.Create, userMyNode)},
		{name: "policy/v1beta1 eviction of another node's pod", pods: pods, err: "node mynode can only evict pods with spec.nodeName set to itself",
			attrs: request(evictionBeta("otherpod"), nil, kindEvictionBeta, gvrPods, "ns", "otherpod", "eviction", admission.Create, userMyNode)},
		{name: "policy/v1beta1 eviction naming the pod in the body", pods: pods,
			attrs: request(evictionBeta("mypod"), nil, kindEvictionBeta, gvrPods, "ns", "", "eviction", admission.Create, userMyNode)},
		{name: "eviction body of the wrong type", pods: pods, err: "unexpected type *v1.Pod",
			attrs: request(testPod("ns", "mypod", "mynode", false), nil, kindEvictionBeta, gvrPods, "ns", "mypod", "eviction", admission.Create, userMyNode)},
		{name: "certificates/v1beta1 CSR without signer", attrs: request(csrBeta("system:node:othernode", nil), nil, kindCSRBeta, gvrCSRs, "", "", "", admission.Create, userMyNode)},
		{name: "certificates/v1beta1 CSR for another node", err: "can only create a node CSR with CN=system:node:mynode",
			attrs: request(csrBeta("system:node:othernode", ptr.To(certificatesv1beta1.KubeletServingSignerName)), nil, kindCSRBeta, gvrCSRs, "", "", "", admission.Create, userMyNode)},
		{name: "certificates/v1beta1 CSR for my node", attrs: request(csrBeta("system:node:mynode", ptr.To(certificatesv1beta1.KubeAPIServerClientKubeletSignerName)), nil, kindCSRBeta, gvrCSRs, "", "", "", admission.Create, userMyNode)},
		{name: "resource/v1beta1 slice without node", err: "can only create ResourceSlice with the same NodeName",
			attrs: request(sliceBeta1(""), nil, schema.GroupVersionKind{}, gvrSlicesBeta, "", "s", "", admission.Create, userMyNode)},
		{name: "resource/v1beta1 slice for my node", attrs: request(sliceBeta1("mynode"), nil, schema.GroupVersionKind{}, gvrSlicesBeta, "", "s", "", admission.Create, userMyNode)},
		{name: "resource/v1beta1 slice of another node deleted", err: "can only delete ResourceSlice with the same NodeName",
			attrs: request(nil, sliceBeta1("othernode"), schema.GroupVersionKind{}, gvrSlicesBeta, "", "s", "", admission.Delete, userMyNode)},
		{name: "resource/v1beta2 slice for my node", attrs: request(sliceBeta2(ptr.To("mynode")), nil, schema.GroupVersionKind{}, gvrSlices, "", "s", "", admission.Create, userMyNode)},
		{name: "resource/v1beta2 slice without node", err: "can only create ResourceSlice", attrs: request(sliceBeta2(nil), nil, schema.GroupVersionKind{}, gvrSlices, "", "s", "", admission.Create, userMyNode)},
		{name: "coordination/v1beta1 lease of my node", attrs: request(leaseBeta, nil, schema.GroupVersionKind{}, gvrLeases, corev1.NamespaceNodeLease, "", "", admission.Create, userMyNode)},
		{name: "coordination/v1beta1 lease of another node", err: "can only access node lease with the same name as the requesting node",
			attrs: request(leaseBetaOther, nil, schema.GroupVersionKind{}, gvrLeases, corev1.NamespaceNodeLease, "", "", admission.Create, userMyNode)},
		{name: "certificates/v1 PodCertificateRequest for another node", gateChanges: map[featuregate.Feature]bool{},
			err:   `PodCertificateRequest.Spec.NodeName="othernode", which is not the requesting node "mynode"`,
			attrs: request(pcrV1, nil, certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"), certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests"), "ns", "foo", "", admission.Create, userMyNode)},
	})
}

func TestOtherRequests(t *testing.T) {
	pod := testPod("ns", "mypod", "mynode", false)
	pods := podLister(t, pod)
	nameless := &user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}
	impostor := &user.DefaultInfo{Name: "system:node:mynode"}
	groupOnly := &user.DefaultInfo{Name: "mynode", Groups: []string{user.NodesGroup}}
	runCases(t, []admitCase{
		{name: "pods/resize", pods: pods, err: `unexpected pod subresource "resize", only 'status' and 'eviction' are allowed`,
			attrs: request(pod, pod, kindPod, gvrPods, "ns", "mypod", "resize", admission.Update, userMyNode)},
		{name: "pods/binding", pods: pods, err: `unexpected pod subresource "binding"`,
			attrs: request(pod, nil, kindPod, gvrPods, "ns", "mypod", "binding", admission.Create, userMyNode)},
		{name: "pods/ephemeralcontainers", pods: pods, err: `unexpected pod subresource "ephemeralcontainers"`,
			attrs: request(pod, pod, kindPod, gvrPods, "ns", "mypod", "ephemeralcontainers", admission.Update, userMyNode)},
		{name: "node user without a name", err: `could not determine node from user "system:node:"`,
			attrs: request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, nameless)},
		{name: "node name without the nodes group is no node", attrs: request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, impostor)},
		{name: "nodes group without a node name is no node", attrs: request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, groupOnly)},
		{name: "no user at all", attrs: request(pod, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Update, nil)},
		{name: "PVC delete", err: "may only update PVC status", attrs: request(nil, nil, schema.GroupVersionKind{}, gvrPVCs, "ns", "c", "", admission.Delete, userMyNode)},
		{name: "PVC status create", err: `unexpected operation "CREATE"`, attrs: request(testPVC("", "1G", nil), nil, schema.GroupVersionKind{}, gvrPVCs, "ns", "c", "status", admission.Create, userMyNode)},
		{name: "PVC status update adding a label", err: "is not allowed to update fields other than status.quantity and status.conditions",
			attrs: request(func() *corev1.PersistentVolumeClaim {
				c := testPVC("", "1G", nil)
				c.Labels = map[string]string{"a": "b"}
				return c
			}(), testPVC("", "1G", nil),
				schema.GroupVersionKind{}, gvrPVCs, "ns", "c", "status", admission.Update, userMyNode)},
		{name: "service account update passes", attrs: request(&corev1.ServiceAccount{}, &corev1.ServiceAccount{}, schema.GroupVersionKind{}, gvrSAs, "ns", "mysa", "", admission.Update, userMyNode)},
		{name: "token request of the wrong type", err: "unexpected type *v1.Pod", attrs: request(pod, nil, kindToken, gvrSAs, "ns", "mysa", "token", admission.Create, userMyNode)},
		{name: "PodCertificateRequest update", gateChanges: map[featuregate.Feature]bool{}, err: "unexpected operation UPDATE",
			attrs: request(nil, nil, schema.GroupVersionKind{}, gvrPCRs, "ns", "foo", "", admission.Update, userMyNode)},
		{name: "PodCertificateRequest status", gateChanges: map[featuregate.Feature]bool{}, err: "unexpected subresource status",
			attrs: request(nil, nil, schema.GroupVersionKind{}, gvrPCRs, "ns", "foo", "status", admission.Create, userMyNode)},
		{name: "CSINode status create", gateChanges: map[featuregate.Feature]bool{CSIVolumeHealth: true}, err: `unexpected operation "CREATE"`,
			attrs: request(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode"}}, nil, schema.GroupVersionKind{}, gvrCSINodes, "", "mynode", "status", admission.Create, userMyNode)},
		{name: "mirror pod with an unknown volume type", err: `error checking mirror pod for API references: unknown volume type for volume  "v"`,
			attrs: request(func() *corev1.Pod {
				p := testPod("ns", "m", "mynode", true)
				p.Spec.Volumes = []corev1.Volume{{Name: "v"}}
				return p
			}(), nil, kindPod, gvrPods, "ns", "m", "", admission.Create, userMyNode)},
		{name: "mirror pod with an image pull secret", err: "can not create pods that reference secrets",
			attrs: request(func() *corev1.Pod {
				p := testPod("ns", "m", "mynode", true)
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
				return p
			}(), nil, kindPod, gvrPods, "ns", "m", "", admission.Create, userMyNode)},
		{name: "mirror pod with an ephemeral container config map", err: "can not create pods that reference configmaps",
			attrs: request(func() *corev1.Pod {
				p := testPod("ns", "m", "mynode", true)
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
				}}}
				return p
			}(), nil, kindPod, gvrPods, "ns", "m", "", admission.Create, userMyNode)},
		{name: "mirror pod with a downward API and an empty dir", attrs: request(func() *corev1.Pod {
			p := testPod("ns", "m", "mynode", true)
			p.Spec.Volumes = []corev1.Volume{
				{Name: "d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{DownwardAPI: &corev1.DownwardAPIProjection{}}}}}},
				{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			}
			return p
		}(), nil, kindPod, gvrPods, "ns", "m", "", admission.Create, userMyNode)},
	})
}

func TestValidateInitialization(t *testing.T) {
	full := func() *Plugin {
		p := admitCase{pods: podLister(t), sas: nil}.plugin(t)
		p.InspectFeatureGates(newGates(t, "", nil))
		factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
		p.SetExternalKubeInformerFactory(factory)
		p.SetUnconditionalAuthorizer(allowAll{})
		return p
	}
	if err := full().ValidateInitialization(); err != nil {
		t.Fatalf("fully initialized: %v", err)
	}
	tests := []struct {
		name  string
		unset func(*Plugin)
		err   string
	}{
		{"node identifier", func(p *Plugin) { p.nodeIdentifier = nil }, "NodeRestriction requires a node identifier"},
		{"pods", func(p *Plugin) { p.podsGetter = nil }, "NodeRestriction requires a pod getter"},
		{"nodes", func(p *Plugin) { p.nodesGetter = nil }, "NodeRestriction requires a node getter"},
		{"CSI drivers", func(p *Plugin) { p.csiDriverGetter = nil }, "NodeRestriction requires a CSI driver getter"},
		{"PVCs", func(p *Plugin) { p.pvcGetter = nil }, "NodeRestriction requires a PVC getter"},
		{"PVs", func(p *Plugin) { p.pvGetter = nil }, "NodeRestriction requires a PV getter"},
		{"authorizer", func(p *Plugin) { p.authz = nil }, "NodeRestriction requires an authorizer"},
		{"authorizer for pod certificates only", func(p *Plugin) { p.gates.audienceRestriction = false; p.authz = nil }, "NodeRestriction requires an authorizer"},
		{"service accounts", func(p *Plugin) { p.serviceAccountGetter = nil }, "NodeRestriction requires a service account getter"},
		{"feature gates", func(p *Plugin) { p.inspectedFeatureGates = false }, "NodeRestriction has not inspected feature gates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := full()
			tt.unset(p)
			checkErr(t, p.ValidateInitialization(), tt.err)
		})
	}
	t.Run("no storage listers or authorizer without their gates", func(t *testing.T) {
		p, _ := NewPlugin(NewDefaultNodeIdentifier(), nil)
		p.InspectFeatureGates(newGates(t, "", map[featuregate.Feature]bool{ServiceAccountNodeAudienceRestriction: false, PodCertificateRequest: false}))
		p.SetExternalKubeInformerFactory(informers.NewSharedInformerFactory(fake.NewClientset(), 0))
		p.SetUnconditionalAuthorizer(allowAll{})
		if p.csiDriverGetter != nil || p.pvcGetter != nil || p.pvGetter != nil || p.authz != nil {
			t.Errorf("took storage listers or the authorizer although no rule needs them")
		}
		if err := p.ValidateInitialization(); err != nil {
			t.Errorf("ValidateInitialization: %v", err)
		}
	})
}

// readOnlyGate hides everything but the FeatureGate interface, as a
// server's own gate implementation might.
type readOnlyGate struct{ featuregate.FeatureGate }

func TestFeatureGates(t *testing.T) {
	want137 := gateValues{expansionRecovery: true, audienceRestriction: true, podCertificateRequests: true}
	t.Run("unregistered gates read as 1.37 defaults", func(t *testing.T) {
		p, _ := NewPlugin(NewDefaultNodeIdentifier(), nil)
		p.InspectFeatureGates(featuregate.NewFeatureGate())
		if p.gates != want137 {
			t.Errorf("gates = %+v, want %+v", p.gates, want137)
		}
		p.InspectFeatureGates(readOnlyGate{featuregate.NewFeatureGate()})
		if p.gates != want137 {
			t.Errorf("behind the read-only interface: gates = %+v, want %+v", p.gates, want137)
		}
		p.InspectFeatureGates(nil)
		if p.gates != want137 {
			t.Errorf("nil gate: gates = %+v, want %+v", p.gates, want137)
		}
	})
	t.Run("registered gates are read", func(t *testing.T) {
		g := newGates(t, "", map[featuregate.Feature]bool{CSIVolumeHealth: true, ServiceAccountNodeAudienceRestriction: false})
		for _, gate := range []featuregate.FeatureGate{g, readOnlyGate{g}} {
			p, _ := NewPlugin(NewDefaultNodeIdentifier(), nil)
			p.InspectFeatureGates(gate)
			want := gateValues{expansionRecovery: true, podCertificateRequests: true, csiVolumeHealth: true}
			if p.gates != want {
				t.Errorf("%T: gates = %+v, want %+v", gate, p.gates, want)
			}
		}
	})
	t.Run("AddFeatureGates leaves known names alone", func(t *testing.T) {
		g := featuregate.NewFeatureGate()
		// As k8s.io/kubernetes would, with a spec that differs from ours.
		if err := g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
			CSIVolumeHealth: {{Version: version.MustParse("1.21"), Default: true, PreRelease: featuregate.Beta}},
		}); err != nil {
			t.Fatal(err)
		}
		if err := AddFeatureGates(g); err != nil {
			t.Fatalf("first call: %v", err)
		}
		if err := AddFeatureGates(g); err != nil {
			t.Fatalf("second call: %v", err)
		}
		if !g.Enabled(CSIVolumeHealth) {
			t.Errorf("the server's spec for CSIVolumeHealth was replaced")
		}
		if !g.Enabled(PodCertificateRequest) || g.Enabled(AllowInsecureKubeletCertificateSigningRequests) {
			t.Errorf("our gates are not at their 1.37 defaults")
		}
	})
	t.Run("emulating 1.33", func(t *testing.T) {
		p, _ := NewPlugin(NewDefaultNodeIdentifier(), nil)
		p.InspectFeatureGates(newGates(t, "1.33", nil))
		want := gateValues{expansionRecovery: true, audienceRestriction: true, insecureKubeletCSRsPermitted: false}
		if p.gates != want {
			t.Errorf("gates = %+v, want %+v", p.gates, want)
		}
	})
}

// TestComparedFields guards the hand-written comparisons in nodes.go and
// pods.go: a field k8s.io/api adds must be compared there too.
func TestComparedFields(t *testing.T) {
	for _, tt := range []struct {
		v      any
		fields int
	}{
		{corev1.Taint{}, 4},
		{metav1.OwnerReference{}, 6},
		{corev1.PodResourceClaimStatus{}, 2},
		{corev1.PodExtendedResourceClaimStatus{}, 2},
		{corev1.NodeAllocatableResourceClaimStatus{}, 4},
		{corev1.NodeAllocatableMappedResources{}, 2},
		{corev1.NodeAllocatableOverheadResources{}, 3},
	} {
		if n := reflect.TypeOf(tt.v).NumField(); n != tt.fields {
			t.Errorf("%T has %d fields, the comparison knows %d", tt.v, n, tt.fields)
		}
	}
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t2 := metav1.NewTime(t1.In(time.FixedZone("x", 3600)))
	if !taintEqual(corev1.Taint{Key: "k", TimeAdded: &t1}, corev1.Taint{Key: "k", TimeAdded: &t2}) {
		t.Errorf("the same instant in two zones must compare equal")
	}
	if taintEqual(corev1.Taint{Key: "k", TimeAdded: &t1}, corev1.Taint{Key: "k"}) {
		t.Errorf("a set and an unset time must differ")
	}
}
