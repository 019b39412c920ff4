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
	"strconv"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The metric names are admitkit_webhook_<name>. Their labels are bounded:
// plugin is one of the served plugins, phase "mutate" or "validate",
// operation one of the four admission operations, result "allowed" or
// "refused", and code the HTTP status of a refusal (the few the plugins
// answer: 400, 403, 422, 500, 503).
const (
	metricsNamespace = "admitkit"
	metricsSubsystem = "webhook"
)

var (
	reviewsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "reviews_total",
		Help:           "Number of admission reviews answered, by plugin, phase, operation and result (allowed or refused).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"plugin", "phase", "operation", "result"})
	reviewDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: metricsNamespace,
		Subsystem: metricsSubsystem,
		Name:      "review_duration_seconds",
		Help:      "Time to answer an admission review, from its decoded request to its response, by plugin and phase; a review of several plugins is shared out among them (see observeChain).",
		// From 25 µs to about 0.8 s: a plugin answers in microseconds, the
		// default webhook timeout is seconds.
		Buckets:        metrics.ExponentialBuckets(25e-6, 2, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"plugin", "phase"})
	refusalsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "refusals_total",
		Help:           "Number of admission reviews refused, by plugin, phase and HTTP status code of the refusal.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"plugin", "phase", "code"})
	malformedReviews = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "malformed_reviews_total",
		Help:           "Number of HTTP requests answered 400 because they held no AdmissionReview v1 request.",
		StabilityLevel: metrics.ALPHA,
	})
)

var registerOnce sync.Once

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(reviewsTotal, reviewDuration, refusalsTotal, malformedReviews)
	})
}

// observeChain records one answered review per plugin of the chain that
// the review reached: each counts as allowed, but the last one reached when
// the review was refused, which counts as the refusal. Plugins after a
// refusal did not run and count nothing, as a webhook of theirs would not
// have been called.
//
// A chain's time goes to its plugins so that their durations add up to
// the review's: each plugin's is from the end of the plugin before it to
// the end of its own Admit or Validate; decoding the request is the first
// plugin's that handles the operation (it is decoded for that plugin), and
// encoding the result and computing the patch are the last plugin's. A
// plugin reviewed alone so keeps the whole review's time, as before
// chains; in a chain a plugin's own slowness shows as its own, and the
// shared work at the ends is not counted twice.
func observeChain(c *chain, phase Phase, operation string, refusalCode int32, took []time.Duration) {
	for i, d := range took {
		var code int32
		if i == len(took)-1 {
			code = refusalCode
		}
		observeReview(c.plugins[i].name, phase, operation, code, d)
	}
}

// observeReview records one plugin's part of an answered review.
func observeReview(plugin string, phase Phase, operation string, refusalCode int32, took time.Duration) {
	result := "allowed"
	if refusalCode != 0 {
		result = "refused"
		refusalsTotal.WithLabelValues(plugin, string(phase), strconv.Itoa(int(refusalCode))).Inc()
	}
	reviewsTotal.WithLabelValues(plugin, string(phase), operation, result).Inc()
	reviewDuration.WithLabelValues(plugin, string(phase)).Observe(took.Seconds())
}
