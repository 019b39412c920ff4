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
		Help:           "Number of passes over the mutators run on a mutated object: until one changed nothing, or proved that the next would change nothing.",
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

	unenforcedChanges = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "unenforced_changes_total",
		Help:           "Number of times a mutator in Warn or Audit mode would have changed (or refused) the object of a create or update request, by mode.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mode"})

	registerOnce sync.Once
)

// registerMetrics adds the metrics to the registry kube-apiserver serves on
// /metrics; the first caller registers them.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(mutatorsGauge, ingestions, ingestionDuration, convergencePasses, objectsMutated, notConvergedRefusals, notSyncedRefusals, unenforcedChanges)
		// The API source is exported at zero until it has mutators.
		for _, state := range []string{stateEnforced, stateError, stateConflict} {
			mutatorsGauge.WithLabelValues(sourceAPI, state).Set(0)
		}
	})
}

// reportLive records a pass of the live source: the number of live
// mutators in each state, and the ingestion of those it decoded.
func reportLive(decoded []*liveMutator, states map[string]int) {
	for _, lm := range decoded {
		state := lm.outcome.state()
		ingestions.WithLabelValues(sourceAPI, state).Inc()
		ingestionDuration.WithLabelValues(sourceAPI, state).Observe(lm.took.Seconds())
	}
	for state, n := range states {
		mutatorsGauge.WithLabelValues(sourceAPI, state).Set(float64(n))
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
