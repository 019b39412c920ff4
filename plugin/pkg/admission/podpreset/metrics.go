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

package podpreset

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The metric names are apiserver_admission_podpreset_<name>. Their labels
// are a preset's kind, one of two values, or its mode, one of three.
const (
	metricsNamespace = "apiserver_admission"
	metricsSubsystem = "podpreset"
)

var (
	podsEvaluated = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "pods_evaluated_total",
		Help:           "Number of pod creates matched against the PodPresets and ClusterPodPresets (mirror pods and pods with the exclude annotation are not).",
		StabilityLevel: metrics.ALPHA,
	})
	podsInjected = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "pods_injected_total",
		Help:           "Number of pod creates that had at least one preset applied.",
		StabilityLevel: metrics.ALPHA,
	})
	presetsApplied = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "presets_applied_total",
		Help:           "Number of presets applied to pods, by kind (PodPreset or ClusterPodPreset).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
	conflicts = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "conflicts_total",
		Help:           "Number of pod creates whose matching presets conflicted with the pod or with each other, so that none was applied.",
		StabilityLevel: metrics.ALPHA,
	})
	unenforcedChanges = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "unenforced_changes_total",
		Help:           "Number of times a preset in Warn or Audit mode would have changed a pod being created (or left its presets out, or refused it), by mode.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mode"})
	notSyncedRefusals = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "not_synced_refusals_total",
		Help:           "Number of pod creates refused with a retriable error because the preset cache had not synced yet.",
		StabilityLevel: metrics.ALPHA,
	})
	presetsIndexed = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "presets",
		Help:           "Number of presets in the plugin's cache, by kind (PodPreset or ClusterPodPreset).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})

	registerOnce sync.Once
)

// registerMetrics adds the metrics to the registry kube-apiserver serves on
// /metrics; every plugin instance calls it, the first one registers.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(podsEvaluated, podsInjected, presetsApplied, conflicts, unenforcedChanges, notSyncedRefusals, presetsIndexed)
	})
}
