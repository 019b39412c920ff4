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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	corev1listers "k8s.io/client-go/listers/core/v1"
	storagev1listers "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"

	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

// Shared identities and request coordinates.
var (
	userMyNode = &user.DefaultInfo{Name: "system:node:mynode", Groups: []string{user.NodesGroup}}
	userBob    = &user.DefaultInfo{Name: "bob"}

	gvrPods      = corev1.SchemeGroupVersion.WithResource("pods")
	gvrNodes     = corev1.SchemeGroupVersion.WithResource("nodes")
	gvrPVCs      = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	gvrSAs       = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	gvrConfigMap = corev1.SchemeGroupVersion.WithResource("configmaps")
	gvrLeases    = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	gvrCSINodes  = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "csinodes"}
	gvrSlices    = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"}
	gvrCSRs      = certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
	gvrPCRs      = certificatesv1beta1.SchemeGroupVersion.WithResource("podcertificaterequests")

	kindPod      = corev1.SchemeGroupVersion.WithKind("Pod")
	kindEviction = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
	kindNode     = corev1.SchemeGroupVersion.WithKind("Node")
	kindToken    = schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}
)

// request builds admission attributes with the options object that matches
// the operation, so that cases read as the request they model.
func request(obj, old runtime.Object, kind schema.GroupVersionKind, gvr schema.GroupVersionResource, namespace, name, subresource string, op admission.Operation, u user.Info) admission.Attributes {
	var opts runtime.Object
	switch op {
	case admission.Create:
		opts = &metav1.CreateOptions{}
	case admission.Update:
		opts = &metav1.UpdateOptions{}
	case admission.Delete:
		opts = &metav1.DeleteOptions{}
	}
	return admission.NewAttributesRecord(obj, old, kind, namespace, name, gvr, subresource, op, opts, false, u)
}

// indexer returns a lister-ready store holding objs.
func indexer(t testing.TB, objs ...runtime.Object) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			t.Fatalf("adding %T to indexer: %v", o, err)
		}
	}
	return idx
}

func podLister(t testing.TB, pods ...*corev1.Pod) corev1listers.PodLister {
	objs := make([]runtime.Object, 0, len(pods))
	for _, p := range pods {
		objs = append(objs, p)
	}
	return corev1listers.NewPodLister(indexer(t, objs...))
}

func nodeLister(t testing.TB, nodes ...*corev1.Node) corev1listers.NodeLister {
	objs := make([]runtime.Object, 0, len(nodes))
	for _, n := range nodes {
		objs = append(objs, n)
	}
	return corev1listers.NewNodeLister(indexer(t, objs...))
}

// newGates returns a private gate set with our gates at their 1.37
// defaults (or at emulation), then overrides applied.
func newGates(t testing.TB, emulation string, overrides map[featuregate.Feature]bool) featuregate.MutableVersionedFeatureGate {
	t.Helper()
	g := featuregate.NewFeatureGate()
	if err := AddFeatureGates(g); err != nil {
		t.Fatalf("AddFeatureGates: %v", err)
	}
	if emulation != "" {
		if err := g.SetEmulationVersion(version.MustParse(emulation)); err != nil {
			t.Fatalf("SetEmulationVersion: %v", err)
		}
	}
	m := map[string]bool{}
	for k, v := range overrides {
		m[string(k)] = v
	}
	if err := g.SetFromMap(m); err != nil {
		t.Fatalf("SetFromMap(%v): %v", m, err)
	}
	return g
}

// admitCase is one request judged by a plugin wired directly with listers,
// the way the initializers would wire it.
type admitCase struct {
	name  string
	attrs admission.Attributes
	err   string // "" means allowed; otherwise a substring of the error

	pods        corev1listers.PodLister
	nodes       corev1listers.NodeLister // defaults to mynode with UID mynode-uid
	sas         corev1listers.ServiceAccountLister
	csiDrivers  storagev1listers.CSIDriverLister
	pvcs        corev1listers.PersistentVolumeClaimLister
	pvs         corev1listers.PersistentVolumeLister
	authz       authorizer.UnconditionalAuthorizer
	config      *v1alpha1.Configuration
	objects     admission.ObjectInterfaces
	inspect     bool // inspect a private gate set; otherwise every gate is off
	emulation   string
	gateChanges map[featuregate.Feature]bool
}

var defaultNodes = sync.OnceValue(func() corev1listers.NodeLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	_ = idx.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode", UID: "mynode-uid"}})
	return corev1listers.NewNodeLister(idx)
})

func (c admitCase) plugin(t testing.TB) *Plugin {
	t.Helper()
	p, err := NewPlugin(NewDefaultNodeIdentifier(), c.config)
	if err != nil {
		t.Fatalf("NewPlugin: %v", err)
	}
	if c.inspect || c.gateChanges != nil || c.emulation != "" {
		p.InspectFeatureGates(newGates(t, c.emulation, c.gateChanges))
	}
	p.podsGetter = c.pods
	p.nodesGetter = c.nodes
	if p.nodesGetter == nil {
		p.nodesGetter = defaultNodes()
	}
	p.serviceAccountGetter = c.sas
	p.csiDriverGetter = c.csiDrivers
	p.pvcGetter = c.pvcs
	p.pvGetter = c.pvs
	p.authz = c.authz
	return p
}

func (c admitCase) run(t *testing.T) {
	t.Helper()
	t.Run(c.name, func(t *testing.T) {
		err := c.plugin(t).Validate(context.Background(), c.attrs, c.objects)
		checkErr(t, err, c.err)
		if a, ok := c.authz.(*expectingAuthorizer); ok && !a.called {
			t.Errorf("the authorizer was never asked")
		}
	})
}

func runCases(t *testing.T, cases []admitCase) {
	t.Helper()
	for _, c := range cases {
		c.run(t)
	}
}

// refusingAuthorizer fails the test when asked: the case's outcome must not
// depend on the authorizer.
type refusingAuthorizer struct{ t testing.TB }

func (r refusingAuthorizer) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	r.t.Errorf("the authorizer was asked although the case must be decided without it")
	return authorizer.DecisionNoOpinion, "", nil
}

// expectingAuthorizer checks it is asked once, with exactly want, and
// answers decision and err.
type expectingAuthorizer struct {
	t        testing.TB
	want     authorizer.AttributesRecord
	decision authorizer.Decision
	err      error
	called   bool
}

func (e *expectingAuthorizer) Authorize(_ context.Context, got authorizer.Attributes) (authorizer.Decision, string, error) {
	if e.called {
		e.t.Errorf("the authorizer was asked twice")
	}
	e.called = true
	if diff := cmp.Diff(e.want, got); diff != "" {
		e.t.Errorf("authorizer attributes (-want +got):\n%s", diff)
	}
	return e.decision, "", e.err
}

// audienceAuthorizer expects the token-audience question for mysa in ns.
func audienceAuthorizer(t testing.TB, audience string, decision authorizer.Decision) *expectingAuthorizer {
	return &expectingAuthorizer{t: t, decision: decision, want: authorizer.AttributesRecord{
		User:            &user.DefaultInfo{Name: "system:node:mynode", Groups: []string{user.NodesGroup}},
		Verb:            "request-serviceaccounts-token-audience",
		APIVersion:      "v1",
		Resource:        audience,
		Namespace:       "ns",
		Name:            "mysa",
		ResourceRequest: true,
	}}
}

// signerAuthorizer expects the pod-certificate signer question.
func signerAuthorizer(t testing.TB, u user.Info, decision authorizer.Decision) *expectingAuthorizer {
	return &expectingAuthorizer{t: t, decision: decision, want: authorizer.AttributesRecord{
		User:            &user.DefaultInfo{Name: u.GetName(), Groups: u.GetGroups()},
		Verb:            "request-serviceaccounts-podcertificate-signer",
		APIGroup:        "certificates.k8s.io",
		APIVersion:      "v1beta1",
		Resource:        "example.com:foo",
		Namespace:       "ns",
		Name:            "pcr-sa",
		ResourceRequest: true,
	}}
}

// testPod returns a pod with UID pod-uid; a mirror pod also carries the
// mirror annotation and a controller reference to its node, UID <node>-uid.
func testPod(namespace, name, node string, mirror bool) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: "pod-uid"}, Spec: corev1.PodSpec{NodeName: node}}
	if mirror {
		pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "true"}
		controller := true
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID(node + "-uid"), Controller: &controller}}
	}
	return pod
}

func relabeled(pod *corev1.Pod, labels map[string]string) *corev1.Pod {
	c := pod.DeepCopy()
	c.Labels = nil
	if labels != nil {
		c.Labels = map[string]string{}
		for k, v := range labels {
			c.Labels[k] = v
		}
	}
	return c
}

var ecKey = sync.OnceValue(func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
})

// csrPEM returns a PEM certificate request for cn, or an empty PEM block.
func csrPEM(t testing.TB, cn string, valid bool) []byte {
	t.Helper()
	if !valid {
		return []byte("-----BEGIN CERTIFICATE REQUEST-----\n-----END CERTIFICATE REQUEST-----")
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, ecKey())
	if err != nil {
		t.Fatalf("CreateCertificateRequest: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func csrRequest(t testing.TB, cn, signer string, valid bool, u user.Info) admission.Attributes {
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM(t, cn, valid), SignerName: signer}}
	return request(csr, nil, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), gvrCSRs, "", "", "", admission.Create, u)
}

func pcrRequest(namespace, podName string, podUID types.UID, saName string, saUID types.UID, nodeName string, nodeUID types.UID, u user.Info) admission.Attributes {
	pcr := &certificatesv1beta1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "foo"},
		Spec: certificatesv1beta1.PodCertificateRequestSpec{
			SignerName:         "example.com/foo",
			PodName:            podName,
			PodUID:             podUID,
			ServiceAccountName: saName,
			ServiceAccountUID:  saUID,
			NodeName:           types.NodeName(nodeName),
			NodeUID:            nodeUID,
		},
	}
	return request(pcr, nil, certificatesv1beta1.SchemeGroupVersion.WithKind("PodCertificateRequest"), gvrPCRs, namespace, "foo", "", admission.Create, u)
}

func checkErr(t testing.TB, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("want allowed, got %v", err)
	case want != "" && err == nil:
		t.Errorf("want error containing %q, got allowed", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("want error containing %q, got %v", want, err)
	}
}

func cmpDiff(want, got any) string { return cmp.Diff(want, got) }
