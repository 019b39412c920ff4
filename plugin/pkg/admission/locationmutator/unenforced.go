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
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/pkg/admission/internal/warnlimit"
	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// UnenforcedAnnotationKey is the audit annotation that records, for every
// mutator in Warn or Audit mode, what enforcing it would have done to the
// object of the request.
const UnenforcedAnnotationKey = "locationmutator.admission.admitkit.io/unenforced-mutations"

// maxRefusalLength bounds the refusal a trial reports, in warnings and in
// the audit annotation alike; a mutator's own effect is bounded by
// mutation.Mutator.Effect, and the number of warnings by warnlimit.
const maxRefusalLength = 300

// reportedKey is where, in the request's reinvocation context, the plugin
// notes that it has reported its mutators in Warn or Audit mode: an audit
// annotation can be added once, and the counter counts each request once.
const reportedKey = PluginName + "/unenforced"

// trialAttributes are the request's attributes as a trial run sees them:
// its refusal is reported, never counted as the request's.
type trialAttributes struct {
	admission.Attributes
}

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
	if reportedBefore(a) {
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
	labelled := matched && slices.ContainsFunc(enforced, addsLabel)
	var original runtime.Object
	if len(tried) > 0 || labelled {
		original = obj.DeepCopyObject()
	}
	var res mutation.Result
	if matched {
		if res, err = p.apply(ctx, a, o, obj, enforced, target); err != nil {
			return err
		}
		if labelled && res.Mutated() {
			tried = matching(unenforced, target, tried)
		}
	}
	if len(tried) > 0 {
		p.report(ctx, a, &sent, p.try(ctx, a, o, original, obj, candidates, tried, &sent))
	}
	return p.recordMutated(a, obj, res, enforced)
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
		res, err := p.apply(ctx, trialAttributes{a}, o, obj, together, &t)
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

// report tells what the mutators in Warn or Audit mode would have done:
// every one in the request's audit annotation and in the counter of its
// mode, the Warn ones also in admission warnings the client prints.
func (p *Plugin) report(ctx context.Context, a admission.Attributes, t *match.Target, trials []trial) {
	if len(trials) == 0 {
		return
	}
	if rc := a.GetReinvocationContext(); rc != nil {
		rc.SetValue(reportedKey, true)
	}
	ref := objectRef(t)
	entries := make([]string, len(trials))
	warnings := warnlimit.New(ctx, fmt.Sprintf("more mutators in Warn mode would change %s: the audit log lists them", ref))
	for i, tr := range trials {
		mode := tr.mutator.Mode()
		unenforcedChanges.WithLabelValues(string(mode)).Inc()
		id := tr.mutator.ID()
		entries[i] = fmt.Sprintf("%s (%s) %s", id, mode, tr.describe(""))
		if mode == mutation.ModeWarn {
			warnings.Add(func() string {
				return fmt.Sprintf("%s %q is in Warn mode; enforced, it %s", id.Kind, id.Name, tr.describe(ref))
			})
		}
	}
	value := strings.Join(entries, "; ")
	if err := a.AddAnnotation(UnenforcedAnnotationKey, value); err != nil {
		klog.V(4).ErrorS(err, "LocationMutator could not record its audit annotation")
	}
	klog.V(4).InfoS("LocationMutator mutators in Warn or Audit mode would change an object", "object", ref, "mutators", value)
}

// reportedBefore reports whether an earlier invocation of the plugin on
// the same request has reported mutators in Warn or Audit mode.
func reportedBefore(a admission.Attributes) bool {
	rc := a.GetReinvocationContext()
	return rc != nil && rc.Value(reportedKey) != nil
}

// objectRef names the object in warnings: "Pod shop/web".
func objectRef(t *match.Target) string {
	name := t.Name
	if name == "" && t.GenerateName != "" {
		name = t.GenerateName + "*"
	}
	if t.Namespace != "" {
		name = t.Namespace + "/" + name
	}
	return t.GVK.Kind + " " + name
}

func isUnenforced(m *mutation.Mutator) bool { return !m.Enforced() }

// addsLabel reports whether m is an AssignMetadata of a label.
func addsLabel(m *mutation.Mutator) bool {
	nodes := m.Location().Nodes
	if m.ID().Kind != mutationsv1.KindAssignMetadata || len(nodes) < 2 {
		return false
	}
	o, ok := nodes[1].(path.Object)
	return ok && o.Reference == "labels"
}
