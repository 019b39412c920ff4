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

package trialreport

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/admitkit/admitkit/plugin/internal/warnlimit"
)

type recorder struct{ got []string }

func (r *recorder) AddWarning(_, text string) { r.got = append(r.got, text) }

// annotated keeps the audit annotations a request is given.
type annotated struct {
	admission.Attributes
	annotations map[string]string
}

func (a *annotated) AddAnnotation(key, value string) error {
	a.annotations[key] = value
	return nil
}

func TestReport(t *testing.T) {
	counter := metrics.NewCounterVec(&metrics.CounterOpts{Name: "trials_total", Help: "test", StabilityLevel: metrics.ALPHA}, []string{"mode"})
	registry := metrics.NewKubeRegistry()
	registry.MustRegister(counter)
	r := &Reporter{AnnotationKey: "example.admitkit.io/trials", Counter: counter, Mutations: "things", LogMessage: "Things would change an object"}

	var trials []Trial
	for i := range warnlimit.Max + 1 {
		trials = append(trials, Trial{Name: fmt.Sprintf("w%d", i), Mode: modeWarn, Effect: "would set x", Warning: func() string { return fmt.Sprintf("warning %d", i) }})
	}
	trials = append(trials, Trial{Name: "a", Mode: "Audit", Effect: "would refuse it", Warning: func() string { t.Error("an Audit trial must send no warning"); return "" }})

	warnings := &recorder{}
	a := &annotated{Attributes: admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Kind: "Pod"}, "shop", "web", schema.GroupVersionResource{Resource: "pods"}, "", admission.Create, nil, false, nil), annotations: map[string]string{}}
	r.Report(warning.WithWarningRecorder(context.Background(), warnings), a, "Pod shop/web", trials)

	var want []string
	for i := range warnlimit.Max {
		want = append(want, fmt.Sprintf("warning %d", i))
	}
	want = append(want, "more things in Warn mode would change Pod shop/web: the audit log lists them")
	if !slices.Equal(warnings.got, want) {
		t.Errorf("warnings %q, want %q", warnings.got, want)
	}
	got := a.annotations["example.admitkit.io/trials"]
	if wantPrefix := "w0 (Warn) would set x; w1 (Warn) would set x"; len(got) < len(wantPrefix) || got[:len(wantPrefix)] != wantPrefix {
		t.Errorf("annotation %q, want it to start with %q", got, wantPrefix)
	}
	if suffix := "; a (Audit) would refuse it"; len(got) < len(suffix) || got[len(got)-len(suffix):] != suffix {
		t.Errorf("annotation %q, want it to end with %q", got, suffix)
	}
	if err := testutil.GatherAndCompare(registry, strings.NewReader(`
# HELP trials_total [ALPHA] test
# TYPE trials_total counter
trials_total{mode="Audit"} 1
trials_total{mode="Warn"} 6
`), "trials_total"); err != nil {
		t.Error(err)
	}
}
