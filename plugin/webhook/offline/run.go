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
	"context"
	"errors"
	"io"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/webhook"
)

// Config is one admit: the state the objects are admitted against, where
// and by whom (the command's flags, or an admit test case).
type Config struct {
	// State are files, directories or "-" of state documents (ReadState).
	State []string
	// AdmissionConfigFile is the LocationMutator's configuration: its
	// Configuration, or an AdmissionConfiguration with its entry.
	AdmissionConfigFile string
	// Namespace is the namespace of namespaced objects that name none.
	Namespace string
	// Requester creates the objects; nil is an anonymous admin.
	Requester user.Info
	// ExpandPods admits, after each workload, the pod its controller
	// would create from the admitted workload.
	ExpandPods bool
}

// Admitted is one object admitted, under the name it is reported by.
type Admitted struct {
	Name   string
	Input  *unstructured.Unstructured
	Result *Result
}

// Run admits the objects of inputs (files, directories or "-") as cfg
// says, with the plugins, gates and defaults of base. A bad input, state
// or configuration is an *InputError; no object at all is one too, as
// kubectl refuses to create nothing.
func Run(ctx context.Context, base Options, cfg Config, inputs []string, stdin io.Reader) ([]Admitted, error) {
	docs, err := ReadObjects(inputs, stdin)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, &InputError{Object: strings.Join(inputs, ", "), Err: errors.New("no objects given")}
	}
	stateDocs, err := ReadObjects(cfg.State, stdin)
	if err != nil {
		return nil, err
	}
	state, err := ReadState(stateDocs, cfg.Namespace)
	if err != nil {
		return nil, err
	}
	opts := base
	opts.Inputs = state.Inputs
	if opts.LocationMutatorConfig, err = readAdmissionConfig(cfg.AdmissionConfigFile); err != nil {
		return nil, err
	}
	a, err := New(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return a.admitAll(ctx, state.Kinds, docs, cfg)
}

// readAdmissionConfig reads the LocationMutator's configuration from the
// file named: its Configuration, or its entry of an AdmissionConfiguration,
// read by the server's own reader. Empty name or entry: nil.
func readAdmissionConfig(name string) ([]byte, error) {
	if name == "" {
		return nil, nil
	}
	fail := func(err error) error {
		return &InputError{Object: "the LocationMutator's configuration " + name, Err: err}
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fail(err)
	}
	var typeMeta metav1.TypeMeta
	if err := yaml.Unmarshal(data, &typeMeta); err != nil {
		return nil, fail(err)
	}
	if typeMeta.Kind != "AdmissionConfiguration" {
		return data, nil
	}
	configs, err := webhook.ReadAdmissionConfiguration([]string{locationmutator.PluginName}, name)
	if err != nil {
		return nil, fail(err)
	}
	r, err := configs.ConfigFor(locationmutator.PluginName)
	if err != nil || r == nil {
		return nil, err
	}
	if data, err = io.ReadAll(r); err != nil {
		return nil, fail(err)
	}
	return data, nil
}

// admitAll admits every object, each its own request, and with
// cfg.ExpandPods each admitted workload's pod after it.
func (a *Admitter) admitAll(ctx context.Context, kinds *Kinds, docs []Document, cfg Config) ([]Admitted, error) {
	var out []Admitted
	for _, d := range docs {
		if err := kinds.inNamespace(d.Object, cfg.Namespace); err != nil {
			return nil, &InputError{Object: d.Source, Err: err}
		}
		r, err := a.Admit(ctx, d.Object, cfg.Requester)
		if err != nil {
			return nil, &InputError{Object: d.Source, Err: err}
		}
		out = append(out, Admitted{Name: nameOf(d.Object), Input: d.Object, Result: r})
		if !cfg.ExpandPods || r.Object == nil {
			continue
		}
		pod, err := podOf(r.Object)
		if err != nil {
			return nil, &InputError{Object: d.Source, Err: err}
		}
		if pod == nil {
			continue
		}
		r, err = a.Admit(ctx, pod, cfg.Requester)
		if err != nil {
			return nil, &InputError{Object: d.Source, Err: err}
		}
		out = append(out, Admitted{Name: nameOf(pod), Input: pod, Result: r})
	}
	return out, nil
}

func nameOf(u *unstructured.Unstructured) string {
	name := u.GetName()
	if name == "" {
		name = u.GetGenerateName() + "*"
	}
	if u.GetNamespace() != "" {
		name = u.GetNamespace() + "/" + name
	}
	return u.GetKind() + " " + name
}
