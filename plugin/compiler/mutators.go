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

package compiler

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/client-go/kubernetes/scheme"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// Names of what the mutators compile into. kube-apiserver runs the
// policies in no set order among themselves, while Gatekeeper runs its
// mutators in one order (kind, then name): so every enforced mutator is a
// mutation of one policy, in that order, guarded by its own match.
const (
	MutatorsPolicyName = "admitkit-mutators"
	// The mutators in Warn and Audit mode report, through a
	// ValidatingAdmissionPolicy each, what enforcing them would change.
	WarnMutatorsPolicyName  = "admitkit-mutators-warn"
	AuditMutatorsPolicyName = "admitkit-mutators-audit"
)

// compiledMutator is one mutator as CEL: its condition, its patches and
// the resources it may apply to.
type compiledMutator struct {
	m     *mutation.Mutator
	guard string
	gen   pathGen
	rules []admissionregistrationv1.RuleWithOperations
}

// compileMutators compiles src's Gatekeeper mutators into r.
func compileMutators(src Sources, r *Result) {
	ms := slices.Clone(src.Mutators)
	slices.SortFunc(ms, func(a, b *mutation.Mutator) int {
		if c := strings.Compare(a.ID().Kind, b.ID().Kind); c != 0 {
			return c
		}
		return strings.Compare(a.ID().Name, b.ID().Name)
	})
	// Mutators in a schema conflict (or duplicates) are all disabled by the
	// plugin, and so stay out of the policy.
	conflicts := map[mutation.ID][]string{}
	for _, c := range mutation.FindConflicts(ms) {
		for _, id := range c.Mutators {
			conflicts[id] = append(conflicts[id], c.Reason)
		}
	}
	var ok []*compiledMutator
	for _, m := range ms {
		if reasons := conflicts[m.ID()]; len(reasons) > 0 {
			r.Refused = append(r.Refused, refusalOf(m, field.ErrorList{field.Forbidden(locationPath, "the plugin runs none of the mutators in a conflict: "+strings.Join(reasons, "; "))}))
			continue
		}
		c, errs := compileMutator(m)
		if len(errs) > 0 {
			r.Refused = append(r.Refused, refusalOf(m, errs))
			continue
		}
		ok = append(ok, c)
	}
	ok = keepConverging(ok, r)
	ok = keepMutatorsApart(ok, src, heldMutators(src, ms, ok, conflicts), r)
	var enforced, warn, audit []*compiledMutator
	for _, c := range ok {
		id := c.m.ID()
		r.Compiled = append(r.Compiled, Source{Kind: id.Kind, Name: id.Name})
		switch {
		case c.m.Matcher().NeverMatches() || c.guard == "":
			// A Generated mutator matches nothing in-process; others
			// change nothing in the kinds they apply to.
		case c.m.Mode() == mutation.ModeWarn:
			warn = append(warn, c)
		case c.m.Mode() == mutation.ModeAudit:
			audit = append(audit, c)
		default:
			enforced = append(enforced, c)
		}
	}
	if len(enforced) > 0 {
		r.MutatingPolicies = append(r.MutatingPolicies, mutatingPolicy(enforced, fitBatches(enforced, batches(enforced), src)))
		r.MutatingBindings = append(r.MutatingBindings, admissionregistrationv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: MutatorsPolicyName},
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: MutatorsPolicyName},
		})
	}
	addReport(r, WarnMutatorsPolicyName, mutation.ModeWarn, warn, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit})
	addReport(r, AuditMutatorsPolicyName, mutation.ModeAudit, audit, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit})
}

func refusalOf(m *mutation.Mutator, errs field.ErrorList) Refusal {
	id := m.ID()
	return Refusal{Source{Kind: id.Kind, Name: id.Name}, errs}
}

var (
	locationPath   = field.NewPath("spec", "location")
	assignPath     = field.NewPath("spec", "parameters", "assign")
	applyToPath    = field.NewPath("spec", "applyTo")
	matchKindsPath = field.NewPath("spec", "match", "kinds")
)

// compileMutator compiles one mutator, or says why it cannot.
func compileMutator(m *mutation.Mutator) (*compiledMutator, field.ErrorList) {
	if m.UsesExternalData() {
		return nil, field.ErrorList{field.Forbidden(assignPath.Child("externalData"), "a policy cannot call an external data provider")}
	}
	c := &compiledMutator{m: m}
	nodes := m.Location().Nodes
	var (
		errs     field.ErrorList
		ends     []end
		bindings []mutation.Binding
	)
	if m.Bindings() == nil {
		c.rules, errs = metadataRules(m)
	} else {
		c.rules, bindings, ends, errs = bindingRules(m, nodes)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if m.Bindings() != nil && len(bindings) == 0 {
		// It changes nothing in any kind it applies to.
		return c, nil
	}
	// bindings are nil for an AssignMetadata, as its own are.
	matched, errs := matches(m.Matcher())
	if len(errs) > 0 {
		return nil, errs
	}
	c.guard = and([]string{appliesTo(bindings), matched})
	leaf, errs := leafOf(m, ends)
	if len(errs) > 0 {
		return nil, errs
	}
	c.gen = pathGen{nodes: nodes, conds: m.PathTests(), leaf: leaf}
	return c, nil
}

// end is the type of the value at the end of a location in a built-in
// kind, and whether a write there may create a parent (typeAt).
type end struct {
	t       reflect.Type
	creates bool
}

// leafOf is what the mutator's kind writes; ends are the ends of its
// location in each built-in kind it applies to.
func leafOf(m *mutation.Mutator, ends []end) (leaf, field.ErrorList) {
	if a, ok := m.Assignment(); ok {
		switch a.FromMetadata {
		case "name":
			return assignLeaf{value: objectName}, checkEnds(ends, assignPath.Child("fromMetadata"), stringEnd)
		case "namespace":
			return assignLeaf{value: targetNamespace}, checkEnds(ends, assignPath.Child("fromMetadata"), stringEnd)
		}
		errs := checkEnds(ends, assignPath.Child("value"), func(e end) error {
			if a.Value == nil {
				return nullEnd(e)
			}
			return fits(a.Value, e.t, e.creates)
		})
		return assignLeaf{value: celLiteral(a.Value), null: a.Value == nil}, errs
	}
	if values, prune, exact, ok := m.SetValues(); ok {
		vp := field.NewPath("spec", "parameters", "values", "fromList")
		if !exact {
			return nil, field.ErrorList{field.Invalid(vp, values, "a value equal to nothing is merged again on every pass")}
		}
		errs := checkEnds(ends, vp, func(e end) error {
			t := deref(e.t)
			if t.Kind() != reflect.Slice {
				return fmt.Errorf("%s is not a list", t)
			}
			// A list keeps an empty element, which no omitempty drops.
			for _, v := range values {
				if err := fits(v, t.Elem(), false); err != nil {
					return err
				}
			}
			return nil
		})
		return setLeaf{values: celLiteral(values), empty: len(values) == 0, prune: prune}, errs
	}
	if domain, p, tag, ok := m.ImageParts(); ok {
		return imageLeaf{domain, p, tag}, checkEnds(ends, locationPath, stringEnd)
	}
	return nil, field.ErrorList{field.InternalError(nil, fmt.Errorf("%s is of no kind the compiler knows", m.ID()))}
}

func checkEnds(ends []end, p *field.Path, check func(end) error) field.ErrorList {
	var errs field.ErrorList
	for _, e := range ends {
		if err := check(e); err != nil {
			errs = append(errs, field.Invalid(p, "", err.Error()))
		}
	}
	return errs
}

func stringEnd(e end) error {
	if deref(e.t).Kind() != reflect.String {
		return fmt.Errorf("the location holds %s, not a string", e.t)
	}
	return nil
}

func nullEnd(e end) error {
	switch e.t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return nil
	}
	return fmt.Errorf("null does not fit %s", e.t)
}

// bindingRules are the resources of the mutator's applyTo, the bindings
// in which it may change something, and the ends of its location in each.
// Only built-in kinds compile: their resources and their types are known.
func bindingRules(m *mutation.Mutator, nodes []path.Node) ([]admissionregistrationv1.RuleWithOperations, []mutation.Binding, []end, field.ErrorList) {
	var (
		rules []admissionregistrationv1.RuleWithOperations
		gvks  []mutation.Binding
		ends  []end
		errs  field.ErrorList
		seen  = map[schema.GroupVersionKind]kindEnd{}
	)
	for _, b := range m.Bindings() {
		e, known := seen[b.GVK]
		if !known {
			e = bindingEnd(m, b.GVK, nodes)
			seen[b.GVK] = e
			if e.err != nil {
				errs = append(errs, e.err)
			}
			if e.t != nil {
				ends = append(ends, e.end)
			}
		}
		if e.t != nil {
			gvks = append(gvks, b)
			rules = addRule(rules, b.GVK.Group, b.GVK.Version, resourceOf(b.GVK), b.Operation)
		}
	}
	return rules, gvks, ends, errs
}

// kindEnd is where a location ends in one kind: its end, or why the kind
// is refused; neither when the mutator changes nothing in the kind.
type kindEnd struct {
	end
	err *field.Error
}

func bindingEnd(m *mutation.Mutator, gvk schema.GroupVersionKind, nodes []path.Node) kindEnd {
	t, ok := goType(gvk)
	if !ok {
		return kindEnd{err: field.NotSupported(applyToPath, gvk.String(), []string{"a built-in kind, whose resource and schema are known"})}
	}
	et, creates, err := typeAt(t, nodes)
	switch {
	case errors.Is(err, errAbsent):
		return kindEnd{}
	case err != nil:
		return kindEnd{err: field.Invalid(locationPath, m.Location().String(), fmt.Sprintf("in %s: %v", gvk.Kind, err))}
	}
	return kindEnd{end: end{et, creates}}
}

// metadataRules are the resources an AssignMetadata's match.kinds selects
// (every kind has labels and annotations).
func metadataRules(m *mutation.Mutator) ([]admissionregistrationv1.RuleWithOperations, field.ErrorList) {
	kinds := m.Matcher().Spec().Kinds
	var rules []admissionregistrationv1.RuleWithOperations
	if len(kinds) == 0 {
		return addRule(nil, "*", "*", "*", mutation.OperationCreate, mutation.OperationUpdate), nil
	}
	var errs field.ErrorList
	for i, k := range kinds {
		groups := k.APIGroups
		if len(groups) == 0 || slices.Contains(groups, "*") {
			groups = []string{"*"}
		}
		if len(k.Kinds) == 0 || slices.Contains(k.Kinds, "*") {
			for _, g := range groups {
				rules = addRule(rules, g, "*", "*", mutation.OperationCreate, mutation.OperationUpdate)
			}
			continue
		}
		for j, kind := range k.Kinds {
			found := false
			for _, gvk := range builtInKinds() {
				if gvk.Kind == kind && (groups[0] == "*" || slices.Contains(groups, gvk.Group)) {
					found = true
					rules = addRule(rules, gvk.Group, "*", resourceOf(gvk), mutation.OperationCreate, mutation.OperationUpdate)
				}
			}
			if !found {
				errs = append(errs, field.NotSupported(matchKindsPath.Index(i).Child("kinds").Index(j), kind, []string{"a built-in kind, whose resource is known"}))
			}
		}
	}
	return rules, errs
}

// builtInKinds are the kinds of client-go's scheme, sorted.
func builtInKinds() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version != "__internal" && !strings.HasSuffix(gvk.Kind, "List") {
			out = append(out, gvk)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// resourceOf is the resource of a built-in kind: its lower-cased plural,
// as kube-apiserver names every built-in resource.
func resourceOf(gvk schema.GroupVersionKind) string {
	r, _ := meta.UnsafeGuessKindToResource(gvk)
	return r.Resource
}

// addRule adds the operations on a resource to rules, in the rule of that
// resource if there is one.
func addRule(rules []admissionregistrationv1.RuleWithOperations, group, version, resource string, ops ...string) []admissionregistrationv1.RuleWithOperations {
	i := slices.IndexFunc(rules, func(r admissionregistrationv1.RuleWithOperations) bool {
		return r.APIGroups[0] == group && r.APIVersions[0] == version && r.Resources[0] == resource
	})
	if i < 0 {
		rules = append(rules, admissionregistrationv1.RuleWithOperations{Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource},
		}})
		i = len(rules) - 1
	}
	for _, op := range ops {
		if o := admissionregistrationv1.OperationType(op); !slices.Contains(rules[i].Operations, o) {
			rules[i].Operations = append(rules[i].Operations, o)
		}
	}
	return rules
}

// keepConverging refuses the mutators whose set Gatekeeper would have to
// run more than once: kube-apiserver runs a policy once (and again only
// when a later plugin changed the object). One pass is enough when no
// mutator changes what one before it in the run order reads, nor adds a
// label another selects by (mutation/convergence.go's argument, made for
// every object rather than for one).
func keepConverging(cs []*compiledMutator, r *Result) []*compiledMutator {
	why := map[*compiledMutator][]string{}
	// Those that change nothing take no part.
	var active []*compiledMutator
	for _, c := range cs {
		if c.guard != "" && !c.m.Matcher().NeverMatches() {
			active = append(active, c)
		}
	}
	for i, reader := range active {
		for _, writer := range active[i+1:] {
			if mayMeet(reader.m, writer.m) && mutation.MayAffect(writer.m, reader.m) {
				why[reader] = append(why[reader], fmt.Sprintf("%s, which runs after it, may change what it reads", writer.m.ID()))
				why[writer] = append(why[writer], fmt.Sprintf("it may change what %s, which runs before it, reads", reader.m.ID()))
			}
		}
	}
	for _, adder := range active {
		for _, reader := range active {
			if reader != adder && addsLabelSelectedBy(adder.m, reader.m) {
				why[adder] = append(why[adder], fmt.Sprintf("it adds a label %s selects by", reader.m.ID()))
				why[reader] = append(why[reader], fmt.Sprintf("it selects by labels, which %s adds", adder.m.ID()))
			}
		}
	}
	var kept []*compiledMutator
	for _, c := range cs {
		if reasons := why[c]; len(reasons) > 0 {
			r.Refused = append(r.Refused, refusalOf(c.m, field.ErrorList{field.Forbidden(locationPath,
				"Gatekeeper would run the set again until it settles, kube-apiserver runs a policy once: "+strings.Join(reasons, "; "))}))
			continue
		}
		kept = append(kept, c)
	}
	return kept
}

// addsLabelSelectedBy reports whether adder adds a label whose key a
// selector of reader reads: a pass that adds it changes whether reader
// matches.
func addsLabelSelectedBy(adder, reader *mutation.Mutator) bool {
	if !adder.AddsLabel() {
		return false
	}
	key := adder.Location().Nodes[2].(path.Object).Reference
	return slices.Contains(selectorKeys(reader), key)
}

// selectorKeys are the label keys the mutator's selectors read from the
// object (a namespaceSelector reads a Namespace's own).
func selectorKeys(m *mutation.Mutator) []string {
	var keys []string
	spec := m.Matcher().Spec()
	for _, sel := range []*metav1.LabelSelector{spec.LabelSelector, spec.NamespaceSelector} {
		if sel == nil {
			continue
		}
		for k := range sel.MatchLabels {
			keys = append(keys, k)
		}
		for _, r := range sel.MatchExpressions {
			keys = append(keys, r.Key)
		}
	}
	return keys
}

// mayMeet reports whether two mutators may both apply to one object: an
// AssignMetadata applies to any kind, the others to their applyTo's.
func mayMeet(a, b *mutation.Mutator) bool {
	ab, bb := a.Bindings(), b.Bindings()
	if ab == nil || bb == nil {
		return true
	}
	for _, x := range ab {
		if slices.Contains(bb, x) {
			return true
		}
	}
	return false
}

// matchConstraints are the resources of every mutator in cs. Gatekeeper's
// own mutators are never changed (the plugin's break glass).
func matchConstraints(cs []*compiledMutator) *admissionregistrationv1.MatchResources {
	var rules []admissionregistrationv1.RuleWithOperations
	for _, c := range cs {
		for _, rule := range c.rules {
			for _, op := range rule.Operations {
				rules = addRule(rules, rule.APIGroups[0], rule.APIVersions[0], rule.Resources[0], string(op))
			}
		}
	}
	named := make([]admissionregistrationv1.NamedRuleWithOperations, len(rules))
	for i, rule := range rules {
		named[i].RuleWithOperations = rule
	}
	exact := admissionregistrationv1.Exact
	return &admissionregistrationv1.MatchResources{
		ResourceRules: named,
		ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{mutationsv1.Group}, APIVersions: []string{"*"}, Resources: []string{"*"}},
		}}},
		MatchPolicy: &exact,
	}
}

func variables() []admissionregistrationv1.Variable {
	out := make([]admissionregistrationv1.Variable, len(matchVariables))
	for i, v := range matchVariables {
		out[i] = admissionregistrationv1.Variable{Name: v.name, Expression: v.expression}
	}
	return out
}

// jsonPatch builds one patch of a policy's mutation, as a map that the
// mutation makes a JSONPatch of: flatten(), which gathers the patches of
// list elements, is typed list(dyn) whatever its elements, and a list of
// JSONPatch literals could not be typed back from it.
func jsonPatch(op string, ptr pointer, value string, phase int) string {
	if value == "" {
		value = "null"
	}
	return fmt.Sprintf("{\"op\": dyn(%q), \"path\": dyn(%s), \"value\": dyn(%s), \"phase\": dyn(%d)}", op, ptr, value, phase)
}

// mutatingPolicy is the policy of the enforced mutators cs, in run order:
// one mutation per batch of bs (batches), the patches of its mutators one
// after another.
func mutatingPolicy(cs []*compiledMutator, bs [][]*compiledMutator) admissionregistrationv1.MutatingAdmissionPolicy {
	fail := admissionregistrationv1.Fail
	p := admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: MutatorsPolicyName},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: matchConstraints(cs),
			Variables:        variables(),
			FailurePolicy:    &fail,
			// Not Never, though one pass is all the policy alone needs
			// (keepConverging) and Never would spare kube-apiserver the
			// second run of every mutation it makes on each create (it
			// asks for one after any mutation, even an empty patch): the
			// plugin, in-tree or behind admitkit's webhook (IfNeeded), runs
			// again when a webhook or policy after it changed the object,
			// and so applies the mutators to, say, a container a later
			// webhook added. IfNeeded runs the policy again in exactly that
			// case too; Never would leave such a container as it came.
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
		},
	}
	for _, batch := range bs {
		p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{
			PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: fmt.Sprintf("%s.map(p, JSONPatch{op: string(p.op), path: string(p.path), value: p.value})", batchPatches(batch))},
		})
	}
	return p
}

// batchPatches is the CEL list of the patches of a batch's mutators, each
// computed from the object the batch finds, in the order they apply: the
// creations of empty parents first, shallowest first (creation), then the
// others in run order.
func batchPatches(batch []*compiledMutator) string {
	parts := make([]string, len(batch))
	var phases []int
	for i, c := range batch {
		g := c.gen
		g.emit = jsonPatch
		parts[i] = fmt.Sprintf("(%s ? %s : [])", c.guard, g.expression())
		for d := range g.nodes {
			if g.createsMember(d) && !slices.Contains(phases, creation(d)) {
				phases = append(phases, creation(d))
			}
		}
	}
	all := "(" + strings.Join(parts, " + ") + ")"
	if len(batch) == 1 || len(phases) == 0 {
		// One mutator's patches are in order already.
		return all
	}
	slices.Sort(phases)
	in := make([]string, 0, len(phases)+1)
	for _, ph := range append(phases, 0) {
		in = append(in, fmt.Sprintf("ops.filter(p, p.phase == %d)", ph))
	}
	return bind("ops", all, strings.Join(in, " + "))
}

// batches splits the enforced mutators, in run order, into runs of
// consecutive ones that one mutation can carry. Every JSONPatch mutation
// costs kube-apiserver a round of the whole object through JSON, so the
// fewer the better; but a batch's patches are all computed from the object
// as the batch finds it, so a mutator joins one only where that is the
// same as computing its patches after the others' have been applied
// (batchable with each of them).
func batches(cs []*compiledMutator) [][]*compiledMutator {
	var out [][]*compiledMutator
	for _, c := range cs {
		if n := len(out); n > 0 && !slices.ContainsFunc(out[n-1], func(b *compiledMutator) bool { return !batchable(b, c) }) &&
			utf8.RuneCountInString(batchPatches(append(slices.Clip(out[n-1]), c))) <= maxBatchExpression {
			out[n-1] = append(out[n-1], c)
			continue
		}
		out = append(out, []*compiledMutator{c})
	}
	return out
}

// fitBatches cuts each batch of bs, the batches of cs, whose mutation
// costs more than maxBatchCost on the reference pod (measure) into batches
// that fit, each the longest run of the rest that does. A batch's patches
// are one expression, which kube-apiserver stops at
// celconfig.PerCallLimit, where the same mutators in mutations of their
// own would each have that limit: a batch is filled to a quarter of it
// only, so that pods up to four times the reference's size, in what the
// batch walks, still pass. Consecutive mutators of a batch are a batch
// too. The whole policy is measured first, as boundCost then measures it
// again (the memo answers it there, on the same reference pod), so that a
// set whose batches fit costs no more; a mutator, or a batch that fits
// alone but not after the others, stays as it is, for boundCost to refuse
// what passes the limit.
func fitBatches(cs []*compiledMutator, bs [][]*compiledMutator, src Sources) [][]*compiledMutator {
	settled := map[*compiledMutator]bool{}
	for {
		i := overBatch(cs, bs, src, settled)
		if i < 0 {
			return bs
		}
		fitted := fitBatch(bs[i], src)
		if len(fitted) == 1 {
			settled[bs[i][0]] = true
		}
		bs = slices.Replace(bs, i, i+1, fitted...)
	}
}

// overBatch is the index of the first batch of bs, of more than one
// mutator and not settled, whose mutation costs more than maxBatchCost, or
// -1.
func overBatch(cs []*compiledMutator, bs [][]*compiledMutator, src Sources, settled map[*compiledMutator]bool) int {
	policy := Result{MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{mutatingPolicy(cs, bs)}}
	for _, p := range measure(policy, src, "", false) {
		for _, g := range p.Groups {
			if i := g.mutation - 1; i >= 0 && len(bs[i]) > 1 && !settled[bs[i][0]] && (g.Err != nil || g.Cost > maxBatchCost) {
				return i
			}
		}
	}
	return -1
}

// fitBatch cuts b into runs whose mutators' costs, each measured alone
// on the reference pod as it comes, add up to at most maxBatchCost: their
// sum bounds what they cost in one expression, save for what each reads
// again after another's patches, which the whole policy's measure sees.
func fitBatch(b []*compiledMutator, src Sources) [][]*compiledMutator {
	var out [][]*compiledMutator
	var run []*compiledMutator
	var sum int64
	for _, c := range b {
		cost := aloneCost(c, src)
		if len(run) > 0 && sum+cost > maxBatchCost {
			out = append(out, run)
			run, sum = nil, 0
		}
		run = append(run, c)
		sum += cost
	}
	return append(out, run)
}

// aloneCost is what the mutation of c alone costs on the reference pod
// as it comes, the variables it reads included; the limit when
// kube-apiserver would stop it.
func aloneCost(c *compiledMutator, src Sources) int64 {
	p := mutatingPolicy([]*compiledMutator{c}, [][]*compiledMutator{{c}})
	p.Spec.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy
	trial := Result{MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{p}}
	var cost int64
	for _, pc := range measure(trial, src, "", false) {
		for _, g := range pc.Groups {
			if g.Err != nil {
				return celconfig.PerCallLimit
			}
			cost += g.Cost
		}
	}
	return cost
}

// maxBatchCost is what one batch's mutation may cost on the reference pod.
const maxBatchCost = celconfig.PerCallLimit / 4

// maxBatchExpression bounds the patches of one batch: kube-apiserver's
// CEL parser refuses an expression of more than 100,000 code points
// (cel-go's default, which kube-apiserver keeps), and the mutation adds a
// few dozen to the patches.
const maxBatchExpression = 100_000 - 1_000

// batchable reports whether the patches of a and of b, which runs after
// it, computed from one object and applied one after the other, are what
// running a and then b gives. That holds when they never both apply to one
// object, or when:
//   - a writes nothing b reads (mutation.MayAffect): b's patches do not
//     depend on a's;
//   - their locations part at some node (mutation.WritesPartAt), so that
//     each writes in a subtree of its own; a patch only adds or removes a
//     field there, replaces an element, or appends one with "/-", so
//     neither moves what the other's pointers address;
//   - and above that node, neither may append an element (a keyed
//     selector finding none): the other would write into the element
//     after it, and not append a second one. A field either creates is
//     added empty before anything is written (batchPatches), and the walk
//     writes below a missing field what it writes below an empty one, so
//     b finds what it would have found after a's creation, save for a
//     pathTest of that very field, which is a read MayAffect sees.
//
// Each's guard reads what keepConverging keeps every mutator from writing.
func batchable(a, b *compiledMutator) bool {
	if !mayMeet(a.m, b.m) {
		return true
	}
	if mutation.MayAffect(a.m, b.m) {
		return false
	}
	k, ok := mutation.WritesPartAt(a.m, b.m)
	if !ok {
		return false
	}
	for d := range k {
		if a.gen.createsElement(d) || b.gen.createsElement(d) {
			return false
		}
	}
	return true
}

// addReport adds the policy that reports what the mutators in a mode other
// than Enforce would change: a validation each, which fails when the
// mutator matches and would change the object, with the plugin's warning.
func addReport(r *Result, name string, mode mutation.Mode, cs []*compiledMutator, actions []admissionregistrationv1.ValidationAction) {
	if len(cs) == 0 {
		return
	}
	fail := admissionregistrationv1.Fail
	p := admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: matchConstraints(cs),
			Variables:        variables(),
			FailurePolicy:    &fail,
		},
	}
	for _, c := range cs {
		g := c.gen
		// Only whether there would be a patch matters here.
		g.emit = func(string, pointer, string, int) string { return "true" }
		id := c.m.ID()
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("!(%s) || size(%s) == 0", c.guard, g.expression()),
			Message:    fmt.Sprintf("%s %q is in %s mode; enforced, it would %s", id.Kind, id.Name, mode, c.m.Effect()),
		})
	}
	r.ValidatingPolicies = append(r.ValidatingPolicies, p)
	r.ValidatingBindings = append(r.ValidatingBindings, admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: actions},
	})
}
