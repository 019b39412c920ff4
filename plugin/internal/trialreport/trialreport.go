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

// Package trialreport reports what a mutating plugin's mutations in Warn
// or Audit mode would have done to an object had they been enforced: the
// trial run of a preset or a mutator before it is switched to Enforce.
// Every trial is written into the request's audit annotation and counted
// by its mode; those in Warn mode are also sent to the client as
// admission warnings, at most warnlimit.Max of them. The plugin works out
// what each trial did; how it is reported is the same for every plugin.
package trialreport

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/internal/warnlimit"
)

// modeWarn is the mode whose trials are also sent as warnings.
const modeWarn = "Warn"

// Trial is what enforcing one mutation would have done.
type Trial struct {
	// Name names the mutation in the audit annotation.
	Name string
	// Mode is its spec.mode, Warn or Audit.
	Mode string
	// Effect says what enforcing it would do, in full.
	Effect string
	// Warning writes the warning a trial in Warn mode sends; it is called
	// only for the warnings that are sent.
	Warning func() string
}

// Reporter reports the trials of one plugin.
type Reporter struct {
	// AnnotationKey is the audit annotation the trials are written to.
	AnnotationKey string
	// Counter counts the trials, labelled by mode.
	Counter *metrics.CounterVec
	// Mutations is what the plugin's mutations are called in the warning
	// that points at the audit log: "presets", "mutators".
	Mutations string
	// LogMessage is the message of the log line listing the trials.
	LogMessage string
}

// Report reports the trials of the request a on object, which names the
// object (see package objectname). No trials, no report.
func (r *Reporter) Report(ctx context.Context, a admission.Attributes, object string, trials []Trial) {
	if len(trials) == 0 {
		return
	}
	entries := make([]string, len(trials))
	warnings := warnlimit.New(ctx, fmt.Sprintf("more %s in Warn mode would change %s: the audit log lists them", r.Mutations, object))
	for i, t := range trials {
		r.Counter.WithLabelValues(t.Mode).Inc()
		entries[i] = fmt.Sprintf("%s (%s) %s", t.Name, t.Mode, t.Effect)
		if t.Mode == modeWarn {
			warnings.Add(t.Warning)
		}
	}
	value := strings.Join(entries, "; ")
	logger := klog.FromContext(ctx)
	if err := a.AddAnnotation(r.AnnotationKey, value); err != nil {
		logger.V(4).Error(err, "Could not record an audit annotation", "key", r.AnnotationKey)
	}
	logger.V(4).Info(r.LogMessage, "object", object, "trials", value)
}
