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
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// ingestion is what taking in one configuration's mutators found: how long
// each mutator took to decode and validate, and which ones failed.
type ingestion struct {
	took   map[*mutation.Mutator]time.Duration
	failed []time.Duration
}

func newIngestion() *ingestion {
	return &ingestion{took: map[*mutation.Mutator]time.Duration{}}
}

func (in *ingestion) decode(doc []byte) (*mutation.Mutator, error) {
	start := time.Now()
	m, err := mutation.Decode(doc)
	took := time.Since(start)
	if err != nil {
		in.failed = append(in.failed, took)
		return nil, err
	}
	in.took[m] = took
	return m, nil
}

// report records a configuration's outcome. A configuration is taken or
// refused as a whole: when it is not enforced, the invalid mutators are
// errors and the valid ones that cannot run together, those conflicts
// name, are conflicts.
func (in *ingestion) report(decoded []*mutation.Mutator, enforced bool, conflicts []mutation.Conflict) {
	states := map[string]float64{stateEnforced: 0, stateError: 0, stateConflict: 0}
	observe := func(outcome string, took time.Duration) {
		states[outcome]++
		ingestions.WithLabelValues(sourceConfig, outcome).Inc()
		ingestionDuration.WithLabelValues(sourceConfig, outcome).Observe(took.Seconds())
	}
	for _, took := range in.failed {
		observe(stateError, took)
	}
	if enforced {
		for _, m := range decoded {
			observe(stateEnforced, in.took[m])
		}
	} else {
		named := map[mutation.ID]bool{}
		for _, c := range conflicts {
			named[c.Mutators[0]], named[c.Mutators[1]] = true, true
		}
		for _, m := range decoded {
			if named[m.ID()] {
				observe(stateConflict, in.took[m])
			}
		}
	}
	for state, n := range states {
		mutatorsGauge.WithLabelValues(sourceConfig, state).Set(n)
	}
}

// load returns the valid mutators of cfg, also when others are not.
func (in *ingestion) load(cfg *v1alpha1.Configuration) ([]*mutation.Mutator, error) {
	var (
		out  []*mutation.Mutator
		errs []error
	)
	for i, raw := range cfg.Mutators {
		m, err := in.decode(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("mutators[%d]: %w", i, err))
			continue
		}
		out = append(out, m)
	}
	for i, pattern := range cfg.MutatorFiles {
		files, err := expand(pattern)
		if err != nil {
			errs = append(errs, fmt.Errorf("mutatorFiles[%d]: %w", i, err))
			continue
		}
		for _, f := range files {
			ms, err := in.loadFile(f)
			errs = append(errs, err)
			out = append(out, ms...)
		}
	}
	return out, errors.Join(errs...)
}

func (in *ingestion) loadFile(name string) ([]*mutation.Mutator, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var (
		out  []*mutation.Mutator
		errs []error
	)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		chunk, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		js, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", name, doc, err))
			continue
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue // comments or `---` only
		}
		items, isList := listItems(js)
		for j, item := range items {
			m, err := in.decode(item)
			if err != nil {
				where := fmt.Sprintf("%s: document %d", name, doc)
				if isList {
					where += fmt.Sprintf(": items[%d]", j)
				}
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			out = append(out, m)
		}
	}
	return out, errors.Join(errs...)
}
