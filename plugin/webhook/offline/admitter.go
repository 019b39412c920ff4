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

package offline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"

	settingsfake "github.com/admitkit/admitkit/generated/clientset/versioned/fake"
	"github.com/admitkit/admitkit/plugin"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
	"github.com/admitkit/admitkit/plugin/webhook"
	settingsadmission "github.com/admitkit/admitkit/registry/settings/admission"
)

// Options are what an Admitter is built from.
type Options struct {
	Inputs
	// Plugins is the registry the server serves: admitkit's plugins
	// (plugin.RegisterAllAdmissionPlugins) and the settings.k8s.io checks
	// (registry/settings/admission.Register).
	Plugins *admission.Plugins
	// FeatureGates and EffectiveVersion are what the plugins inspect.
	FeatureGates     featuregate.FeatureGate
	EffectiveVersion compatibility.EffectiveVersion
	// Defaulter, when set, gives each object the defaults kube-apiserver
	// gives it when it decodes a create, before any admission plugin
	// sees it, and again after a mutating plugin's patch (the command
	// passes defaults.NewScheme(), kube-apiserver's defaulting without
	// k8s.io/kubernetes).
	Defaulter runtime.ObjectDefaulter
	// ReadyTimeout bounds the wait for the plugins' caches; zero means a
	// minute.
	ReadyTimeout time.Duration
}

// Admitter admits objects as creates against the state it was built with.
// It is safe for concurrent use.
type Admitter struct {
	host       *webhook.Host
	scheme     *runtime.Scheme
	defaulter  runtime.ObjectDefaulter
	mutating   []string
	validating []string
	namespaces map[string]bool // the namespaces given, when selectors read them
	// mutatorResources are the mutator kinds' resources, by list kind.
	mutatorResources map[schema.GroupVersionResource]string
	stop             chan struct{}
}

// chain is the order the admitted objects go through the plugins:
// admitkit's, in plugin.AllOrderedPlugins' order.
var chain = func() []string {
	ours := []string{podpreset.PluginName, noderestriction.PluginName, locationmutator.PluginName}
	var out []string
	for _, name := range plugin.AllOrderedPlugins {
		if slices.Contains(ours, name) {
			out = append(out, name)
		}
	}
	return out
}()

// identity is the server identity the plugins key their status by.
const identity = "admit-offline"

// New makes the cluster state of the inputs, checks every preset and
// mutator as the server checks a create of it, and starts the plugins; it
// returns once their caches synced. A bad input is an *InputError.
func New(ctx context.Context, opts Options) (*Admitter, error) {
	if opts.Plugins == nil || opts.FeatureGates == nil || opts.EffectiveVersion == nil {
		return nil, errors.New("offline: Options.Plugins, FeatureGates and EffectiveVersion are required")
	}
	lmConfig, err := locationMutatorConfig(opts.LocationMutatorConfig)
	if err != nil {
		return nil, &InputError{Object: "the " + locationmutator.PluginName + " configuration", Err: err}
	}
	a := &Admitter{scheme: webhook.NewScheme(), defaulter: opts.Defaulter, stop: make(chan struct{})}
	namespaces := make([]runtime.Object, 0, len(opts.Namespaces))
	if opts.readsNamespaces() {
		a.namespaces = map[string]bool{}
	}
	for _, ns := range opts.Namespaces {
		namespaces = append(namespaces, ns.DeepCopy())
		if a.namespaces != nil {
			a.namespaces[ns.Name] = true
		}
	}
	if a.mutatorResources, err = mutatorListKinds(); err != nil {
		return nil, err
	}
	clients, settings, err := newClients(a.scheme, a.mutatorResources, namespaces, opts.Mutators)
	if err != nil {
		return nil, err
	}
	initializers, err := webhook.NewInitializers(webhook.InitializerConfig{
		Clients: clients, Identity: identity, FeatureGates: opts.FeatureGates,
		EffectiveVersion: opts.EffectiveVersion, Stop: a.stop,
	})
	if err != nil {
		return nil, err
	}
	a.host, err = webhook.New(webhook.Options{
		Plugins:      opts.Plugins,
		Enabled:      append(slices.Clone(chain), settingsadmission.DefaultsPluginName, settingsadmission.ValidationPluginName),
		Configs:      pluginConfigs{locationmutator.PluginName: lmConfig},
		Initializers: initializers.Initializers,
		Informers:    initializers.Informers,
		Scheme:       a.scheme,
	})
	if err != nil {
		close(a.stop)
		return nil, &InputError{Object: "the plugins' configuration", Err: err}
	}
	a.phases()
	if err := a.start(ctx, opts, settings); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// start adds the checked presets, starts the host, waits for its caches,
// then checks the mutators against what it enforces.
func (a *Admitter) start(ctx context.Context, opts Options, settings *settingsfake.Clientset) error {
	if err := a.addPresets(ctx, opts.Inputs, settings); err != nil {
		return err
	}
	a.host.Start(a.stop)
	if err := a.waitReady(ctx, orDefault(opts.ReadyTimeout, time.Minute)); err != nil {
		return err
	}
	return a.checkMutators(ctx, opts.Mutators)
}

// phases sorts the chain's plugins into those that mutate and those that
// validate, in chain order.
func (a *Admitter) phases() {
	served := a.host.Plugins()
	for _, name := range chain {
		for _, phase := range served[name] {
			if phase == webhook.Mutate {
				a.mutating = append(a.mutating, name)
			} else {
				a.validating = append(a.validating, name)
			}
		}
	}
}

func (a *Admitter) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := a.host.Ready()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the plugins' caches did not sync: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Close stops the plugins' watches.
func (a *Admitter) Close() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
}

// locationMutatorConfig is the LocationMutator's configuration with
// watchMutators on, read by the plugin's own decoder.
func locationMutatorConfig(data []byte) ([]byte, error) {
	var r io.Reader
	if data != nil {
		r = bytes.NewReader(data)
	}
	cfg, err := locationmutator.LoadConfiguration(r)
	if err != nil {
		return nil, err
	}
	cfg.APIVersion, cfg.Kind = v1alpha1.APIVersion, v1alpha1.Kind
	cfg.WatchMutators = true
	return json.Marshal(cfg)
}

// pluginConfigs are the plugins' configurations by name.
type pluginConfigs map[string][]byte

func (c pluginConfigs) ConfigFor(name string) (io.Reader, error) {
	if data, ok := c[name]; ok {
		return bytes.NewReader(data), nil
	}
	return nil, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
