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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/featuregate"

	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

// daemons is a configuration of node-scoped accounts as the README shows it.
const daemons = `nodeScopedServiceAccounts:
- namespace: kube-system
  name: cilium
  allowedTaintKeys: [node.cilium.io/agent-not-ready]
- namespace: node-feature-discovery
  name: nfd-worker
  allowedLabelPrefixes: [feature.node.kubernetes.io]
  allowedLabels: [nfd.node.kubernetes.io/worker.version]
`

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
		{name: "a field name in another case", config: head + "AllowedLabels: [a.k8s.io/b]\n", err: `unknown field "AllowedLabels"`},
		{name: "duplicate field", config: head + "allowedLabels: [a.k8s.io/b]\nallowedLabels: [c.k8s.io/d]\n", err: `"allowedLabels" already set`},
		{name: "null document", config: "null\n"},
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
		{name: "node-scoped service accounts", config: head + daemons,
			want: &v1alpha1.Configuration{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind},
				NodeScopedServiceAccounts: []v1alpha1.NodeScopedServiceAccount{
					{Namespace: "kube-system", Name: "cilium", AllowedTaintKeys: []string{"node.cilium.io/agent-not-ready"}},
					{Namespace: "node-feature-discovery", Name: "nfd-worker", AllowedLabelPrefixes: []string{"feature.node.kubernetes.io"}, AllowedLabels: []string{"nfd.node.kubernetes.io/worker.version"}},
				}}},
		{name: "node-scoped account without a name", config: head + "nodeScopedServiceAccounts: [{namespace: kube-system}]\n",
			err: `nodeScopedServiceAccounts[0].name: Invalid value: ""`},
		{name: "node-scoped account in a bad namespace", config: head + "nodeScopedServiceAccounts: [{namespace: Kube_System, name: a}]\n",
			err: `nodeScopedServiceAccounts[0].namespace: Invalid value: "Kube_System"`},
		{name: "node-scoped account listed twice", config: head + "nodeScopedServiceAccounts: [{namespace: a, name: b}, {namespace: c, name: d}, {namespace: a, name: b}]\n",
			err: `nodeScopedServiceAccounts[2]: Duplicate value: "a/b (also at nodeScopedServiceAccounts[0])"`},
		{name: "node-scoped account with a reserved label", config: head + "nodeScopedServiceAccounts: [{namespace: a, name: b, allowedLabels: [node-restriction.kubernetes.io/x]}]\n",
			err: `nodeScopedServiceAccounts[0].allowedLabels[0]: Invalid value: "node-restriction.kubernetes.io/x": labels in the node-restriction.kubernetes.io namespace are reserved`},
		{name: "node-scoped account with a reserved prefix", config: head + "nodeScopedServiceAccounts: [{namespace: a, name: b, allowedLabelPrefixes: [x.node-restriction.kubernetes.io/]}]\n",
			err: `nodeScopedServiceAccounts[0].allowedLabelPrefixes[0]: Invalid value: "x.node-restriction.kubernetes.io/"`},
		{name: "node-scoped account with a bad taint key", config: head + "nodeScopedServiceAccounts: [{namespace: a, name: b, allowedTaintKeys: [\"-x\"]}]\n",
			err: `nodeScopedServiceAccounts[0].allowedTaintKeys[0]: Invalid value: "-x"`},
		{name: "lookups by request", config: head + "lookups: Requests\n",
			want: &v1alpha1.Configuration{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}, Lookups: v1alpha1.LookupsRequests}},
		{name: "lookups from informers", config: head + "lookups: Informers\n",
			want: &v1alpha1.Configuration{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}, Lookups: v1alpha1.LookupsInformers}},
		{name: "unknown lookups", config: head + "lookups: Live\n",
			err: `lookups: Unsupported value: "Live": supported values: "Informers", "Requests"`},
		{name: "lookups in another case", config: head + "lookups: requests\n",
			err: `lookups: Unsupported value: "requests"`},
		{name: "node-scoped account with an unknown field", config: head + "nodeScopedServiceAccounts: [{namespace: a, name: b, labelSelector: {}}]\n",
			err: `unknown field "nodeScopedServiceAccounts[0].labelSelector"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadConfiguration(strings.NewReader(tt.config))
			checkErr(t, err, tt.err)
			if tt.err == "" {
				if diff := cmp.Diff(tt.want, got); diff != "" {
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
		t.Errorf("handles CONNECT without node-scoped service accounts, which Kubernetes' plugin never sees")
	}
	daemons, err := initializedPlugin(t, "apiVersion: noderestriction.admission.admitkit.io/v1alpha1\nkind: Configuration\nnodeScopedServiceAccounts: [{namespace: kube-system, name: agent}]\n")
	if err != nil {
		t.Fatalf("with a node-scoped account: %v", err)
	}
	if !daemons.Handles(admission.Connect) {
		t.Errorf("does not handle CONNECT, which node-scoped accounts' exec, attach, port-forward and proxy requests are")
	}
	_, err = initializedPlugin(t, "apiVersion: noderestriction.admission.admitkit.io/v1alpha1\nkind: Configuration\nallowedLabels: [x, node-restriction.kubernetes.io/x]\n")
	if err == nil || !strings.Contains(err.Error(), "allowedLabels[1]: Invalid value") {
		t.Errorf("a bad configuration must stop start-up naming the field, got %v", err)
	}
}

// TestReservedPrefixRefused: a configuration built in code, not loaded,
// is validated too.
func TestReservedPrefixRefused(t *testing.T) {
	cfg := &v1alpha1.Configuration{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}}
	if _, err := NewPlugin(NewDefaultNodeIdentifier(), &v1alpha1.Configuration{TypeMeta: cfg.TypeMeta, AllowedLabelPrefixes: []string{"node-restriction.kubernetes.io"}}); err == nil ||
		!strings.Contains(err.Error(), "allowedLabelPrefixes[0]") {
		t.Errorf("NewPlugin must refuse a reserved prefix, got %v", err)
	}
}

func TestValidateInitialization(t *testing.T) {
	full := func() *Plugin {
		p := newCasePlugin(t, noderestrictiontest.Case{})
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
		{"pods", func(p *Plugin) { p.objects.pods = nil }, "NodeRestriction requires a pod getter"},
		{"nodes", func(p *Plugin) { p.objects.nodes = nil }, "NodeRestriction requires a node getter"},
		{"CSI drivers", func(p *Plugin) { p.objects.csiDrivers = nil }, "NodeRestriction requires a CSI driver getter"},
		{"PVCs", func(p *Plugin) { p.objects.pvcs = nil }, "NodeRestriction requires a PVC getter"},
		{"PVs", func(p *Plugin) { p.objects.pvs = nil }, "NodeRestriction requires a PV getter"},
		{"authorizer", func(p *Plugin) { p.authz = nil }, "NodeRestriction requires an authorizer"},
		{"authorizer for pod certificates only", func(p *Plugin) { p.gates.audienceRestriction = false; p.authz = nil }, "NodeRestriction requires an authorizer"},
		{"service accounts", func(p *Plugin) { p.objects.serviceAccounts = nil }, "NodeRestriction requires a service account getter"},
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
		p.InspectFeatureGates(newGates(t, "", map[string]bool{string(ServiceAccountNodeAudienceRestriction): false, string(PodCertificateRequest): false}))
		p.SetExternalKubeInformerFactory(informers.NewSharedInformerFactory(fake.NewClientset(), 0))
		p.SetUnconditionalAuthorizer(allowAll{})
		if p.objects.csiDrivers != nil || p.objects.pvcs != nil || p.objects.pvs != nil || p.authz != nil {
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
		g := newGates(t, "", map[string]bool{string(CSIVolumeHealth): true, string(ServiceAccountNodeAudienceRestriction): false})
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

// TestSteeringAllowances: the labels and prefixes NewPlugin warns about at
// start-up, one warning each.
func TestSteeringAllowances(t *testing.T) {
	tests := []struct {
		name string
		cfg  *v1alpha1.Configuration
		want []string
	}{
		{name: "no configuration"},
		{name: "inventory keys", cfg: &v1alpha1.Configuration{
			AllowedLabels: []string{"inventory.example.kubernetes.io/rack", "rack"}, AllowedLabelPrefixes: []string{"hardware.example.k8s.io"}}},
		{name: "a node role", cfg: &v1alpha1.Configuration{AllowedLabels: []string{"node-role.kubernetes.io/worker", "example.com/x"}},
			want: []string{"node-role.kubernetes.io/worker"}},
		{name: "topology label and prefix", cfg: &v1alpha1.Configuration{
			AllowedLabels: []string{"topology.kubernetes.io/zone"}, AllowedLabelPrefixes: []string{"topology.kubernetes.io/", "node-role.kubernetes.io"}},
			want: []string{"topology.kubernetes.io/zone", "topology.kubernetes.io/", "node-role.kubernetes.io"}},
		{name: "a subdomain is not the well-known namespace", cfg: &v1alpha1.Configuration{AllowedLabels: []string{"x.node-role.kubernetes.io/y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, steeringAllowances(tt.cfg)); diff != "" {
				t.Errorf("steeringAllowances (-want +got):\n%s", diff)
			}
		})
	}
}
