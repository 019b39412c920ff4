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

// Package noderestriction is the NodeRestriction admission plugin: it limits
// what a kubelet, authenticated as system:node:<name> in group system:nodes,
// may create, change or delete to the objects of its own node, with
// Kubernetes 1.37's rules and error texts. Unlike upstream it validates (it
// judges the object after every mutating plugin and webhook has run), reads
// k8s.io/api types, converting kube-apiserver's internal objects only when a
// rule needs their content, and takes an optional configuration that lets
// nodes set chosen labels and taints on themselves (kubernetes#95159) and
// holds chosen service accounts, those of node daemons, to the node their
// pod-bound token names (kubernetes/enhancements#4935).
package noderestriction

import (
	"context"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

// PluginName is the name under which the plugin is registered and enabled
// (--enable-admission-plugins=NodeRestriction).
const PluginName = "NodeRestriction"

// Register adds the plugin to plugins. Its factory reads the optional
// configuration (see LoadConfiguration); a bad one fails apiserver start-up.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(config io.Reader) (admission.Interface, error) {
		cfg, err := LoadConfiguration(config)
		if err != nil {
			return nil, err
		}
		// LoadConfiguration has validated cfg: validate it once.
		return newPlugin(NewDefaultNodeIdentifier(), cfg), nil
	})
}

// NewPlugin returns the plugin for the given identifier and configuration; a
// nil configuration gives exactly Kubernetes' behaviour. The plugin still
// needs its listers (or, with lookups: Requests, a client), authorizer and
// feature gates from the admission initializers before it may serve (see
// ValidateInitialization).
func NewPlugin(nodeIdentifier NodeIdentifier, config *v1alpha1.Configuration) (*Plugin, error) {
	if errs := config.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%s: invalid configuration: %w", PluginName, errs.ToAggregate())
	}
	return newPlugin(nodeIdentifier, config), nil
}

// newPlugin is NewPlugin for a configuration already validated.
func newPlugin(nodeIdentifier NodeIdentifier, config *v1alpha1.Configuration) *Plugin {
	for _, label := range steeringAllowances(config) {
		klog.InfoS("Warning: NodeRestriction lets every node set a label that workloads are steered by; a compromised node can use it to draw them",
			"allowedLabel", label)
	}
	if config != nil {
		for _, sa := range config.NodeScopedServiceAccounts {
			for _, label := range steeringKeys(sa.AllowedLabels, sa.AllowedLabelPrefixes) {
				klog.InfoS("Warning: NodeRestriction lets a node daemon set a label on its node that workloads are steered by; a compromised daemon can use it to draw them",
					"serviceAccount", sa.Namespace+"/"+sa.Name, "allowedLabel", label)
			}
		}
	}
	registerMetrics()
	scoped := newScopedAccounts(config)
	ops := []admission.Operation{admission.Create, admission.Update, admission.Delete}
	if scoped != nil {
		// CONNECT (exec, attach, port-forward, proxy) is judged only for
		// the node-scoped service accounts: Kubernetes' plugin does not
		// handle it, so kubelets' CONNECT requests pass (Validate), and
		// without such accounts the plugin is not even asked.
		ops = append(ops, admission.Connect)
	}
	lookups := v1alpha1.LookupsInformers
	if config != nil && config.Lookups != "" {
		lookups = config.Lookups
	}
	return &Plugin{
		Handler:        admission.NewHandler(ops...),
		nodeIdentifier: nodeIdentifier,
		allow:          kubeletAllowances(config),
		scoped:         scoped,
		lookups:        lookups,
	}
}

// Plugin is the NodeRestriction admission plugin. Build it with NewPlugin.
type Plugin struct {
	*admission.Handler
	nodeIdentifier NodeIdentifier
	allow          allowances
	// scoped are the node-scoped service accounts; nil when none are
	// configured.
	scoped *scopedAccounts

	// lookups says which initializer call fills objects: the informer
	// factory's (Informers) or the client's (Requests).
	lookups v1alpha1.Lookups
	objects getters
	authz   authorizer.UnconditionalAuthorizer

	gates                 gateValues
	inspectedFeatureGates bool
}

var (
	_ admission.ValidationInterface                = &Plugin{}
	_ initializer.WantsExternalKubeInformerFactory = &Plugin{}
	_ initializer.WantsExternalKubeClientSet       = &Plugin{}
	_ initializer.WantsFeatures                    = &Plugin{}
	_ initializer.WantsUnconditionalAuthorizer     = &Plugin{}
)

// InspectFeatureGates copies the gates the plugin consults. A gate the
// server never registered reads as its Kubernetes 1.37 default instead of
// panicking; AddFeatureGates lets a server register them properly.
func (p *Plugin) InspectFeatureGates(gates featuregate.FeatureGate) {
	p.gates = readGates(gates)
	p.inspectedFeatureGates = true
}

// SetExternalKubeInformerFactory takes the listers the rules read, with
// lookups: Informers; with Requests it takes none, so that no informer is
// started for the plugin. The storage listers are taken only with
// ServiceAccountNodeAudienceRestriction, so that without it no informer is
// started for CSIDrivers, PVCs and PVs; the initializer inspects feature
// gates first, which this relies on.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	if p.lookups != v1alpha1.LookupsInformers {
		return
	}
	l := listers{
		pods:            f.Core().V1().Pods().Lister(),
		nodes:           f.Core().V1().Nodes().Lister(),
		serviceAccounts: f.Core().V1().ServiceAccounts().Lister(),
	}
	if p.gates.audienceRestriction {
		l.csiDrivers = f.Storage().V1().CSIDrivers().Lister()
		l.pvcs = f.Core().V1().PersistentVolumeClaims().Lister()
		l.pvs = f.Core().V1().PersistentVolumes().Lister()
	}
	p.objects = l.getters()
}

// SetExternalKubeClientSet takes the client the rules GET their objects
// through, with lookups: Requests; with Informers the client is not used.
// Like the listers, the storage kinds are read only with
// ServiceAccountNodeAudienceRestriction.
func (p *Plugin) SetExternalKubeClientSet(client kubernetes.Interface) {
	if p.lookups != v1alpha1.LookupsRequests || client == nil {
		return
	}
	p.objects = liveGetters(client, p.gates.audienceRestriction)
}

// SetUnconditionalAuthorizer takes the authorizer that the audience and the
// pod-certificate signer checks consult; it is kept only when one of them is on.
func (p *Plugin) SetUnconditionalAuthorizer(authz authorizer.UnconditionalAuthorizer) {
	if p.gates.audienceRestriction || p.gates.podCertificateRequests {
		p.authz = authz
	}
}

// ValidateInitialization reports the first thing the initializers failed to
// provide, in Kubernetes' words.
func (p *Plugin) ValidateInitialization() error {
	if p.nodeIdentifier == nil {
		return fmt.Errorf("%s requires a node identifier", PluginName)
	}
	if p.lookups == v1alpha1.LookupsRequests && p.objects.pods == nil {
		// Every getter comes from the one client: name it, not a getter.
		return fmt.Errorf("%s with lookups: %s requires a Kubernetes client (the external clientset initializer)", PluginName, v1alpha1.LookupsRequests)
	}
	if p.objects.pods == nil {
		return fmt.Errorf("%s requires a pod getter", PluginName)
	}
	if p.objects.nodes == nil {
		return fmt.Errorf("%s requires a node getter", PluginName)
	}
	if p.gates.audienceRestriction {
		if p.objects.csiDrivers == nil {
			return fmt.Errorf("%s requires a CSI driver getter", PluginName)
		}
		if p.objects.pvcs == nil {
			return fmt.Errorf("%s requires a PVC getter", PluginName)
		}
		if p.objects.pvs == nil {
			return fmt.Errorf("%s requires a PV getter", PluginName)
		}
	}
	if (p.gates.audienceRestriction || p.gates.podCertificateRequests) && p.authz == nil {
		return fmt.Errorf("%s requires an authorizer", PluginName)
	}
	if p.objects.serviceAccounts == nil {
		return fmt.Errorf("%s requires a service account getter", PluginName)
	}
	if !p.inspectedFeatureGates {
		return fmt.Errorf("%s has not inspected feature gates", PluginName)
	}
	return nil
}

var (
	podResource                   = schema.GroupResource{Resource: "pods"}
	nodeResource                  = schema.GroupResource{Resource: "nodes"}
	pvcResource                   = schema.GroupResource{Resource: "persistentvolumeclaims"}
	serviceAccountResource        = schema.GroupResource{Resource: "serviceaccounts"}
	leaseResource                 = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	csiNodeResource               = schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}
	resourceSliceResource         = schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceslices"}
	resourceClaimResource         = schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}
	csrResource                   = schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}
	podCertificateRequestResource = schema.GroupResource{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}
)

// Validate judges a request from a node, or from a node-scoped service
// account; requests from anyone else pass untouched, before any object is
// read or anything is counted. It matches
// on the request's group and resource, whatever the version.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	u := a.GetUserInfo()
	nodeName, isNode := p.nodeIdentifier.NodeIdentity(u)
	if !isNode {
		if p.scoped == nil {
			return nil
		}
		if acct := p.scopedAccountOf(u); acct != nil {
			return p.validateScoped(ctx, acct, a, o)
		}
		return nil
	}
	if a.GetOperation() == admission.Connect {
		// Kubernetes' plugin never sees CONNECT: neither does a kubelet here.
		return nil
	}
	f := familyOf(a)
	if f == familyResourceClaims {
		// Kubernetes' plugin has no claim rule (the Node authorizer
		// decides a kubelet's claim requests): for kubelets, claims are
		// a resource no rule covers.
		f = familyOther
	}
	d := p.judge(ctx, nodeName, f, a, o)
	record(f, d)
	if d != nil {
		return d.errorFor(a, "")
	}
	return nil
}

// judge applies the rules of family f to a request from node nodeName.
func (p *Plugin) judge(ctx context.Context, nodeName string, f family, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if nodeName == "" {
		// A node credential that names no node cannot be held to any node.
		return forbid(reasonUnknownNode, fmt.Errorf("could not determine node from user %q", a.GetUserInfo().GetName()))
	}

	switch f {
	case familyPods:
		if a.GetSubresource() != "" {
			return forbid(reasonUnsupportedRequest, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.GetSubresource()))
		}
		return p.validatePod(ctx, nodeName, a, o)
	case familyPodStatus:
		return p.validatePodStatus(nodeName, a, o)
	case familyPodEviction:
		return p.validatePodEviction(ctx, nodeName, a, o)
	case familyNodes:
		return p.validateNode(nodeName, a, o)
	case familyPVCs:
		if a.GetSubresource() != "status" {
			return forbid(reasonUnsupportedRequest, fmt.Errorf("may only update PVC status"))
		}
		return p.validatePVCStatus(nodeName, a, o)
	case familyServiceAccounts:
		return p.validateServiceAccount(ctx, nodeName, a, o)
	case familyPodCertificateRequests:
		return p.validatePodCertificateRequest(ctx, nodeName, a, o)
	case familyLeases:
		return p.validateLease(nodeName, a, o)
	case familyCSINodes:
		return p.validateCSINode(nodeName, a, o)
	case familyResourceSlices:
		return validateResourceSlice(nodeName, false, a, o)
	case familyCSRs:
		if p.gates.insecureKubeletCSRsPermitted {
			return nil
		}
		return p.validateCSR(nodeName, a, o)
	}
	return nil
}

// authorizerAttributes builds the check both escape hatches ask the
// authorizer: may this node use verb on resource (an audience or a signer,
// not a real resource) for the named service account?
func authorizerAttributes(a admission.Attributes, verb, resource, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User:            a.GetUserInfo(),
		Verb:            verb,
		APIGroup:        a.GetResource().Group,
		APIVersion:      a.GetResource().Version,
		Resource:        resource,
		Namespace:       a.GetNamespace(),
		Name:            name,
		ResourceRequest: true,
	}
}
