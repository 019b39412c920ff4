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

package externaldata

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The metric names are apiserver_admission_locationmutator_external_data_<name>.
// The provider label takes the names of the Provider objects (or the
// configured providers): a set only those who may create Providers, the
// cluster administrators, make. The result label takes the values below.
const (
	resultSuccess  = "success"
	resultTimeout  = "timeout"
	resultRedirect = "redirect"
	resultError    = "error"
)

var (
	calls = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "apiserver_admission",
		Subsystem:      "locationmutator",
		Name:           "external_data_calls_total",
		Help:           "Number of calls to external data providers, by provider and result (success, timeout, redirect, error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider", "result"})
	callDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "apiserver_admission",
		Subsystem:      "locationmutator",
		Name:           "external_data_call_duration_seconds",
		Help:           "Time external data providers took to answer a call, by provider.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15), // 1ms to 16s
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider"})
	cacheHits = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "apiserver_admission",
		Subsystem:      "locationmutator",
		Name:           "external_data_cache_hits_total",
		Help:           "Number of keys answered from the cache of external data answers, by provider.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider"})
	keyErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "apiserver_admission",
		Subsystem:      "locationmutator",
		Name:           "external_data_key_errors_total",
		Help:           "Number of keys a provider answered with an error, a value that is not a string, or not at all, by provider.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider"})

	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(calls, callDuration, cacheHits, keyErrors)
	})
}
