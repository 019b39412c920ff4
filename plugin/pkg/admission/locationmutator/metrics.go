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
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// The metric names are apiserver_admission_locationmutator_<name>. Labels
// take only the values below: never a mutator's or an object's name.
const (
	metricsNamespace = "apiserver_admission"
	metricsSubsystem = "locationmutator"

	// sourceConfig is the AdmissionConfiguration; sourceAPI, mutators
	// watched as custom resources (watchMutators).
	sourceConfig = "config"
	sourceAPI    = "api"

	stateEnforced = "enforced"
	stateError    = "error"
	stateConflict = "conflict"
)

var (
	mutatorsGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "mutators",
		Help:           "Number of mutators by source (config or api) and state (enforced, error: invalid, conflict: cannot run with another mutator).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"source", "state"})
	ingestions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "mutator_ingestions_total",
		Help:           "Number of mutators taken in, by source and outcome (enforced, error or conflict).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"source", "outcome"})
	ingestionDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "mutator_ingestion_duration_seconds",
		Help:           "Time to decode and validate one mutator, by source and outcome.",
		Buckets:        metrics.ExponentialBuckets(0.00001, 4, 10), // 10µs to 2.6s
		StabilityLevel: metrics.ALPHA,
	}, []string{"source", "outcome"})
	convergencePasses = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "convergence_passes",
		Help:           "Number of passes over the mutators a mutated object needed before a pass changed nothing.",
		Buckets:        []float64{1, 2, 3, 4, 5, 8, 16, 32},
		StabilityLevel: metrics.ALPHA,
	})
	objectsMutated = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "objects_mutated_total",
		Help:           "Number of create and update requests whose object a mutator changed.",
		StabilityLevel: metrics.ALPHA,
	})
	notConvergedRefusals = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "not_converged_refusals_total",
		Help:           "Number of requests refused because their object still changed on the last pass allowed.",
		StabilityLevel: metrics.ALPHA,
	})
	notSyncedRefusals = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "not_synced_refusals_total",
		Help:           "Number of writes refused with a retriable error because the mutators from the API were not read yet.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics adds the metrics to the registry kube-apiserver serves on
// /metrics; the first caller registers them.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(mutatorsGauge, ingestions, ingestionDuration, convergencePasses, objectsMutated, notConvergedRefusals, notSyncedRefusals)
		// The API source is exported at zero until it has mutators.
		for _, state := range []string{stateEnforced, stateError, stateConflict} {
			mutatorsGauge.WithLabelValues(sourceAPI, state).Set(0)
		}
	})
}

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
// refused as a whole: when system is nil, nothing is enforced, the invalid
// mutators are errors and the valid ones that cannot run together are
// conflicts.
func (in *ingestion) report(decoded []*mutation.Mutator, system *mutation.System) {
	states := map[string]float64{stateEnforced: 0, stateError: 0, stateConflict: 0}
	observe := func(outcome string, took time.Duration) {
		states[outcome]++
		ingestions.WithLabelValues(sourceConfig, outcome).Inc()
		ingestionDuration.WithLabelValues(sourceConfig, outcome).Observe(took.Seconds())
	}
	for _, took := range in.failed {
		observe(stateError, took)
	}
	if system != nil {
		for _, m := range decoded {
			observe(stateEnforced, in.took[m])
		}
	} else {
		for _, m := range conflicting(decoded) {
			observe(stateConflict, in.took[m])
		}
	}
	for state, n := range states {
		mutatorsGauge.WithLabelValues(sourceConfig, state).Set(n)
	}
}

// conflicting returns the mutators that cannot run together with another
// one: the ones NewSystem's conflict errors name. It runs only for a
// configuration about to be refused.
func conflicting(ms []*mutation.Mutator) []*mutation.Mutator {
	_, err := mutation.NewSystem(ms)
	named := map[mutation.ID]bool{}
	for _, c := range mutation.Conflicts(err) {
		named[c.Mutators[0]], named[c.Mutators[1]] = true, true
	}
	var out []*mutation.Mutator
	for _, m := range ms {
		if named[m.ID()] {
			out = append(out, m)
		}
	}
	return out
}

// reportLive records a rebuild of the live mutators: the state of each, and
// the ingestion of those decoded for this rebuild (took > 0).
func reportLive(live []*liveMutator, outcomes map[types.UID]outcome) {
	states := map[string]float64{stateEnforced: 0, stateError: 0, stateConflict: 0}
	for _, lm := range live {
		o := outcomes[lm.uid]
		state := stateEnforced
		switch {
		case o.enforced:
		case o.errorType == errorTypeInvalid:
			state = stateError
		default:
			state = stateConflict
		}
		states[state]++
		if lm.took > 0 {
			ingestions.WithLabelValues(sourceAPI, state).Inc()
			ingestionDuration.WithLabelValues(sourceAPI, state).Observe(lm.took.Seconds())
		}
	}
	for state, n := range states {
		mutatorsGauge.WithLabelValues(sourceAPI, state).Set(n)
	}
}

// recordMutation counts a request whose object the mutators changed.
func recordMutation(res mutation.Result) {
	objectsMutated.Inc()
	convergencePasses.Observe(float64(res.Passes))
}

// recordRefusal counts a request refused because its object did not
// converge.
func recordRefusal(err error) {
	if errors.Is(err, mutation.ErrNotConverging) {
		notConvergedRefusals.Inc()
	}
}
