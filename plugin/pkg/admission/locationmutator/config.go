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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitkit/admitkit/plugin/internal/strictdecode"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// LoadConfiguration decodes the plugin configuration strictly, by
// strictdecode.Config, the rule NodeRestriction's configuration follows
// too. A nil reader or an empty document returns nil: no mutators, no
// external data, no watches.
func LoadConfiguration(r io.Reader) (*v1alpha1.Configuration, error) {
	cfg := &v1alpha1.Configuration{}
	found, err := strictdecode.Config(PluginName, r, cfg, &cfg.TypeMeta, metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}, nil)
	if err != nil || !found {
		return nil, err
	}
	return cfg, nil
}

// newSystem builds the system of a configuration's mutators, through
// mutation.NewSystem like every system the plugin runs, and records the
// outcome, with the mutators its conflicts name, in the plugin's metrics.
func newSystem(cfg *v1alpha1.Configuration) (*mutation.System, error) {
	registerMetrics()
	in := newIngestion()
	ms, err := in.load(cfg)
	s, conflictErr := mutation.NewSystem(ms)
	in.report(ms, err == nil && conflictErr == nil, conflictsOf(conflictErr))
	if err == nil {
		err = conflictErr
	}
	if err != nil {
		return nil, fmt.Errorf("%s configuration: %w", PluginName, err)
	}
	return s, nil
}

// conflictsOf returns the conflicts of an error of mutation.NewSystem.
func conflictsOf(err error) []mutation.Conflict {
	var errs []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	var out []mutation.Conflict
	for _, e := range errs {
		var c *mutation.ConflictError
		if errors.As(e, &c) {
			out = append(out, c.Conflict)
		}
	}
	return out
}

func expand(pattern string) ([]string, error) {
	if pattern == "" {
		return nil, errors.New("empty file name")
	}
	if !strings.ContainsAny(pattern, "*?[") {
		return []string{pattern}, nil
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", pattern, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%q matches no file", pattern)
	}
	return files, nil
}

// listItems returns the items of a list document (`kind: List`, or a typed
// list such as AssignList), or the document itself. kubectl apply -f
// flattens every document of a *List kind with items the same way.
func listItems(js []byte) ([]json.RawMessage, bool) {
	var list struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(js, &list) != nil || !strings.HasSuffix(list.Kind, "List") || list.Items == nil {
		return []json.RawMessage{js}, false
	}
	return list.Items, true
}

// ConfiguredMutators returns the mutators of the plugin configuration r
// (inline, and from the files it names) as the plugin takes them in, for a
// host that must know what the plugin runs beside what it hands elsewhere
// (the webhook server's compiled policies). A nil reader or an empty
// document has none.
func ConfiguredMutators(r io.Reader) ([]*mutation.Mutator, error) {
	cfg, err := LoadConfiguration(r)
	if err != nil || cfg == nil {
		return nil, err
	}
	ms, err := newIngestion().load(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s configuration: %w", PluginName, err)
	}
	return ms, nil
}
