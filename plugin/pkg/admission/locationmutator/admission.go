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

// Package locationmutator is the LocationMutator admission plugin: it runs
// Gatekeeper's mutators (Assign, AssignMetadata, ModifySet, AssignImage)
// inside kube-apiserver, on CREATE and UPDATE of any resource, built-in or
// custom, so that no webhook hop can drop a mutation.
//
// Mutators come from two places. The plugin's AdmissionConfiguration entry
// (see apis/v1alpha1, read by LoadConfiguration) lists them inline or in
// files; bad mutators and conflicting ones stop start-up. With
// watchMutators, the plugin also watches the mutators stored in the API
// (mutations.gatekeeper.sh, the CRDs of package crds) and runs them beside
// the configured ones, following every change without a restart; until
// its first list is in, it refuses writes with an error clients retry, and
// it reports each mutator's state in the
// mutator's status.byPod, under this server's identity. Writes of the
// mutators themselves are never changed or refused.
//
// A mutator's mode (the locationmutator.admission.admitkit.io/mode
// annotation) is Enforce by default. One in Warn or Audit mode changes
// nothing: it is tried on a copy of the object with the enforced ones, and
// what it would have done is written in the UnenforcedAnnotationKey audit
// annotation (and, for Warn, sent to the client as a warning).
//
// Every request whose object the mutators changed gets the AnnotationKey
// audit annotation listing them (ReinvocationAnnotationKey when
// kube-apiserver reinvokes the plugin), and with mutationAnnotations the
// object gets Gatekeeper's gatekeeper.sh/mutations and
// gatekeeper.sh/mutation-id annotations.
package locationmutator

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/initializer"
	"github.com/admitkit/admitkit/plugin/internal/notsynced"
	"github.com/admitkit/admitkit/plugin/internal/perrequest"
	"github.com/admitkit/admitkit/plugin/internal/versioned"
	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// PluginName is the name to enable with --enable-admission-plugins.
const PluginName = "LocationMutator"

// AnnotationKey is the audit annotation listing the mutators that changed
// an object, as "<Kind>/<name>,..." in run order.
const AnnotationKey = "locationmutator.admission.admitkit.io/mutations"

// ReinvocationAnnotationKey lists, in the same form, the mutators that
// changed the object again when kube-apiserver reinvoked the plugin (after
// a webhook or a MutatingAdmissionPolicy changed it). It has a key of its
// own because an audit annotation, once added, cannot be changed.
const ReinvocationAnnotationKey = "locationmutator.admission.admitkit.io/mutations-on-reinvocation"

// Register registers the plugin. Its factory reads the plugin configuration
// and fails (stopping kube-apiserver) on any invalid or conflicting mutator.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(config io.Reader) (admission.Interface, error) {
		return newConfiguredPlugin(config)
	})
}

// newConfiguredPlugin is the plugin of a configuration.
func newConfiguredPlugin(config io.Reader) (*Plugin, error) {
	cfg, err := LoadConfiguration(config)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		// Nothing configured: the plugin runs with no mutators.
		cfg = &v1alpha1.Configuration{}
	}
	s, err := newSystem(cfg)
	if err != nil {
		return nil, err
	}
	p := NewPlugin(s)
	if p.providers, err = newProviders(cfg.ExternalData); err != nil {
		return nil, err
	}
	p.watchMutators = cfg.WatchMutators
	p.mutationAnnotations = cfg.MutationAnnotations
	return p, nil
}

// Plugin is the LocationMutator admission plugin.
type Plugin struct {
	*admission.Handler
	// static are the mutators of the configuration.
	static *mutation.System
	// current is what requests run: static alone, or with the live
	// mutators once they are known. Nil until then.
	current         atomic.Pointer[mutation.System]
	namespaceLister corev1listers.NamespaceLister
	// namespacesSynced is the namespace informer's, when it is watched.
	namespacesSynced func() bool
	// namespaceLabels is bound once so that requests do not allocate a
	// method value.
	namespaceLabels match.NamespaceLabelsFunc

	// mutationAnnotations writes Gatekeeper's mutation annotations on the
	// objects the mutators change.
	mutationAnnotations bool

	// providers answer the mutators' externalData (externaldata.go); nil
	// runs them without, as an offline host does.
	providers *providers

	// The live source (watchMutators) and what it needs.
	watchMutators bool
	live          *liveSource
	dynamicClient dynamic.Interface
	kubeClient    kubernetes.Interface
	identity      string
	stop          <-chan struct{}
	startOnce     sync.Once
	startErr      error
}

var (
	_ admission.MutationInterface                                  = &Plugin{}
	_ admission.ValidationInterface                                = &Plugin{}
	_ admission.InitializationValidator                            = &Plugin{}
	_ genericadmissioninitializer.WantsExternalKubeInformerFactory = &Plugin{}
	_ genericadmissioninitializer.WantsExternalKubeClientSet       = &Plugin{}
	_ genericadmissioninitializer.WantsDynamicClient               = &Plugin{}
	_ genericadmissioninitializer.WantsDrainedNotification         = &Plugin{}
	_ initializer.WantsServerIdentity                              = &Plugin{}
)

// NewPlugin returns a plugin running system. A nil system runs nothing.
func NewPlugin(system *mutation.System) *Plugin {
	registerMetrics()
	if system == nil {
		system, _ = mutation.NewSystem(nil)
	}
	p := &Plugin{
		Handler: admission.NewHandler(admission.Create, admission.Update),
		static:  system,
	}
	p.current.Store(system)
	p.namespaceLabels = p.lookupNamespaceLabels
	p.SetReadyFunc(p.ready)
	return p
}

// needsNamespaces reports whether a namespaceSelector may have to be
// evaluated: some static mutator has one, or a live one may.
func (p *Plugin) needsNamespaces() bool {
	return p.watchMutators || p.static.NeedsNamespaceLabels()
}

// SetExternalKubeInformerFactory takes the Namespace lister that
// namespaceSelectors need. Without such selectors nothing is watched.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	if !p.needsNamespaces() {
		return
	}
	nsInformer := f.Core().V1().Namespaces()
	p.namespaceLister = nsInformer.Lister()
	p.namespacesSynced = nsInformer.Informer().HasSynced
}

// ready reports whether requests find what they need: the namespaces'
// first list when a namespaceSelector may need it, and the live mutators
// once they are watched. A host that serves the plugin outside
// kube-apiserver (a webhook) reports itself ready only then.
func (p *Plugin) ready() bool {
	if p.namespacesSynced != nil && !p.namespacesSynced() {
		return false
	}
	return p.current.Load() != nil
}

// SetExternalKubeClientSet takes the client the live source records its
// Events with.
func (p *Plugin) SetExternalKubeClientSet(c kubernetes.Interface) { p.kubeClient = c }

// SetDynamicClient takes the loopback client the live source watches
// mutators and writes their status with.
func (p *Plugin) SetDynamicClient(c dynamic.Interface) { p.dynamicClient = c }

// SetDrainedNotification takes the channel that closes when the server
// shuts down, which stops the live source.
func (p *Plugin) SetDrainedNotification(stop <-chan struct{}) { p.stop = stop }

// SetServerIdentity takes the identity this server writes its status
// entries under.
func (p *Plugin) SetServerIdentity(id string) { p.identity = id }

// ValidateInitialization fails when a namespaceSelector has no lister to
// read namespaces from, or the live source lacks what it needs; otherwise
// it starts the live source.
func (p *Plugin) ValidateInitialization() error {
	if p.needsNamespaces() && p.namespaceLister == nil {
		return fmt.Errorf("%s: a mutator uses match.namespaceSelector but no Namespace lister was provided", PluginName)
	}
	if !p.watchMutators {
		return nil
	}
	switch {
	case p.dynamicClient == nil:
		return fmt.Errorf("%s: watchMutators needs a dynamic client", PluginName)
	case p.kubeClient == nil:
		return fmt.Errorf("%s: watchMutators needs a client to record Events with", PluginName)
	case p.stop == nil:
		return fmt.Errorf("%s: watchMutators needs a drained notification to stop its watches", PluginName)
	}
	p.startOnce.Do(func() { p.startErr = p.startLive() })
	return p.startErr
}

// startLive starts watching mutators. Until the first list of every kind
// is in, requests that a mutator could change are refused with an error
// clients retry. It fails only if an informer refuses a handler, which a
// new one does not; the server then stops rather than serve without them.
func (p *Plugin) startLive() error {
	if p.identity == "" {
		p.identity = hostnameIdentity()
	}
	p.current.Store(nil)
	events := newEventRecorder(p.kubeClient, p.stop)
	p.live = newLiveSource(p.static, p.dynamicClient, p.identity, events, func(s *mutation.System) { p.current.Store(s) })
	if err := p.live.run(p.stop); err != nil {
		return err
	}
	if p.providers != nil {
		return p.providers.watchLive(p.dynamicClient, events, p.stop)
	}
	return nil
}

func (p *Plugin) lookupNamespaceLabels(name string) (labels.Labels, error) {
	if p.namespaceLister == nil {
		return nil, fmt.Errorf("%w: %q (no Namespace lister)", match.ErrNamespaceUnknown, name)
	}
	ns, err := p.namespaceLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %q", match.ErrNamespaceUnknown, name)
	}
	if err != nil {
		return nil, err
	}
	return labels.Set(ns.Labels), nil
}

// Admit mutates the object of a CREATE or UPDATE. Whether any mutator
// applies is decided from the index and the object's metadata first, so a
// request no mutator matches is never converted.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		// Gatekeeper's webhook only sees main resources; status and scale
		// writes carry a different object.
		return nil
	}
	if a.GetResource().Group == mutationsv1.Group {
		// Break glass: writes of the mutators themselves are never
		// changed, refused or delayed here, so a mutator that breaks
		// other writes can always be deleted or fixed.
		return nil
	}
	system := p.current.Load()
	if system == nil {
		return notSynced(a)
	}
	gvk := a.GetKind()
	candidates := system.Candidates(gvk, string(a.GetOperation()))
	if len(candidates) == 0 {
		return nil
	}
	obj := a.GetObject()
	if obj == nil {
		return nil
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil // no ObjectMeta, nothing a mutator can match
	}
	if system.NeedsNamespaceLabels() && !p.WaitForReady() {
		return admission.NewForbidden(a, fmt.Errorf("%s: not yet ready to handle request", PluginName))
	}
	target := p.target(a, accessor)
	if system.HasUnenforced() && slices.ContainsFunc(candidates, isUnenforced) {
		return p.admitTrying(ctx, a, o, obj, candidates, &target)
	}
	matched, err := mutation.AnyMatches(candidates, &target)
	if err != nil {
		return refuse(a, err)
	}
	if !matched {
		return nil
	}
	return p.mutate(ctx, a, o, obj, candidates, &target)
}

// target describes the object to the matchers the way Gatekeeper's webhook
// does: the request's namespace (the object's when the request has none),
// and none at all for a Namespace, which kube-apiserver otherwise gives its
// own name as namespace on UPDATE but not on CREATE.
func (p *Plugin) target(a admission.Attributes, accessor metav1.Object) match.Target {
	t := match.Target{
		GVK:             a.GetKind(),
		Namespace:       a.GetNamespace(),
		Name:            accessor.GetName(),
		GenerateName:    accessor.GetGenerateName(),
		Labels:          labelsOf(accessor),
		NamespaceLabels: p.namespaceLabels,
	}
	if t.Namespace == "" {
		t.Namespace = accessor.GetNamespace()
	}
	if t.GVK.Group == "" && t.GVK.Kind == "Namespace" {
		t.Namespace = ""
	}
	if t.Name == "" {
		t.Name = a.GetName()
	}
	return t
}

// labelsOf is the object's labels for the matchers. An unstructured
// object's are read in place, as the mutation passes after the first read
// them: its GetLabels copies the map on every call (a thirtieth of what a
// custom resource's request allocated). In place, a label an
// AssignMetadata adds is seen by the mutators after it in the same pass,
// as on a typed object, whose GetLabels returns its own map.
func labelsOf(accessor metav1.Object) labels.Labels {
	if u, ok := accessor.(*unstructured.Unstructured); ok {
		return mutation.UnstructuredLabels(u.Object)
	}
	return labels.Set(accessor.GetLabels())
}

// mutate runs the candidates on the request's object and, when they
// changed it, annotates and records it.
func (p *Plugin) mutate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces, obj runtime.Object, candidates []*mutation.Mutator, target *match.Target) error {
	res, failed, err := p.apply(externalRequest{ctx, a, false}, o, obj, candidates, target)
	if err != nil {
		return err
	}
	if failed != nil {
		return refuse(a, failed)
	}
	return p.recordMutated(a, obj, res)
}

// recordMutated annotates and records an object the candidates changed.
func (p *Plugin) recordMutated(a admission.Attributes, obj runtime.Object, res mutation.Result) error {
	if !res.Mutated() {
		return nil
	}
	if p.mutationAnnotations {
		if err := annotateMutations(obj, res); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("%s: %w", PluginName, err))
		}
	}
	p.record(a, res)
	return nil
}

// apply changes obj, of the request's kind, as the candidates say, and
// leaves it alone when they change nothing. Custom resources arrive
// unstructured and are mutated in place; built-in objects are mutated as
// versioned typed objects, in place when the request holds one and
// converted back into the internal one otherwise. failed is the mutators'
// own failure on the object, which refuses it; err is the server's (a
// conversion, or the providers not known yet).
func (p *Plugin) apply(xr externalRequest, o admission.ObjectInterfaces, obj runtime.Object, candidates []*mutation.Mutator, target *match.Target) (res mutation.Result, failed, err error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return p.runWithExternal(xr, candidates, func(ext *mutation.External) (mutation.Result, error) {
			return mutation.Mutate(candidates, u, target, mutation.Options{External: ext})
		})
	}
	var none mutation.Result
	gvk := xr.a.GetKind()
	versionedObj, internal, err := versioned.To(obj, gvk, o)
	if err != nil {
		return none, nil, apierrors.NewInternalError(fmt.Errorf("%s: converting to %v: %w", PluginName, gvk, err))
	}
	res, failed, err = p.runWithExternal(xr, candidates, func(ext *mutation.External) (mutation.Result, error) {
		return mutation.Mutate(candidates, versionedObj, target, mutation.Options{External: ext})
	})
	if failed != nil || err != nil {
		return none, failed, err
	}
	if res.Mutated() && internal {
		if err := versioned.Back(versionedObj, obj, o); err != nil {
			return none, nil, apierrors.NewInternalError(fmt.Errorf("%s: converting back from %v: %w", PluginName, gvk, err))
		}
	}
	return res, nil, nil
}

// notSynced refuses, with an error clients retry, a write that arrives
// before the live mutators are known: admitting it could leave out a
// mutator the user has applied.
func notSynced(a admission.Attributes) error {
	notSyncedRefusals.Inc()
	return notsynced.Error(fmt.Sprintf("the %s admission plugin has not read the mutators from the API yet; retry the %s", PluginName, strings.ToLower(string(a.GetOperation()))))
}

// refuse refuses the request because the mutators failed on its object,
// and counts why.
func refuse(a admission.Attributes, failed error) error {
	recordRefusal(failed)
	return refusal(a, failed)
}

// refusal is the error that refuses a request because the mutators failed
// on its object.
func refusal(a admission.Attributes, failed error) error {
	return admission.NewForbidden(a, fmt.Errorf("%s: %w", PluginName, failed))
}

// requestRecord is what the plugin has counted and reported for one
// request, however often kube-apiserver invokes it on the request.
type requestRecord struct {
	// counted is done once the request is counted and its first audit
	// annotation added.
	counted perrequest.Once
	// reported is done once the mutators in Warn or Audit mode are
	// reported.
	reported perrequest.Once
}

func recordOf(a admission.Attributes) *requestRecord {
	return perrequest.Record[requestRecord](a, PluginName)
}

// record counts a request whose object the mutators changed, once however
// often kube-apiserver invokes the plugin on it, and adds the audit
// annotation of this invocation.
func (p *Plugin) record(a admission.Attributes, res mutation.Result) {
	if !res.Mutated() {
		return
	}
	key := ReinvocationAnnotationKey
	if recordOf(a).counted.First() {
		key = AnnotationKey
		recordMutation(res)
	}
	value := appliedList(res)
	if err := a.AddAnnotation(key, value); err != nil {
		klog.V(4).ErrorS(err, "LocationMutator could not record its audit annotation")
	}
	if klog.V(4).Enabled() {
		klog.V(4).InfoS("LocationMutator mutated an object", "kind", a.GetKind(), "namespace", a.GetNamespace(), "name", a.GetName(), "operation", a.GetOperation(), "mutators", value, "passes", res.Passes)
	}
}

// appliedList is "<Kind>/<name>,..." of the mutators that changed the
// object, in run order.
func appliedList(res mutation.Result) string {
	// Built in one buffer: a string per mutator and a join were most of
	// what a request that changes a pod allocates outside the walk.
	n := 0
	for _, m := range res.Applied {
		id := m.ID()
		n += len(id.Kind) + len(id.Name) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for i, m := range res.Applied {
		id := m.ID()
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(id.Kind)
		b.WriteByte('/')
		b.WriteString(id.Name)
	}
	return b.String()
}
