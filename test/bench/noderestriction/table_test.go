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

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	"k8s.io/kubernetes/pkg/auth/nodeidentifier"
	upstream "k8s.io/kubernetes/plugin/pkg/admission/noderestriction"

	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
	admitkit "github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction"
)

// TestCaseTable judges the whole case table (Kubernetes' 229 cases and
// admitkit's) on the internal objects kube-apiserver hands admission,
// converted by legacyscheme, with kube-apiserver's ObjectInterfaces. On
// every case both plugins, wired alike, must decide the same with the same
// error text, and as the table expects. Cases with an admitkit
// configuration have no upstream counterpart: they are judged on the table
// alone.
func TestCaseTable(t *testing.T) {
	all := noderestrictiontest.Upstream()
	if len(all) != noderestrictiontest.UpstreamCount {
		t.Errorf("the upstream table has %d cases, Kubernetes' tests %d", len(all), noderestrictiontest.UpstreamCount)
	}
	all = append(all, noderestrictiontest.Admitkit()...)
	compared := 0
	for _, c := range all {
		t.Run(c.Name, func(t *testing.T) {
			attrs := internalAttributes(t, c.Attrs)
			ours := errorText(judgeAdmitkit(t, c, attrs))
			if c.Config == nil {
				theirs := errorText(judgeUpstream(t, c, attrs))
				if ours != theirs {
					t.Fatalf("upstream: %s\nadmitkit: %s", theirs, ours)
				}
				compared++
			}
			switch {
			case c.Err == "" && ours != "allowed":
				t.Errorf("want allowed, got %s", ours)
			case c.Err != "" && ours == "allowed":
				t.Errorf("want an error containing %q, got allowed", c.Err)
			case c.Err != "" && !strings.Contains(ours, c.Err) && !strings.Contains(c.Err, "unexpected type"):
				// (an unexpected-type error names the versioned type the table was written with)
				t.Errorf("want an error containing %q, got %s", c.Err, ours)
			}
		})
	}
	if compared < noderestrictiontest.UpstreamCount {
		t.Errorf("compared %d cases with upstream, want at least %d", compared, noderestrictiontest.UpstreamCount)
	}
}

// internalAttributes is a with its objects converted to kube-apiserver's
// internal types, as its decoder hands them to admission.
func internalAttributes(t *testing.T, a admission.Attributes) admission.Attributes {
	t.Helper()
	convert := func(obj runtime.Object) runtime.Object {
		if obj == nil {
			return nil
		}
		out, err := legacyscheme.Scheme.ConvertToVersion(obj.DeepCopyObject(), runtime.InternalGroupVersioner)
		if err != nil {
			t.Fatalf("converting %T to its internal type: %v", obj, err)
		}
		return out
	}
	return admission.NewAttributesRecord(convert(a.GetObject()), convert(a.GetOldObject()), a.GetKind(), a.GetNamespace(), a.GetName(),
		a.GetResource(), a.GetSubresource(), a.GetOperation(), a.GetOperationOptions(), a.IsDryRun(), a.GetUserInfo())
}

// caseGate is the feature gate a case asks for, from Kubernetes' own
// registrations; nil when the case inspects none.
func caseGate(t *testing.T, c noderestrictiontest.Case) featuregate.FeatureGate {
	t.Helper()
	if !c.Inspect && c.Gates == nil && c.Emulation == "" {
		return nil
	}
	// Set as Kubernetes' tests set them, which also turns off the gates
	// that depend on one turned off.
	g := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	if c.Emulation != "" {
		featuregatetesting.SetFeatureGateEmulationVersionDuringTest(t, g, version.MustParse(c.Emulation))
	}
	overrides := featuregatetesting.FeatureOverrides{}
	for name, on := range c.Gates {
		overrides[featuregate.Feature(name)] = on
	}
	featuregatetesting.SetFeatureGatesDuringTest(t, g, overrides)
	return g
}

// caseInformers holds what the case's listers hold.
func caseInformers(t *testing.T, c noderestrictiontest.Case) informers.SharedInformerFactory {
	t.Helper()
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	nodes := c.Nodes
	if nodes == nil {
		nodes = noderestrictiontest.DefaultNodes()
	}
	add := func(informer cache.SharedIndexInformer, obj runtime.Object) {
		if err := informer.GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range c.Pods {
		add(f.Core().V1().Pods().Informer(), o)
	}
	for _, o := range nodes {
		add(f.Core().V1().Nodes().Informer(), o)
	}
	for _, o := range c.ServiceAccounts {
		add(f.Core().V1().ServiceAccounts().Informer(), o)
	}
	for _, o := range c.CSIDrivers {
		add(f.Storage().V1().CSIDrivers().Informer(), o)
	}
	for _, o := range c.PVCs {
		add(f.Core().V1().PersistentVolumeClaims().Informer(), o)
	}
	for _, o := range c.PVs {
		add(f.Core().V1().PersistentVolumes().Informer(), o)
	}
	return f
}

func judgeUpstream(t *testing.T, c noderestrictiontest.Case, attrs admission.Attributes) error {
	t.Helper()
	p := upstream.NewPlugin(nodeidentifier.NewDefaultNodeIdentifier())
	if g := caseGate(t, c); g != nil {
		p.InspectFeatureGates(g)
	}
	p.SetExternalKubeInformerFactory(caseInformers(t, c))
	authz := &caseAuthorizer{t: t, want: c.Authorizer}
	p.SetUnconditionalAuthorizer(authz)
	err := p.Admit(context.Background(), attrs, objectInterfaces)
	authz.check("upstream")
	return err
}

func judgeAdmitkit(t *testing.T, c noderestrictiontest.Case, attrs admission.Attributes) error {
	t.Helper()
	p, err := admitkit.NewPlugin(admitkit.NewDefaultNodeIdentifier(), c.Config)
	if err != nil {
		t.Fatal(err)
	}
	if g := caseGate(t, c); g != nil {
		p.InspectFeatureGates(g)
	}
	p.SetExternalKubeInformerFactory(caseInformers(t, c))
	authz := &caseAuthorizer{t: t, want: c.Authorizer}
	p.SetUnconditionalAuthorizer(authz)
	err = p.Validate(context.Background(), attrs, objectInterfaces)
	authz.check("admitkit")
	return err
}

// caseAuthorizer expects the case's one question, or none.
type caseAuthorizer struct {
	t      *testing.T
	want   *noderestrictiontest.Authorizer
	called bool
}

func (a *caseAuthorizer) Authorize(_ context.Context, got authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.want == nil {
		a.t.Errorf("the authorizer was asked although the case must be decided without it")
		return authorizer.DecisionNoOpinion, "", nil
	}
	if a.called {
		a.t.Errorf("the authorizer was asked twice")
	}
	a.called = true
	if !reflect.DeepEqual(any(a.want.Want), got) {
		a.t.Errorf("authorizer attributes: got %#v, want %#v", got, a.want.Want)
	}
	return a.want.Decision, "", a.want.Err
}

func (a *caseAuthorizer) check(plugin string) {
	if a.want != nil && !a.called {
		a.t.Errorf("%s never asked the authorizer", plugin)
	}
}
