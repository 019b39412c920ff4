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

package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/admission"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverapiv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiserverapiv1alpha1 "k8s.io/apiserver/pkg/apis/apiserver/v1alpha1"
	"k8s.io/klog/v2"
)

// Phase is the webhook kind a review is for.
type Phase string

const (
	// Mutate runs the plugin's Admit, as a mutating webhook.
	Mutate Phase = "mutate"
	// Validate runs the plugin's Validate, as a validating webhook.
	Validate Phase = "validate"
)

// Defaults of the reinvocation cache, which keeps the state of recent
// requests so that kube-apiserver's second call of a mutating webhook on a
// request finds what the first call recorded.
const (
	// DefaultReinvocationCacheSize bounds the request fingerprints whose
	// state is kept.
	DefaultReinvocationCacheSize = 10000
	// DefaultReinvocationTTL is how long a request's state is kept after
	// its first review: longer than kube-apiserver's default request
	// timeout (60 s), which bounds every review of a request.
	DefaultReinvocationTTL = 2 * time.Minute
)

// Options are what a Host is built from.
type Options struct {
	// Plugins is the registry (plugin.RegisterAllAdmissionPlugins, and any
	// other plugin to serve).
	Plugins *admission.Plugins
	// Enabled names the plugins to serve.
	Enabled []string
	// ConfigFile is an AdmissionConfiguration in kube-apiserver's format
	// (--admission-control-config-file), with the plugins' configuration.
	// Empty means none.
	ConfigFile string
	// Configs, when set, gives the plugins' configuration in place of
	// ConfigFile, for a host that reads no AdmissionConfiguration (an
	// offline admit, which builds the LocationMutator's itself).
	Configs admission.ConfigProvider
	// Initializers hand the plugins what kube-apiserver would (see
	// NewInitializers).
	Initializers []admission.PluginInitializer
	// Informers are the informer factories the initializers hand out.
	// Start starts them once the plugins asked for their informers, and
	// the host is ready once they synced.
	Informers []InformerFactory
	// Scheme holds the versioned types the plugins see, with their
	// conversions (see NewScheme).
	Scheme *runtime.Scheme
	// ReinvocationCacheSize and ReinvocationTTL bound the reinvocation
	// cache; zero means the defaults.
	ReinvocationCacheSize int
	ReinvocationTTL       time.Duration
}

// InformerFactory is a shared informer factory (client-go's, or
// settings.k8s.io's).
type InformerFactory interface {
	Start(stop <-chan struct{})
	WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool
}

// servedPlugin is one plugin instance with what it can be reviewed as.
type servedPlugin struct {
	name      string
	plugin    admission.Interface
	mutator   admission.MutationInterface
	validator admission.ValidationInterface
}

// Host serves admission plugins as webhooks. It is safe for concurrent use.
type Host struct {
	scheme           *runtime.Scheme
	serializer       *json.Serializer
	objectInterfaces admission.ObjectInterfaces
	plugins          map[string]*servedPlugin // by lower-cased name: the path kube-apiserver accepts
	order            []string
	informers        []InformerFactory
	reinvocations    *reinvocations
	readiness        readiness
}

// New builds every enabled plugin from the registry with its configuration
// and the initializers, and validates its initialization. A bad
// configuration or a missing initializer is an error that names the plugin
// (and the plugin's own message names the field).
func New(opts Options) (*Host, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	registerMetrics()
	configs := opts.Configs
	if configs == nil {
		var err error
		if configs, err = ReadAdmissionConfiguration(opts.Enabled, opts.ConfigFile); err != nil {
			return nil, err
		}
	}
	h := &Host{
		scheme:           opts.Scheme,
		serializer:       json.NewSerializerWithOptions(json.DefaultMetaFactory, opts.Scheme, opts.Scheme, json.SerializerOptions{}),
		objectInterfaces: admission.NewObjectInterfacesFromScheme(opts.Scheme),
		plugins:          map[string]*servedPlugin{},
		informers:        opts.Informers,
		reinvocations:    newReinvocations(orDefault(opts.ReinvocationCacheSize, DefaultReinvocationCacheSize), orDefault(opts.ReinvocationTTL, DefaultReinvocationTTL)),
	}
	for _, name := range opts.Enabled {
		config, err := configs.ConfigFor(name)
		if err != nil {
			return nil, fmt.Errorf("admission plugin %q: %w", name, err)
		}
		p, err := initPlugin(opts.Plugins, name, config, opts.Initializers)
		if err != nil {
			return nil, err
		}
		h.plugins[strings.ToLower(name)] = p
		h.order = append(h.order, strings.ToLower(name))
	}
	return h, nil
}

func initPlugin(plugins *admission.Plugins, name string, config io.Reader, initializers []admission.PluginInitializer) (*servedPlugin, error) {
	plugin, err := plugins.InitPlugin(name, config, admission.PluginInitializers(initializers))
	if err != nil {
		return nil, err
	}
	p := &servedPlugin{name: name, plugin: plugin}
	p.mutator, _ = plugin.(admission.MutationInterface)
	p.validator, _ = plugin.(admission.ValidationInterface)
	if p.mutator == nil && p.validator == nil {
		return nil, fmt.Errorf("admission plugin %q neither mutates nor validates", name)
	}
	return p, nil
}

func (o Options) validate() error {
	switch {
	case o.Plugins == nil:
		return errors.New("webhook: Options.Plugins is nil")
	case len(o.Enabled) == 0:
		return errors.New("webhook: no admission plugin enabled")
	case o.Scheme == nil:
		return errors.New("webhook: Options.Scheme is nil")
	case o.Configs != nil && o.ConfigFile != "":
		return errors.New("webhook: Options.ConfigFile and Options.Configs are both set")
	}
	seen := map[string]bool{}
	for _, name := range o.Enabled {
		if name == "" {
			return errors.New("webhook: an enabled admission plugin has no name")
		}
		if seen[strings.ToLower(name)] {
			return fmt.Errorf("webhook: admission plugin %q is enabled twice", name)
		}
		seen[strings.ToLower(name)] = true
	}
	return nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// ReadAdmissionConfiguration reads the plugins' configuration from an
// AdmissionConfiguration file (kube-apiserver's format), as kube-apiserver
// reads --admission-control-config-file: inline or by a path relative to
// the file.
func ReadAdmissionConfiguration(plugins []string, file string) (admission.ConfigProvider, error) {
	configs, err := admission.ReadAdmissionConfiguration(plugins, file, configScheme)
	if err != nil {
		return nil, fmt.Errorf("reading the admission configuration %q: %w", file, err)
	}
	return configs, nil
}

// configScheme reads AdmissionConfiguration files, as kube-apiserver's
// admission options do.
var configScheme = runtime.NewScheme()

func init() {
	utilruntime.Must(apiserverapi.AddToScheme(configScheme))
	utilruntime.Must(apiserverapiv1alpha1.AddToScheme(configScheme))
	utilruntime.Must(apiserverapiv1.AddToScheme(configScheme))
}

// Plugins returns the names of the served plugins, in the order enabled,
// with the phases each can be reviewed in.
func (h *Host) Plugins() map[string][]Phase {
	served := make(map[string][]Phase, len(h.plugins))
	for _, p := range h.plugins {
		if p.mutator != nil {
			served[p.name] = append(served[p.name], Mutate)
		}
		if p.validator != nil {
			served[p.name] = append(served[p.name], Validate)
		}
	}
	return served
}

// Start starts the informer factories, now that the plugins have asked
// for their informers, and tracks readiness until stop closes.
func (h *Host) Start(stop <-chan struct{}) {
	for _, f := range h.informers {
		f.Start(stop)
	}
	checks := h.readyChecks(stop)
	h.readiness.begin(checks)
	go h.readiness.track(checks, stop)
}

// ErrNotServed is returned by Review for a plugin the host does not serve in
// the phase asked for.
var ErrNotServed = errors.New("not served")

// Review judges req with the plugins named, in that order, in phase, as
// kube-apiserver's admission chain runs its in-tree plugins in-process, and
// returns the one response a webhook gives kube-apiserver: the object is
// decoded once, each plugin that handles the operation runs on the same
// attributes, the first refusal ends the review, and a mutating review
// answers one JSONPatch of everything the plugins changed, with the
// warnings and audit annotations of every plugin that ran. One webhook
// call then does what would otherwise take one call per plugin, and a
// later plugin's change does not make kube-apiserver call an earlier
// plugin's webhook again, which in-process it would not run again either.
// One plugin is a chain of one.
//
// An error means the request could not be judged at all: a plugin is not
// served in that phase or is named twice (ErrNotServed), or req is
// malformed (no UID, an unknown operation). What a plugin refuses,
// including an object it cannot decode, is a response with Allowed false.
//
// Review does no I/O of its own; the plugins may (a lookup through their
// clients, an Event).
func (h *Host) Review(ctx context.Context, phase Phase, req *admissionv1.AdmissionRequest, plugins ...string) (*admissionv1.AdmissionResponse, error) {
	c, err := h.chain(phase, plugins)
	if err != nil {
		return nil, err
	}
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	start := time.Now()
	resp, took := h.review(ctx, phase, c, req, start)
	var code int32
	if !resp.Allowed {
		code = resp.Result.Code
	}
	observeChain(c, phase, string(req.Operation), code, took)
	if logger := klog.FromContext(ctx).V(4); logger.Enabled() {
		logger.Info("Admission review", "plugins", c.key, "phase", phase, "uid", req.UID, "operation", req.Operation,
			"resource", req.Resource, "subresource", req.SubResource, "namespace", req.Namespace, "name", req.Name,
			"allowed", resp.Allowed, "code", code, "patched", len(resp.Patch) > 0, "warnings", len(resp.Warnings))
	}
	return resp, nil
}

// chain is the plugins of one review, in the order they run.
type chain struct {
	plugins []*servedPlugin
	// key names the chain by its plugins' registered names, joined by "/":
	// the request states of its reviews are kept under it, so that a
	// chain's reviews share one state per request, as the plugins of
	// kube-apiserver's chain share one reinvocation context, and a chain
	// of one plugin keeps the key it always had.
	key string
}

func (h *Host) chain(phase Phase, names []string) (*chain, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("no admission plugin named: %w as a %s webhook", ErrNotServed, phase)
	}
	c := &chain{plugins: make([]*servedPlugin, 0, len(names))}
	keys := make([]string, 0, len(names))
	for _, name := range names {
		p, err := h.served(phase, name)
		if err != nil {
			return nil, err
		}
		// A plugin runs once in kube-apiserver's chain; twice in one review
		// it would see its own changes as another request's.
		if slices.Contains(c.plugins, p) {
			return nil, fmt.Errorf("admission plugin %q is named twice in %q: %w as a %s webhook", name, strings.Join(names, "/"), ErrNotServed, phase)
		}
		c.plugins = append(c.plugins, p)
		keys = append(keys, p.name)
	}
	c.key = strings.Join(keys, "/")
	return c, nil
}

func (h *Host) served(phase Phase, name string) (*servedPlugin, error) {
	// kube-apiserver accepts only lower-case service paths, so a plugin
	// is found by its name in any case.
	p, ok := h.plugins[strings.ToLower(name)]
	if ok && (phase == Mutate && p.mutator != nil || phase == Validate && p.validator != nil) {
		return p, nil
	}
	return nil, fmt.Errorf("admission plugin %q: %w as a %s webhook", name, ErrNotServed, phase)
}

func checkRequest(req *admissionv1.AdmissionRequest) error {
	if req == nil {
		return errors.New("the AdmissionReview has no request")
	}
	if req.UID == "" {
		return errors.New("the AdmissionReview request has no uid")
	}
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		return nil
	}
	return fmt.Errorf("the AdmissionReview request has operation %q, not one of CREATE, UPDATE, DELETE, CONNECT", req.Operation)
}
