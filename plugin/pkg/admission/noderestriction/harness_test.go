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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	storagev1listers "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"

	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

var (
	gvrPods     = corev1.SchemeGroupVersion.WithResource("pods")
	gvrNodes    = corev1.SchemeGroupVersion.WithResource("nodes")
	gvrPVCs     = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	gvrSAs      = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	gvrLeases   = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	gvrCSINodes = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "csinodes"}
	gvrSlices   = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"}
	gvrCSRs     = certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
	gvrPCRs     = certificatesv1beta1.SchemeGroupVersion.WithResource("podcertificaterequests")

	kindPod      = corev1.SchemeGroupVersion.WithKind("Pod")
	kindNode     = corev1.SchemeGroupVersion.WithKind("Node")
	kindEviction = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
	kindToken    = schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}
)

// indexer returns a lister-ready store holding objs.
func indexer[T runtime.Object](t testing.TB, objs []T) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			t.Fatalf("adding %T to indexer: %v", o, err)
		}
	}
	return idx
}

// newGates returns a private gate set with our gates at their 1.37
// defaults (or at emulation), then overrides applied. A gate the plugin
// does not consult (Kubernetes' tests switch DynamicResourceAllocation) is
// registered as it was before it locked, so that it can be switched.
func newGates(t testing.TB, emulation string, overrides map[string]bool) featuregate.MutableVersionedFeatureGate {
	t.Helper()
	g := featuregate.NewFeatureGate()
	if err := AddFeatureGates(g); err != nil {
		t.Fatalf("AddFeatureGates: %v", err)
	}
	for name := range overrides {
		if _, known := g.GetAllVersioned()[featuregate.Feature(name)]; !known {
			if err := g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
				featuregate.Feature(name): {{Version: version.MustParse("1.30"), Default: false, PreRelease: featuregate.Beta}},
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if emulation != "" {
		if err := g.SetEmulationVersion(version.MustParse(emulation)); err != nil {
			t.Fatalf("SetEmulationVersion: %v", err)
		}
	}
	if err := g.SetFromMap(overrides); err != nil {
		t.Fatalf("SetFromMap(%v): %v", overrides, err)
	}
	return g
}

// lookupModes are the plugin's two ways of reading the objects a rule
// needs: every case is judged through each, and must be judged the same.
var lookupModes = []v1alpha1.Lookups{v1alpha1.LookupsInformers, v1alpha1.LookupsRequests}

// newCasePlugin wires a plugin for c directly with listers, the way the
// informer initializer would wire it.
func newCasePlugin(t testing.TB, c noderestrictiontest.Case) *Plugin {
	t.Helper()
	return newCasePluginWith(t, c, v1alpha1.LookupsInformers)
}

// newCasePluginWith wires a plugin for c whose lookups are lookups: listers
// over the case's objects, or a fake clientset holding them, handed over
// as the clientset initializer hands kube-apiserver's client.
func newCasePluginWith(t testing.TB, c noderestrictiontest.Case, lookups v1alpha1.Lookups) *Plugin {
	t.Helper()
	cfg := &v1alpha1.Configuration{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}}
	if c.Config != nil {
		copied := *c.Config
		cfg = &copied
	}
	cfg.Lookups = lookups
	p, err := NewPlugin(NewDefaultNodeIdentifier(), cfg)
	if err != nil {
		t.Fatalf("NewPlugin: %v", err)
	}
	if c.Inspect || c.Gates != nil || c.Emulation != "" {
		p.InspectFeatureGates(newGates(t, c.Emulation, c.Gates))
	}
	nodes := c.Nodes
	if nodes == nil {
		nodes = noderestrictiontest.DefaultNodes()
	}
	switch lookups {
	case v1alpha1.LookupsInformers:
		p.objects = listers{
			pods:            corev1listers.NewPodLister(indexer(t, c.Pods)),
			nodes:           corev1listers.NewNodeLister(indexer(t, nodes)),
			serviceAccounts: corev1listers.NewServiceAccountLister(indexer(t, c.ServiceAccounts)),
			csiDrivers:      storagev1listers.NewCSIDriverLister(indexer(t, c.CSIDrivers)),
			pvcs:            corev1listers.NewPersistentVolumeClaimLister(indexer(t, c.PVCs)),
			pvs:             corev1listers.NewPersistentVolumeLister(indexer(t, c.PVs)),
		}.getters()
	case v1alpha1.LookupsRequests:
		var objs []runtime.Object
		objs = latest(objs, c.Pods)
		objs = latest(objs, nodes)
		objs = latest(objs, c.ServiceAccounts)
		objs = latest(objs, c.CSIDrivers)
		objs = latest(objs, c.PVCs)
		objs = latest(objs, c.PVs)
		p.SetExternalKubeClientSet(fake.NewClientset(objs...))
	default:
		t.Fatalf("unknown lookups %q", lookups)
	}
	p.authz = caseAuthorizer(t, c.Authorizer)
	return p
}

// latest appends items to objs as an indexer holds them: a later object
// replaces an earlier one of the same namespace and name (the fake
// clientset refuses a second one).
func latest[T interface {
	runtime.Object
	metav1.Object
}](objs []runtime.Object, items []T) []runtime.Object {
	at := make(map[string]int, len(items))
	for _, o := range items {
		key := o.GetNamespace() + "/" + o.GetName()
		if i, ok := at[key]; ok {
			objs[i] = o
			continue
		}
		at[key] = len(objs)
		objs = append(objs, o)
	}
	return objs
}

// runCase judges c.Attrs with objects as the chain's ObjectInterfaces,
// once with each of the lookups.
func runCase(t *testing.T, c noderestrictiontest.Case, objects admission.ObjectInterfaces) {
	t.Helper()
	t.Run(c.Name, func(t *testing.T) {
		for _, lookups := range lookupModes {
			t.Run(string(lookups), func(t *testing.T) {
				p := newCasePluginWith(t, c, lookups)
				err := p.Validate(context.Background(), c.Attrs, objects)
				checkErr(t, err, c.Err)
				if a, ok := p.authz.(*expectingAuthorizer); ok && !a.called {
					t.Errorf("the authorizer was never asked")
				}
			})
		}
	})
}

// caseAuthorizer is an authorizer that expects the case's question, or
// fails the test when asked although the case expects none.
func caseAuthorizer(t testing.TB, want *noderestrictiontest.Authorizer) authorizer.UnconditionalAuthorizer {
	if want == nil {
		return refusingAuthorizer{t}
	}
	return &expectingAuthorizer{t: t, want: *want}
}

type refusingAuthorizer struct{ t testing.TB }

func (r refusingAuthorizer) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	r.t.Errorf("the authorizer was asked although the case must be decided without it")
	return authorizer.DecisionNoOpinion, "", nil
}

// expectingAuthorizer checks it is asked once, with exactly the case's
// question, and gives the case's answer.
type expectingAuthorizer struct {
	t      testing.TB
	want   noderestrictiontest.Authorizer
	called bool
}

func (e *expectingAuthorizer) Authorize(_ context.Context, got authorizer.Attributes) (authorizer.Decision, string, error) {
	if e.called {
		e.t.Errorf("the authorizer was asked twice")
	}
	e.called = true
	if diff := cmp.Diff(e.want.Want, got); diff != "" {
		e.t.Errorf("authorizer attributes (-want +got):\n%s", diff)
	}
	return e.want.Decision, "", e.want.Err
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

// TestCases judges the whole case table on k8s.io/api objects.
func TestCases(t *testing.T) {
	upstream := noderestrictiontest.Upstream()
	if len(upstream) != noderestrictiontest.UpstreamCount {
		t.Errorf("the upstream table has %d cases, Kubernetes' tests %d", len(upstream), noderestrictiontest.UpstreamCount)
	}
	t.Run("upstream", func(t *testing.T) {
		for _, c := range upstream {
			runCase(t, c, nil)
		}
	})
	t.Run("admitkit", func(t *testing.T) {
		for _, c := range noderestrictiontest.Admitkit() {
			runCase(t, c, nil)
		}
	})
}

// testPod returns a pod bound to node with UID pod-uid.
func testPod(namespace, name, node string) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}}
	pod.Namespace, pod.Name, pod.UID = namespace, name, "pod-uid"
	return pod
}
