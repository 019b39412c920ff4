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

package policysync

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The metric names are admitkit_policysync_<name>.
var (
	compiledSources = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "admitkit", Subsystem: "policysync", Name: "compiled_sources",
		Help:           "Number of presets and mutators the last compilation compiled into admission policies.",
		StabilityLevel: metrics.ALPHA,
	})
	refusedSources = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "admitkit", Subsystem: "policysync", Name: "not_compiled_sources",
		Help:           "Number of presets and mutators the last compilation left to the webhook; each has a NotCompiled Event saying why.",
		StabilityLevel: metrics.ALPHA,
	})
	compiledObjects = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "admitkit", Subsystem: "policysync", Name: "policy_objects",
		Help:           "Number of admission policies and bindings in the compiled set last applied.",
		StabilityLevel: metrics.ALPHA,
	})
	carriedSources = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "admitkit", Subsystem: "policysync", Name: "carried_sources",
		Help:           "Number of presets and mutators this replica's webhook leaves to the compiled policies it observes.",
		StabilityLevel: metrics.ALPHA,
	})
	syncsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "admitkit", Subsystem: "policysync", Name: "syncs_total",
		Help:           "Number of compile-and-apply passes, by result (success or error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
)

var registerOnce sync.Once

// registerMetrics registers the metrics once, with the server's others.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(compiledSources, refusedSources, compiledObjects, carriedSources, syncsTotal)
	})
}
