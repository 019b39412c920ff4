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

package locationmutator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/internal/strictdecode"
	externaldatav1beta1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/externaldata/v1beta1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/externaldata"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// External data, the plugin's side, all in this file: the Provider objects
// it is configured with or watches, handed to the externaldata package's
// resolver, which calls them; and the rounds of calls one request makes
// between runs of its mutators. How a mutator reads and writes an answer
// is mutation's (mutation/externaldata.go), which needs the walker's own
// types.

// providerKind is Gatekeeper's Provider, watched at its storage version.
var providerKind = watchedKind{
	kind: externaldatav1beta1.Kind,
	gvr:  schema.GroupVersionResource{Group: externaldatav1beta1.Group, Version: "v1beta1", Resource: externaldatav1beta1.Resource},
}

// providers are the external data providers requests call: those of the
// configuration and, with watchMutators, the Provider objects, followed
// live. Every change publishes a new set to the resolver.
type providers struct {
	resolver *externaldata.Resolver
	static   []*externaldata.Provider
	cert     *externaldata.ClientCertificate

	watch  *kindWatch // nil without watchMutators
	events eventSink
	mu     sync.Mutex // serialises publishing
	// compiled keeps each object's compilation by resourceVersion, so that
	// a change to one Provider leaves the others' cached answers alone.
	compiled map[string]compiledProvider
}

type compiledProvider struct {
	resourceVersion string
	provider        *externaldata.Provider
	err             error
}

// newProviders compiles the configured providers and the client
// certificate; every problem is reported, naming the provider and field.
func newProviders(cfg v1alpha1.ExternalData) (*providers, error) {
	base := field.NewPath("externalData")
	size, ttl := externaldata.DefaultCacheSize, externaldata.DefaultCacheTTL
	var errs []error
	if cfg.CacheSize != nil {
		if size = *cfg.CacheSize; size < 0 {
			errs = append(errs, field.Invalid(base.Child("cacheSize"), size, "must not be negative"))
		}
	}
	if cfg.CacheTTL != nil {
		if ttl = cfg.CacheTTL.Duration; ttl < 0 {
			errs = append(errs, field.Invalid(base.Child("cacheTTL"), cfg.CacheTTL.Duration.String(), "must not be negative"))
		}
	}
	ps := &providers{resolver: externaldata.NewResolver(size, ttl)}
	switch {
	case (cfg.ClientCertFile == "") != (cfg.ClientKeyFile == ""):
		errs = append(errs, field.Required(base.Child("clientKeyFile"), "clientCertFile and clientKeyFile go together"))
	case cfg.ClientCertFile != "":
		cert, err := externaldata.LoadClientCertificate(cfg.ClientCertFile, cfg.ClientKeyFile)
		if err != nil {
			errs = append(errs, field.Invalid(base.Child("clientCertFile"), cfg.ClientCertFile, err.Error()))
		}
		ps.cert = cert
	}
	names := map[string]bool{}
	for i, raw := range cfg.Providers {
		p, err := ps.compile(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", base.Child("providers").Index(i), err))
			continue
		}
		if names[p.Name()] {
			errs = append(errs, field.Duplicate(base.Child("providers").Index(i).Child("metadata", "name"), p.Name()))
			continue
		}
		names[p.Name()] = true
		ps.static = append(ps.static, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s configuration: %w", PluginName, err)
	}
	ps.resolver.SetProviders(ps.static)
	return ps, nil
}

// compile decodes a Provider manifest strictly and validates it.
func (ps *providers) compile(data []byte) (*externaldata.Provider, error) {
	obj, err := decodeProvider(data)
	if err != nil {
		return nil, err
	}
	p, errs := externaldata.Compile(obj, ps.cert)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s %q: %w", externaldatav1beta1.Kind, obj.Name, errs.ToAggregate())
	}
	return p, nil
}

// decodeProvider reads a Provider at either version Gatekeeper serves.
func decodeProvider(data []byte) (*externaldatav1beta1.Provider, error) {
	obj := &externaldatav1beta1.Provider{}
	if err := strictdecode.JSON(data, obj); err != nil {
		return nil, fmt.Errorf("not a Provider: %w", err)
	}
	gv := obj.APIVersion
	if obj.Kind != externaldatav1beta1.Kind || (gv != externaldatav1beta1.Group+"/v1beta1" && gv != externaldatav1beta1.Group+"/v1alpha1") {
		return nil, field.NotSupported(field.NewPath("kind"), obj.APIVersion+", "+obj.Kind, []string{externaldatav1beta1.Group + "/v1beta1, Provider", externaldatav1beta1.Group + "/v1alpha1, Provider"})
	}
	return obj, nil
}

// watchLive follows the Provider objects until stop closes.
func (ps *providers) watchLive(client dynamic.Interface, events eventSink, stop <-chan struct{}) error {
	ps.watch = newKindWatch(client, providerKind)
	ps.events = events
	if _, err := ps.watch.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { ps.publish() },
		UpdateFunc: func(_, _ any) { ps.publish() },
		DeleteFunc: func(any) { ps.publish() },
	}); err != nil {
		return fmt.Errorf("%s: watching %s: %w", PluginName, providerKind.kind, err)
	}
	go ps.watch.informer.Run(stop)
	return nil
}

// synced reports whether the live providers, if any are followed, are
// known.
func (ps *providers) synced() bool {
	return ps.watch == nil || ps.watch.informer.HasSynced()
}

// publish compiles every Provider object anew and hands the resolver the
// configured providers with the valid objects whose names they leave
// free. An invalid object is skipped with a Warning Event on it.
func (ps *providers) publish() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := slices.Clone(ps.static)
	compiled := map[string]compiledProvider{}
	defer func() { ps.compiled = compiled }()
	taken := map[string]bool{}
	for _, p := range ps.static {
		taken[p.Name()] = true
	}
	for _, item := range ps.watch.informer.GetStore().List() {
		u, ok := item.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if taken[u.GetName()] {
			klog.V(2).InfoS("LocationMutator keeps the configured external data provider over the Provider object of the same name", "provider", u.GetName())
			continue
		}
		c, ok := ps.compiled[u.GetName()]
		if !ok || c.resourceVersion != u.GetResourceVersion() {
			c.resourceVersion = u.GetResourceVersion()
			c.provider, c.err = ps.compileObject(u)
			if c.err != nil {
				klog.InfoS("LocationMutator does not call an invalid Provider", "provider", u.GetName(), "err", c.err)
				if ps.events != nil {
					ps.events(u, "InvalidProvider", c.err.Error())
				}
			}
		}
		compiled[u.GetName()] = c
		p, err := c.provider, c.err
		if err != nil {
			continue
		}
		out = append(out, p)
	}
	ps.resolver.SetProviders(out)
}

func (ps *providers) compileObject(u *unstructured.Unstructured) (*externaldata.Provider, error) {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	return ps.compile(data)
}

func isProviderResource(gvr schema.GroupVersionResource) bool {
	return gvr.Group == externaldatav1beta1.Group && gvr.Resource == externaldatav1beta1.Resource
}

// validateProvider refuses a Provider object the plugin could not call,
// naming the field, so that `kubectl apply` of a bad one fails instead of
// the mutators that name it failing later.
func (p *Plugin) validateProvider(a admission.Attributes) error {
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok || p.providers == nil {
		return nil
	}
	obj, err := decodeProvider(mustJSON(u))
	gk := schema.GroupKind{Group: externaldatav1beta1.Group, Kind: externaldatav1beta1.Kind}
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("Provider %q: %v", u.GetName(), err))
	}
	if _, errs := externaldata.Compile(obj, p.providers.cert); len(errs) > 0 {
		return apierrors.NewInvalid(gk, u.GetName(), errs)
	}
	return nil
}

func mustJSON(u *unstructured.Unstructured) []byte {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return []byte("null")
	}
	return data
}

// maxExternalRounds bounds the rounds of provider calls one request makes:
// a round's answers can move a later mutator to a new key, but no further
// than this. Keys still unanswered then fail, and the failure policy
// decides.
const maxExternalRounds = 3

// externalRequest is what answering externalData needs of a request: its
// context, whose deadline bounds the calls, its attributes (the username,
// the reinvocation context) and whether the run is a trial of a mutator in
// Warn or Audit mode.
type externalRequest struct {
	ctx   context.Context
	a     admission.Attributes
	trial bool
}

// runWithExternal runs the mutators through run and, when some of them
// ask for external data, answers their keys and runs them again: each
// provider is called once per round with all of its keys, answered from
// the cache where it can. A request no external-data mutator reaches
// makes no call. failed is the mutators' failure; err is the request's
// answer when the live providers are not known yet.
func (p *Plugin) runWithExternal(xr externalRequest, candidates []*mutation.Mutator, run func(*mutation.External) (mutation.Result, error)) (res mutation.Result, failed, err error) {
	if p.providers == nil || !slices.ContainsFunc(candidates, (*mutation.Mutator).UsesExternalData) {
		res, failed = run(nil)
		return res, failed, nil
	}
	ext := p.requestExternal(xr)
	var all mutation.Result
	for round := 1; ; round++ {
		res, failed := run(ext)
		all = mergeResults(candidates, all, res)
		if failed != nil {
			return all, failed, nil
		}
		want := ext.Wanted()
		if len(want) == 0 {
			all.ExternalValues = ext.WrittenValues()
			return all, nil, nil
		}
		if !p.providers.synced() {
			return all, nil, notSynced(xr.a)
		}
		ext.Add(p.providers.resolver.Resolve(xr.ctx, want))
		if round >= maxExternalRounds {
			ext.Finish()
		}
	}
}

// externalKey is where, in the request's reinvocation context, the
// plugin keeps the request's external data: when kube-apiserver invokes
// it again, a value it wrote from an answer is recognised as such, not
// sent to the provider as a new key, and known answers are not asked for
// again.
const externalKey = PluginName + "/external-data"

// requestExternal returns the request's external data, kept from an
// earlier invocation when there was one. A trial (Warn or Audit) gets its
// own, so that what it would write never counts as written.
func (p *Plugin) requestExternal(xr externalRequest) *mutation.External {
	username := ""
	if u := xr.a.GetUserInfo(); u != nil {
		username = u.GetName()
	}
	rc := xr.a.GetReinvocationContext()
	if xr.trial || rc == nil {
		return mutation.NewExternal(username)
	}
	if ext, ok := rc.Value(externalKey).(*mutation.External); ok {
		return ext
	}
	ext := mutation.NewExternal(username)
	rc.SetValue(externalKey, ext)
	return ext
}

// mergeResults adds a later round's result to the earlier ones': the
// mutators that changed the object, and those that reached their
// location, in either, in run order, and the passes of both.
func mergeResults(candidates []*mutation.Mutator, all, res mutation.Result) mutation.Result {
	all.Applied = unionInRunOrder(candidates, all.Applied, res.Applied)
	all.Reached = unionInRunOrder(candidates, all.Reached, res.Reached)
	all.Passes += res.Passes
	return all
}

// unionInRunOrder adds the mutators of add missing from ms, sorted in run
// order.
func unionInRunOrder(candidates []*mutation.Mutator, ms, add []*mutation.Mutator) []*mutation.Mutator {
	for _, m := range add {
		if !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	slices.SortStableFunc(ms, func(x, y *mutation.Mutator) int {
		return slices.Index(candidates, x) - slices.Index(candidates, y)
	})
	return ms
}
