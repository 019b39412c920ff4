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
	"context"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/internal/objectname"
	"github.com/admitkit/admitkit/plugin/internal/trialreport"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// UnenforcedAnnotationKey is the audit annotation that records, for every
// mutator in Warn or Audit mode, what enforcing it would have done to the
// object of the request.
const UnenforcedAnnotationKey = "locationmutator.admission.admitkit.io/unenforced-mutations"

// maxRefusalLength bounds the refusal a trial reports, in warnings and in
// the audit annotation alike; a mutator's own effect is bounded by
// mutation.Mutator.Effect, and the number of warnings by trialreport.
const maxRefusalLength = 300

// trial is what enforcing one mutator in Warn or Audit mode, together with
// the enforced ones, would have done to an object.
type trial struct {
	mutator *mutation.Mutator
	// err is the refusal it would have caused; nil when it would have
	// changed the object.
	err error
	// external are the values providers' answers would have written.
	external []string
}

// describe says what enforcing the mutator would do to the object, ref
// when it names it, "it" otherwise.
func (t trial) describe(ref string) string {
	if t.err != nil {
		if ref == "" {
			ref = "it"
		}
		return "would refuse " + ref + ": " + mutation.Shorten(t.err.Error(), maxRefusalLength)
	}
	effect := t.mutator.Effect()
	if t.mutator.UsesExternalData() && len(t.external) > 0 {
		effect += fmt.Sprintf(" (the answer: %s)", mutation.Shorten(strings.Join(t.external, ", "), maxRefusalLength))
	}
	if ref == "" {
		return "would " + effect
	}
	return "would " + effect + " in " + ref
}

// admitTrying is Admit for candidates some of which are in Warn or Audit
// mode: the enforced ones mutate obj as they would alone, then each
// unenforced one that matches is tried with them on a copy of the object
// as the request brought it, and what it would have changed is reported.
// Nothing an unenforced mutator does, not even a failed match, changes or
// refuses the request.
func (p *Plugin) admitTrying(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces, obj runtime.Object, candidates []*mutation.Mutator, target *match.Target) error {
	enforced := make([]*mutation.Mutator, 0, len(candidates))
	var unenforced []*mutation.Mutator
	for _, m := range candidates {
		if m.Enforced() {
			enforced = append(enforced, m)
		} else {
			unenforced = append(unenforced, m)
		}
	}
	matched, err := mutation.AnyMatches(enforced, target)
	if err != nil {
		return refuse(a, err)
	}
	if recordOf(a).reported.Done() {
		if !matched {
			return nil
		}
		return p.mutate(ctx, a, o, obj, enforced, target)
	}
	sent := *target
	tried := matching(unenforced, &sent, nil)
	if !matched && len(tried) == 0 {
		return nil
	}
	// An enforced AssignMetadata may add a label an unenforced mutator
	// selects: then the object as sent is kept even if none matches yet.
	labelled := matched && slices.ContainsFunc(enforced, (*mutation.Mutator).AddsLabel)
	var original runtime.Object
	if len(tried) > 0 || labelled {
		original = obj.DeepCopyObject()
	}
	var res mutation.Result
	if matched {
		var failed error
		if res, failed, err = p.apply(externalRequest{ctx, a, false}, o, obj, enforced, target); err != nil {
			return err
		}
		if failed != nil {
			return refuse(a, failed)
		}
		if labelled && res.Mutated() {
			tried = matching(unenforced, target, tried)
		}
	}
	if len(tried) > 0 {
		p.report(ctx, a, &sent, p.try(ctx, a, o, original, obj, candidates, tried, &sent))
	}
	return p.recordMutated(a, obj, res)
}

// matching returns, in run order, the mutators of unenforced that are in
// tried or match t. One whose match fails is taken too: its trial reports
// the refusal that failure would cause.
func matching(unenforced []*mutation.Mutator, t *match.Target, tried []*mutation.Mutator) []*mutation.Mutator {
	var out []*mutation.Mutator
	for _, m := range unenforced {
		if slices.Contains(tried, m) {
			out = append(out, m)
			continue
		}
		if ok, err := m.Matcher().Matches(t); ok || err != nil {
			out = append(out, m)
		}
	}
	return out
}

// try runs each mutator of tried with the enforced candidates on a copy of
// original, and returns those whose run refuses the object or gives
// another object than admitted, the enforced candidates' result.
func (p *Plugin) try(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces, original, admitted runtime.Object, candidates, tried []*mutation.Mutator, sent *match.Target) []trial {
	var out []trial
	for _, m := range tried {
		together := slices.DeleteFunc(slices.Clone(candidates), func(c *mutation.Mutator) bool { return c != m && !c.Enforced() })
		obj := original.DeepCopyObject()
		// sent's labels may be the request object's own map, which the
		// enforced mutators have changed since: the trial reads its copy's.
		t := *sent
		if accessor, err := meta.Accessor(obj); err == nil {
			t.Labels = labels.Set(accessor.GetLabels())
		}
		// A trial's refusal is reported, never counted as the request's.
		res, failed, err := p.apply(externalRequest{ctx, a, true}, o, obj, together, &t)
		if failed != nil {
			err = refusal(a, failed)
		}
		if err != nil {
			out = append(out, trial{mutator: m, err: err})
			continue
		}
		if !apiequality.Semantic.DeepEqual(obj, admitted) {
			out = append(out, trial{mutator: m, external: res.ExternalValues})
		}
	}
	return out
}

// unenforcedReports writes the trials of mutators in Warn or Audit mode.
var unenforcedReports = trialreport.Reporter{
	AnnotationKey: UnenforcedAnnotationKey,
	Counter:       unenforcedChanges,
	Mutations:     "mutators",
	LogMessage:    "LocationMutator mutators in Warn or Audit mode would change an object",
}

// report tells what the mutators in Warn or Audit mode would have done to
// the object t describes, once per request.
func (p *Plugin) report(ctx context.Context, a admission.Attributes, t *match.Target, trials []trial) {
	if len(trials) == 0 || !recordOf(a).reported.First() {
		return
	}
	name := objectname.Of(t.GVK.GroupKind(), t.Namespace, t.Name, t.GenerateName)
	reports := make([]trialreport.Trial, len(trials))
	for i, tr := range trials {
		id := tr.mutator.ID()
		reports[i] = trialreport.Trial{
			Name:   id.String(),
			Mode:   string(tr.mutator.Mode()),
			Effect: tr.describe(""),
			Warning: func() string {
				return fmt.Sprintf("%s %q is in Warn mode; enforced, it %s", id.Kind, id.Name, tr.describe(name))
			},
		}
	}
	unenforcedReports.Report(ctx, a, name, reports)
}

func isUnenforced(m *mutation.Mutator) bool { return !m.Enforced() }
