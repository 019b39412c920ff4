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
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
)

// allReasons is the reason label's whole set of values, as the README
// lists them.
var allReasons = []denyReason{
	reasonUnknownNode, reasonUnsupportedRequest, reasonUnreadableObject, reasonOtherNodeObject,
	reasonNotMirrorPod, reasonUnownedMirrorPod, reasonAPIReferenceInMirrorPod,
	reasonForbiddenLabel, reasonTaintChange, reasonConfigSource, reasonOwnerReferenceChange, reasonForbiddenField,
	reasonFeatureDisabled, reasonUnboundToken, reasonTokenAudience, reasonCertificateSigner,
	reasonMirrorPodCertificate, reasonServiceAccountMismatch,
	reasonObjectNotFound, reasonUIDMismatch, reasonLookupFailed,
}

// reasonsByMessage says, from the words of a refusal, which reason it must
// be counted under; the first entry whose fragment the error contains wins.
// It is written from the error texts, apart from the rules, so that a rule
// that attaches the wrong reason fails the test.
var reasonsByMessage = []struct {
	fragment string
	reason   denyReason
}{
	{"could not determine node from user", reasonUnknownNode},
	{"names no single node", reasonUnknownNode},
	{"may not create", reasonUnsupportedRequest},
	{"set to its node", reasonOtherNodeObject},
	{"owner reference", reasonUnownedMirrorPod},
	{"UID mismatch: expected", reasonUnownedMirrorPod},
	{"can not create pods that reference", reasonAPIReferenceInMirrorPod},
	{"mirror pod for API references", reasonAPIReferenceInMirrorPod},
	{"can only create mirror pods", reasonNotMirrorPod},
	{"configSource", reasonConfigSource},
	{"modify taints", reasonTaintChange},
	{"modify ownerReferences", reasonOwnerReferenceChange},
	{"fields other than status", reasonForbiddenField},
	{"labels", reasonForbiddenLabel},
	{"resource claim", reasonForbiddenField},
	{"CSINode spec via status", reasonForbiddenField},
	{"feature gate is disabled", reasonFeatureDisabled},
	{"not bound to a pod", reasonUnboundToken},
	{"binding without a uid", reasonUnboundToken},
	{"audience", reasonTokenAudience},
	{"signer", reasonCertificateSigner},
	{"is a mirror pod", reasonMirrorPodCertificate},
	{"contains serviceAccountName", reasonServiceAccountMismatch},
	{"lister failed", reasonLookupFailed},
	{"not found", reasonObjectNotFound},
	{"UID", reasonUIDMismatch},
	{"unexpected type", reasonUnreadableObject},
	{"unable to parse csr", reasonUnreadableObject},
	{"could not determine pod", reasonUnreadableObject},
	{"unable to access the object name", reasonUnreadableObject},
	{"unexpected operation", reasonUnsupportedRequest},
	{"unexpected pod subresource", reasonUnsupportedRequest},
	{"unexpected subresource", reasonUnsupportedRequest},
	{"may only update PVC status", reasonUnsupportedRequest},
	{"set to itself", reasonOtherNodeObject},
	{"is not allowed to modify node", reasonOtherNodeObject},
	{"same name as the requesting node", reasonOtherNodeObject},
	{"same NodeName", reasonOtherNodeObject},
	{"CN=system:node:", reasonOtherNodeObject},
	{"can only access leases in", reasonOtherNodeObject},
	{"invalid proxy request name", reasonUnreadableObject},
	{"set to its node", reasonOtherNodeObject},
	{"on its own node, not on node", reasonOtherNodeObject},
	{"ResourceClaims allocated on its node", reasonOtherNodeObject},
	{"scheduled on a different node", reasonOtherNodeObject},
	{"which is not the requesting node", reasonOtherNodeObject},
	{"is not running on node", reasonOtherNodeObject},
}

func wantReason(t *testing.T, err error) denyReason {
	t.Helper()
	for _, r := range reasonsByMessage {
		if strings.Contains(err.Error(), r.fragment) {
			return r.reason
		}
	}
	t.Fatalf("no reason is known for the refusal %q", err)
	return ""
}

// wantResource is the resource label a request is counted under, read from
// its resource and subresource.
func wantResource(a admission.Attributes) string {
	r := a.GetResource().Resource
	switch r {
	case "pods":
		if sub := a.GetSubresource(); sub == "status" || sub == "eviction" {
			return r + "/" + sub
		}
		return r
	case "nodes", "persistentvolumeclaims", "serviceaccounts", "leases", "csinodes", "resourceslices",
		"certificatesigningrequests", "podcertificaterequests", "resourceclaims":
		return r
	}
	return "other"
}

// counterValues reads requests_total for every resource and
// denied_requests_total for every resource and reason.
func counterValues(t *testing.T) map[string]float64 {
	t.Helper()
	values := map[string]float64{}
	for _, resource := range familyLabels {
		v, err := testutil.GetCounterMetricValue(requests.WithLabelValues(resource))
		if err != nil {
			t.Fatal(err)
		}
		values["requests_total{"+resource+"}"] = v
		for _, reason := range allReasons {
			v, err := testutil.GetCounterMetricValue(deniedRequests.WithLabelValues(resource, string(reason)))
			if err != nil {
				t.Fatal(err)
			}
			values["denied_requests_total{"+resource+","+string(reason)+"}"] = v
		}
	}
	return values
}

func moved(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for name, v := range after {
		if d := v - before[name]; d != 0 {
			out[name] = d
		}
	}
	return out
}

// failingIndexer is a cache whose lookups fail, as a broken informer would.
type failingIndexer struct{ cache.Indexer }

func (failingIndexer) GetByKey(string) (any, bool, error) {
	return nil, false, errors.New("lister failed")
}

// metricsCase is a request the case table does not make; brokenPods gives
// the plugin a pod lister whose lookups fail.
type metricsCase struct {
	noderestrictiontest.Case
	brokenPods bool
}

// metricsCases are requests that reach the reasons the case table does not.
func metricsCases() []metricsCase {
	pod := testPod("ns", "mypod", "mynode")
	mirror := testPod("ns", "mirror", "mynode")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "true"}
	mirror.Spec.ServiceAccountName = "pcr-sa"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mynode", UID: "mynode-uid"}}
	pcr := func(podName string) *certificatesv1beta1.PodCertificateRequest {
		return &certificatesv1beta1.PodCertificateRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "foo"},
			Spec: certificatesv1beta1.PodCertificateRequestSpec{
				SignerName: "example.com/foo", PodName: podName, PodUID: "pod-uid",
				ServiceAccountName: "pcr-sa", ServiceAccountUID: "sa-uid",
				NodeName: types.NodeName("mynode"), NodeUID: "mynode-uid",
			},
		}
	}
	kindPCR := certificatesv1beta1.SchemeGroupVersion.WithKind("PodCertificateRequest")
	return []metricsCase{
		{Case: noderestrictiontest.Case{Name: "a nameless node on a resource no rule covers", Err: "could not determine node",
			Attrs: noderestrictiontest.Request(nil, nil, schema.GroupVersionKind{}, corev1.SchemeGroupVersion.WithResource("configmaps"), "ns", "cm", "", admission.Update,
				&user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}})}},
		{Case: noderestrictiontest.Case{Name: "a node on a resource no rule covers",
			Attrs: noderestrictiontest.Request(nil, nil, schema.GroupVersionKind{}, corev1.SchemeGroupVersion.WithResource("configmaps"), "ns", "cm", "", admission.Update, noderestrictiontest.UserMyNode)}},
		{Case: noderestrictiontest.Case{Name: "pod lookup fails", Err: "lister failed",
			Attrs: noderestrictiontest.Request(nil, pod, kindPod, gvrPods, "ns", "mypod", "", admission.Delete, noderestrictiontest.UserMyNode)}, brokenPods: true},
		{Case: noderestrictiontest.Case{Name: "pod certificate for a mirror pod", Gates: map[string]bool{}, Err: "is a mirror pod",
			Pods: []*corev1.Pod{mirror}, Nodes: []*corev1.Node{node},
			Attrs: noderestrictiontest.Request(pcr("mirror"), nil, kindPCR, gvrPCRs, "ns", "foo", "", admission.Create, noderestrictiontest.UserMyNode)}},
	}
}

// Every request of the case table, and a few more, moves the counters it
// must: a node's or node-scoped daemon's request that a rule judges counts
// once under its resource, and a refused one once more under its reason;
// anyone else's moves nothing.
func TestMetricsRequests(t *testing.T) {
	var all []metricsCase
	for _, c := range append(noderestrictiontest.Upstream(), noderestrictiontest.Admitkit()...) {
		all = append(all, metricsCase{Case: c})
	}
	all = append(all, metricsCases()...)
	seen := map[denyReason]bool{}
	for _, c := range all {
		t.Run(c.Name, func(t *testing.T) {
			p := newCasePlugin(t, c.Case)
			if c.brokenPods {
				p.objects.pods = listers{pods: corev1listers.NewPodLister(failingIndexer{indexer[*corev1.Pod](t, nil)})}.getters().pods
			}
			before := counterValues(t)
			err := p.Validate(context.Background(), c.Attrs, nil)
			checkErr(t, err, c.Err)
			got := moved(before, counterValues(t))

			want := map[string]float64{}
			_, isNode := NewDefaultNodeIdentifier().NodeIdentity(c.Attrs.GetUserInfo())
			resource := wantResource(c.Attrs)
			if isNode && resource == "resourceclaims" {
				resource = "other" // no kubelet rule
			}
			kubeletJudged := isNode && c.Attrs.GetOperation() != admission.Connect && (resource != "other" || err != nil)
			if kubeletJudged || isScopedDaemon(c.Case) && (daemonJudges(c.Attrs) || err != nil) {
				want["requests_total{"+resource+"}"] = 1
				if err != nil {
					reason := wantReason(t, err)
					seen[reason] = true
					want["denied_requests_total{"+resource+","+string(reason)+"}"] = 1
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("counter changes after %v (-want +got):\n%s", err, diff)
			}
		})
	}
	for _, r := range allReasons {
		if !seen[r] {
			t.Errorf("no request was refused for reason %q", r)
		}
	}
}

// daemonJudges reports whether the daemon rules judge a; a node-scoped
// account's other requests are counted only when refused (for a
// credential without a node).
func daemonJudges(a admission.Attributes) bool {
	switch wantResource(a) {
	case "nodes", "pods", "pods/status", "pods/eviction", "resourceslices", "csinodes":
		return true
	case "leases":
		return a.GetNamespace() == corev1.NamespaceNodeLease
	case "resourceclaims":
		return a.GetSubresource() == "status"
	}
	return false
}

// isScopedDaemon reports whether the case's user is one of the node-scoped
// service accounts its configuration lists.
func isScopedDaemon(c noderestrictiontest.Case) bool {
	u := c.Attrs.GetUserInfo()
	if c.Config == nil || u == nil {
		return false
	}
	for _, sa := range c.Config.NodeScopedServiceAccounts {
		if u.GetName() == "system:serviceaccount:"+sa.Namespace+":"+sa.Name {
			return true
		}
	}
	return false
}

// The requests counter exports every resource from registration on, so
// that a rate over it is defined before the first request.
func TestMetricsRegistered(t *testing.T) {
	if _, err := NewPlugin(NewDefaultNodeIdentifier(), nil); err != nil {
		t.Fatal(err)
	}
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		if f.GetName() != "apiserver_admission_noderestriction_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName()+"="+l.GetValue())
			}
		}
	}
	var want []string
	for _, resource := range familyLabels {
		want = append(want, "resource="+resource)
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("requests_total series (-want +got):\n%s", diff)
	}
}
