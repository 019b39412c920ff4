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
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// The CEL cost bound.
//
// kube-apiserver does not estimate a MutatingAdmissionPolicy's or a
// ValidatingAdmissionPolicy's CEL cost when the policy is created. It
// counts the cost as it evaluates, per request, and stops an expression
// that passes celconfig.PerCallLimit; and it gives budgets that groups of
// expressions share, a variable charged to the group that reads it first
// (each group evaluates the variables afresh):
//
//   - a policy's matchConditions share celconfig.RuntimeCELCostBudgetMatchConditions;
//   - each mutation of a MutatingAdmissionPolicy has celconfig.RuntimeCELCostBudget;
//   - a ValidatingAdmissionPolicy's validations share
//     celconfig.RuntimeCELCostBudget, and their messageExpressions share what
//     the validations left of it; its auditAnnotations share another.
//
// Under failurePolicy Fail, an expression stopped or a budget run out
// refuses the request, where the plugin the policy stands for admits it.
// The compiler keeps that from happening on a reference pod
// (referencePod): it evaluates every expression of every policy that
// applies to pods as kube-apiserver does, with k8s.io/apiserver's own CEL
// environment, compilers and evaluators, on a create of that pod, and
// refuses what would be stopped or run out there.
//
// Why a pod evaluated, not a cost estimated. cel-go's static estimator
// (what kube-apiserver applies to a CRD's validation rules) needs a bound
// on every list and map an expression walks. A Pod's schema sets none, so
// the only bound is the request's 3 MiB: some 10^5 containers, and as many
// env entries in each, whose product, for a walk of every container's env
// (which most compiled expressions do), is above the per-expression limit
// by orders of magnitude. It would refuse every preset. The actual cost on
// a pod is what kube-apiserver charges, and it grows with the lists the
// expressions walk; so the bound is the actual cost on a pod far larger
// than pods are in practice.
//
// The reference pod (referencePod) fills every list the compiled
// expressions read (referenceShape), with names no preset or mutator
// writes, so that a walk looking for one finds none and goes to the end;
// and it carries the labels, and its namespace the labels and the name,
// that the compiled presets and mutators select (referenceLabels,
// referenceNamespace), so that their guarded branches run (a mutator
// matching namespaces or names by pattern runs its branch only where the
// pattern takes the reference's: the namespace with the most PodPresets,
// or "reference", and the pod "reference"). It is not a
// proof for every pod: a pod larger in some list than the reference may
// cost more than the limits, and then the policy refuses a pod the plugin
// admits. What it gives is a margin, written down: every compiled policy
// fits on a pod of 100 containers with 50 env variables each.

// referenceShape is the size of the reference pod: 100 containers and 10
// init containers, each with 50 env variables, 5 envFrom sources, 10
// volume mounts, 5 ports and 10 args; 50 volumes, 32 labels and 32
// annotations. About 360 KB as JSON: a quarter of the 1.5 MiB etcd
// stores by default, and tens of times the pods clusters run (the pod
// benchmark's has 3 containers). Larger, it would refuse sets that real
// pods never bring near the limits (ten PodPresets of three env variables
// each already pass them here), and Compile would take longer: it
// evaluates every policy on this pod.
var referenceShape = struct {
	containers, initContainers, env, envFrom, mounts, ports, args, volumes, labels, annotations int
}{100, 10, 50, 5, 10, 5, 10, 50, 32, 32}

// referenceNamespaceName is the reference pod's namespace when no
// PodPreset names one.
const referenceNamespaceName = "reference"

// referenceLabels are labels that every selector of src's presets and
// mutators matches, where it can: a matchLabels' own, an In
// expression's first value, "reference" for Exists; NotIn and
// DoesNotExist are met by leaving the key out. Where two selectors want
// different values for a key, the first in src's order wins. pod are the
// pod's labels, namespace its namespace's.
func referenceLabels(src Sources) (pod, namespace map[string]string) {
	pod, namespace = map[string]string{}, map[string]string{}
	add := func(into map[string]string, sel *metav1.LabelSelector) {
		if sel == nil {
			return
		}
		for k, v := range sel.MatchLabels {
			if _, ok := into[k]; !ok {
				into[k] = v
			}
		}
		for _, r := range sel.MatchExpressions {
			if _, ok := into[r.Key]; ok {
				continue
			}
			switch r.Operator {
			case metav1.LabelSelectorOpIn:
				if len(r.Values) > 0 {
					into[r.Key] = r.Values[0]
				}
			case metav1.LabelSelectorOpExists:
				into[r.Key] = referenceNamespaceName
			}
		}
	}
	for i := range src.PodPresets {
		add(pod, &src.PodPresets[i].Spec.Selector)
	}
	for i := range src.ClusterPodPresets {
		add(pod, &src.ClusterPodPresets[i].Spec.Selector)
		add(namespace, &src.ClusterPodPresets[i].Spec.NamespaceSelector)
	}
	for _, m := range src.Mutators {
		spec := m.Matcher().Spec()
		add(pod, spec.LabelSelector)
		add(namespace, spec.NamespaceSelector)
	}
	return pod, namespace
}

// referenceNamespace is the namespace of the reference pod: the one that
// holds the most PodPresets (the first by name of those), where the most
// presets apply to one pod.
func referenceNamespace(src Sources, labels map[string]string) *corev1.Namespace {
	name, most := referenceNamespaceName, 0
	count := map[string]int{}
	for i := range src.PodPresets {
		ns := src.PodPresets[i].Namespace
		count[ns]++
		if n := count[ns]; n > most || n == most && ns < name {
			name, most = ns, n
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels)}}
	// kube-apiserver labels every namespace with its name.
	ns.Labels[corev1.LabelMetadataName] = name
	return ns
}

// referencePod is a pod of referenceShape in namespace ns with labels.
func referencePod(ns string, labels map[string]string) *corev1.Pod {
	s := referenceShape
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "reference", Namespace: ns, Labels: map[string]string{}, Annotations: map[string]string{}},
	}
	for k, v := range labels {
		pod.Labels[k] = v
	}
	for i := range s.labels {
		pod.Labels[fmt.Sprintf("reference.example.com/label-%d", i)] = "value"
	}
	for i := range s.annotations {
		pod.Annotations[fmt.Sprintf("reference.example.com/annotation-%d", i)] = "value"
	}
	for i := range s.volumes {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("volume-%d", i), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	container := func(name string) corev1.Container {
		c := corev1.Container{Name: name, Image: "registry.example.com/team/" + name + ":1.0", ImagePullPolicy: corev1.PullIfNotPresent}
		for i := range s.env {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("VARIABLE_%d", i), Value: "value"})
		}
		for i := range s.envFrom {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("config-%d", i)}}})
		}
		for i := range s.mounts {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: fmt.Sprintf("volume-%d", i), MountPath: fmt.Sprintf("/mnt/volume-%d", i)})
		}
		for i := range s.ports {
			c.Ports = append(c.Ports, corev1.ContainerPort{Name: fmt.Sprintf("port-%d", i), ContainerPort: int32(8000 + i), Protocol: corev1.ProtocolTCP})
		}
		for i := range s.args {
			c.Args = append(c.Args, fmt.Sprintf("--flag-%d=value", i))
		}
		return c
	}
	for i := range s.initContainers {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, container(fmt.Sprintf("init-%d", i)))
	}
	for i := range s.containers {
		pod.Spec.Containers = append(pod.Spec.Containers, container(fmt.Sprintf("container-%d", i)))
	}
	return pod
}

// exprCost is what one group of expressions costs on the reference.
type exprCost struct {
	// Path is the group's field: spec.matchConditions, spec.mutations[i],
	// spec.validations, spec.validations[*].messageExpression or
	// spec.auditAnnotations.
	Path *field.Path
	// Cost is what kube-apiserver charges the group, against Budget; -1
	// when the budget ran out.
	Cost, Budget int64
	// Err is why kube-apiserver would refuse the request, or nil.
	Err *field.Error
	// mutation is the index of the MutatingAdmissionPolicy's mutation
	// the group is, counted from 1; 0 for the other groups.
	mutation int
	// denied are the items that gave neither an error nor true: for
	// validations, those that fail, whose messageExpression kube-apiserver
	// reads.
	denied []bool
}

// policyCost is what one policy costs on the reference.
type policyCost struct {
	Kind, Name string
	Groups     []exprCost
}

// over is the first group that kube-apiserver would refuse the request
// for, or nil.
func (p policyCost) over() *field.Error {
	for _, g := range p.Groups {
		if g.Err != nil {
			return g.Err
		}
	}
	return nil
}

// add adds g to p, and reports whether kube-apiserver would refuse the
// request for it (the groups after it then do not matter).
func (p *policyCost) add(g exprCost) bool {
	p.Groups = append(p.Groups, g)
	return g.Err != nil
}

func (p policyCost) String() string {
	return p.Kind + " " + p.Name
}

// measure evaluates every policy of r that applies to pod creates (only
// the one named only, unless it is "") on the reference pod for src, as
// kube-apiserver would, each up to its first group over the limits
// (described: with its cost, when describe).
func measure(r Result, src Sources, only string, describe bool) []policyCost {
	podLabels, nsLabels := referenceLabels(src)
	ns := referenceNamespace(src, nsLabels)
	e := newEvaluation(referencePod(ns.Name, podLabels), ns, describe)

	ref := struct {
		Namespace                 string
		PodLabels, NamespaceLabel map[string]string
		Describe                  bool
	}{ns.Name, podLabels, nsLabels, describe}
	var out []policyCost
	for i := range r.MutatingPolicies {
		p := &r.MutatingPolicies[i]
		if (only == "" || only == p.Name) && appliesToPodCreates(p.Spec.MatchConstraints) {
			out = append(out, costs.get(p.Name, p.Spec, ref, func() policyCost { return e.mutating(p) }))
		}
	}
	for i := range r.ValidatingPolicies {
		p := &r.ValidatingPolicies[i]
		if (only == "" || only == p.Name) && appliesToPodCreates(p.Spec.MatchConstraints) && mayRefuse(p, r.ValidatingBindings) {
			out = append(out, costs.get(p.Name, p.Spec, ref, func() policyCost { return e.validating(p) }))
		}
	}
	return out
}

// costs keeps what policies cost on their reference pods across calls:
// the live mode compiles the same objects again on every change of one,
// and the bound's rounds compile unchanged policies again.
var costs = &costCache{}

// costCache is a bounded memo of policyCost by the policy's name and
// spec and the reference.
type costCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]policyCost
}

// costCacheSize bounds the memo; when full it starts again.
const costCacheSize = 256

func (c *costCache) get(name string, spec, ref any, measure func() policyCost) policyCost {
	data, err := json.Marshal([]any{name, spec, ref})
	if err != nil {
		return measure()
	}
	key := sha256.Sum256(data)
	c.mu.Lock()
	p, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return p
	}
	p = measure()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= costCacheSize {
		c.m = map[[sha256.Size]byte]policyCost{}
	}
	c.m[key] = p
	return p
}

// mayRefuse reports whether a ValidatingAdmissionPolicy can refuse a
// request: a binding of it denies, and its failurePolicy is Fail. One
// that only warns or audits, or ignores its errors, changes what a
// request is told when kube-apiserver stops it, not whether it is
// admitted: the bound leaves it out (the README names what it then says
// on pods beyond the reference).
func mayRefuse(p *admissionregistrationv1.ValidatingAdmissionPolicy, bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
	if p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == admissionregistrationv1.Ignore {
		return false
	}
	for _, b := range bindings {
		if b.Spec.PolicyName == p.Name && slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
			return true
		}
	}
	return false
}

// appliesToPodCreates reports whether kube-apiserver sends a pod create
// to a policy of these constraints (leaving out namespace and object
// selectors, which the reference is built to meet).
func appliesToPodCreates(mc *admissionregistrationv1.MatchResources) bool {
	if mc == nil {
		return false
	}
	rules := func(rs []admissionregistrationv1.NamedRuleWithOperations) bool {
		for _, r := range rs {
			if anyOf(r.APIGroups, "") && anyOf(r.APIVersions, "v1") && anyOf(r.Resources, "pods") &&
				anyOf(opStrings(r.Operations), string(admissionregistrationv1.Create)) {
				return true
			}
		}
		return false
	}
	return rules(mc.ResourceRules) && !rules(mc.ExcludeResourceRules)
}

func opStrings(ops []admissionregistrationv1.OperationType) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = string(op)
	}
	return out
}

// anyOf reports whether list holds want or "*".
func anyOf(list []string, want string) bool {
	for _, s := range list {
		if s == want || s == "*" {
			return true
		}
	}
	return false
}

// evaluation is one create of the reference pod.
var (
	podKind     = corev1.SchemeGroupVersion.WithKind("Pod")
	podResource = corev1.SchemeGroupVersion.WithResource("pods")
)

// newEvaluation is a create of pod in ns.
func newEvaluation(pod *corev1.Pod, ns *corev1.Namespace, describe bool) *evaluation {
	attrs := admission.NewAttributesRecord(pod, nil, podKind, ns.Name, pod.Name, podResource, "", admission.Create,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "reference", Groups: []string{user.AllAuthenticated}})
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: podKind, VersionedObject: admission.NewLazyObject(pod)}
	return &evaluation{attrs: va, request: plugincel.CreateAdmissionRequest(attrs, metav1.GroupVersionResource(podResource), metav1.GroupVersionKind(podKind)), namespace: ns, describe: describe}
}

type evaluation struct {
	attrs     *admission.VersionedAttributes
	request   *admissionv1.AdmissionRequest
	namespace *corev1.Namespace
	// describe: say what an expression kube-apiserver would stop costs,
	// evaluating it again without the limit (up to the budget): for the
	// refusal, not for every trial.
	describe bool
}

// Policies' CEL environments: kube-apiserver's, as its policy plugins
// build it, and the same without the per-expression limit (up to a
// mutation's whole budget), to say what an expression it would stop
// costs.
var (
	costEnv = sync.OnceValue(func() *environment.EnvSet {
		return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	})
	measuringEnv = sync.OnceValues(func() (*environment.EnvSet, error) {
		return costEnv().Extend(environment.VersionedOptions{
			IntroducedVersion: version.MajorMinor(1, 0),
			ProgramOptions:    []cel.ProgramOption{cel.CostLimit(celconfig.RuntimeCELCostBudget)},
		})
	})
)

// item is one expression of a group and its field; a nil accessor holds
// the place of a validation with no messageExpression, as kube-apiserver
// does.
type item struct {
	path     *field.Path
	accessor plugincel.ExpressionAccessor
}

// group is one set of expressions kube-apiserver evaluates together,
// against one budget.
type group struct {
	path   *field.Path
	items  []item
	opts   plugincel.OptionalVariableDeclarations
	budget int64
	// mutation: a MutatingAdmissionPolicy's mutation, evaluated alone.
	mutation bool
	// ns is namespaceObject (matchConditions have none).
	ns *corev1.Namespace
	// used says which items' results kube-apiserver uses, nil for all:
	// it evaluates every messageExpression, but reads one only for a
	// validation that fails, and an error in one it reads it logs, falling
	// back to the validation's message.
	used []bool
}

// compilers are one policy's CEL compilers, one per environment, each
// holding the policy's variables: as the policy plugins compile a policy
// once, its variables with the authorizer and without the patch types.
// Each group is evaluated with a composition context of its own, so the
// variables are evaluated afresh for it, as kube-apiserver does.
type compilers struct {
	vars  []admissionregistrationv1.Variable
	opts  plugincel.OptionalVariableDeclarations
	byEnv map[*environment.EnvSet]*plugincel.CompositedCompiler
}

func newCompilers(vars []admissionregistrationv1.Variable, hasParams bool) *compilers {
	return &compilers{vars: vars, opts: plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true},
		byEnv: map[*environment.EnvSet]*plugincel.CompositedCompiler{}}
}

func (cs *compilers) of(env *environment.EnvSet) (*plugincel.CompositedCompiler, error) {
	if c, ok := cs.byEnv[env]; ok {
		return c, nil
	}
	c, err := plugincel.NewCompositedCompiler(env)
	if err != nil {
		return nil, err
	}
	for _, v := range cs.vars {
		c.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, cs.opts, environment.StoredExpressions)
	}
	cs.byEnv[env] = c
	return c, nil
}

// evaluate runs g's expressions on the reference with env's compiler.
func (e *evaluation) evaluate(env *environment.EnvSet, cs *compilers, g group, budget int64) ([]plugincel.EvaluationResult, int64, error) {
	c, err := cs.of(env)
	if err != nil {
		return nil, -1, err
	}
	// Authorization is not what the compiled policies read.
	inputs := plugincel.OptionalVariableBindings{}
	if g.mutation {
		eval := c.CompileMutatingEvaluator(g.items[0].accessor, g.opts, environment.StoredExpressions)
		result, remaining, err := eval.ForInput(c.CreateContext(context.Background()), e.attrs, e.request, inputs, g.ns, budget)
		return []plugincel.EvaluationResult{result}, remaining, err
	}
	accessors := make([]plugincel.ExpressionAccessor, len(g.items))
	for i, it := range g.items {
		accessors[i] = it.accessor
	}
	return c.CompileCondition(accessors, g.opts, environment.StoredExpressions).ForInput(context.Background(), e.attrs, e.request, inputs, g.ns, budget)
}

// charge is what g costs on the reference as kube-apiserver charges it,
// and why kube-apiserver would refuse the request, if it would.
func (e *evaluation) charge(cs *compilers, g group) exprCost {
	out := exprCost{Path: g.path, Budget: g.budget, Cost: -1}
	results, remaining, err := e.evaluate(costEnv(), cs, g, g.budget)
	if err != nil {
		// The budget ran out (or the request could not be bound, which
		// the reference pod cannot cause).
		msg := fmt.Sprintf("on the reference pod, %s", err)
		if cost, ok := e.measured(cs, g); ok && cost > g.budget {
			msg = fmt.Sprintf("costs %d on the reference pod, over the budget of %d kube-apiserver gives it", cost, g.budget)
		}
		out.Err = field.Forbidden(g.path, msg)
		return out
	}
	out.Cost = g.budget - remaining
	out.denied = make([]bool, len(results))
	for i, r := range results {
		out.denied[i] = r.Error == nil && r.EvalResult != celtypes.True
	}
	for i, r := range results {
		if r.Error == nil || g.used != nil && !g.used[i] {
			continue
		}
		one := g
		one.path, one.items = g.items[i].path, g.items[i:i+1]
		if cost, ok := e.measured(cs, one); ok && cost > celconfig.PerCallLimit {
			out.Err = field.Forbidden(one.path, fmt.Sprintf("costs %d on the reference pod (the variables it reads included), over the limit of %d kube-apiserver stops an expression at", cost, celconfig.PerCallLimit))
		} else {
			out.Err = field.Forbidden(one.path, "fails on the reference pod: "+withoutExpression(r.Error.Error()))
		}
		return out
	}
	return out
}

// measured is what g costs on the reference with the limit on an
// expression raised to a mutation's budget, if it evaluates there.
func (e *evaluation) measured(cs *compilers, g group) (int64, bool) {
	if !e.describe {
		return 0, false
	}
	env, err := measuringEnv()
	if err != nil {
		return 0, false
	}
	const budget = math.MaxInt64
	results, remaining, err := e.evaluate(env, cs, g, budget)
	if err != nil {
		return 0, false
	}
	for _, r := range results {
		if r.Error != nil {
			return 0, false
		}
	}
	return budget - remaining, true
}

// withoutExpression is an evaluation error without the expression it
// quotes first, which runs to kilobytes.
func withoutExpression(msg string) string {
	const quoted = "resulted in error: "
	if i := strings.LastIndex(msg, quoted); i >= 0 {
		return msg[i+len(quoted):]
	}
	return msg
}

func (e *evaluation) mutating(p *admissionregistrationv1.MutatingAdmissionPolicy) policyCost {
	out := policyCost{Kind: "MutatingAdmissionPolicy", Name: p.Name}
	cs := newCompilers(p.Spec.Variables, p.Spec.ParamKind != nil)
	spec := field.NewPath("spec")
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	if g, ok := matchGroup(p.Spec.MatchConditions, opts); ok {
		if out.add(e.charge(cs, g)) {
			return out
		}
	}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	// Each mutation is evaluated on the pod as the ones before it left it;
	// with reinvocationPolicy IfNeeded, kube-apiserver runs the policy a
	// second time on what it made (it asks for that after any mutation),
	// where the walks meet what the first run added.
	passes := 1
	if p.Spec.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
		passes = 2
	}
	cur := e
	for pass := range passes {
		for i, m := range p.Spec.Mutations {
			path := spec.Child("mutations").Index(i)
			var it item
			switch {
			case m.JSONPatch != nil:
				it = item{path.Child("jsonPatch", "expression"), &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}}
			case m.ApplyConfiguration != nil:
				it = item{path.Child("applyConfiguration", "expression"), &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}}
			default:
				continue
			}
			charged := cur.charge(cs, group{path: path, items: []item{it}, opts: patchOpts,
				budget: celconfig.RuntimeCELCostBudget, mutation: true, ns: e.namespace})
			charged.mutation = i + 1
			if out.add(charged) {
				return out
			}
			if m.JSONPatch != nil && (pass < passes-1 || i < len(p.Spec.Mutations)-1) {
				// An ApplyConfiguration (which the compiler does not make)
				// would need the pod's schema to apply; the pod stays.
				if next, err := cur.applied(cs, it.accessor, patchOpts); err == nil {
					cur = next
				}
			}
		}
	}
	return out
}

// podInterfaces are what a JSONPatch mutation decodes the patched pod with.
var podInterfaces = admission.NewObjectInterfacesFromScheme(clientgoscheme.Scheme)

// applied is the evaluation of the pod the mutation makes of e's.
func (e *evaluation) applied(cs *compilers, mutation plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations) (*evaluation, error) {
	c, err := cs.of(costEnv())
	if err != nil {
		return nil, err
	}
	eval := c.CompileMutatingEvaluator(mutation, opts, environment.StoredExpressions)
	obj, err := patch.NewJSONPatcher(eval).Patch(c.CreateContext(context.Background()), patch.Request{
		MatchedResource: podResource, VersionedAttributes: e.attrs, ObjectInterfaces: podInterfaces, Namespace: e.namespace,
	}, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("a mutation made a %T of the pod", obj)
	}
	return newEvaluation(pod, e.namespace, e.describe), nil
}

func (e *evaluation) validating(p *admissionregistrationv1.ValidatingAdmissionPolicy) policyCost {
	out := policyCost{Kind: "ValidatingAdmissionPolicy", Name: p.Name}
	cs := newCompilers(p.Spec.Variables, p.Spec.ParamKind != nil)
	spec := field.NewPath("spec")
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	if g, ok := matchGroup(p.Spec.MatchConditions, opts); ok {
		if out.add(e.charge(cs, g)) {
			return out
		}
	}
	// The validating plugin gives its expressions the namespace's name,
	// labels, annotations, spec and status only.
	ns := plugincel.CreateNamespaceObject(e.namespace)
	if len(p.Spec.Validations) > 0 {
		validations := group{path: spec.Child("validations"), opts: opts, budget: celconfig.RuntimeCELCostBudget, ns: ns}
		// messageExpressions have no authorizer, and what the validations
		// left of their budget.
		messages := group{path: spec.Child("validations").Child("*").Child("messageExpression"),
			opts: plugincel.OptionalVariableDeclarations{HasParams: opts.HasParams}, ns: ns}
		hasMessages := false
		for i, v := range p.Spec.Validations {
			path := spec.Child("validations").Index(i)
			validations.items = append(validations.items, item{path.Child("expression"), &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}})
			it := item{path: path.Child("messageExpression")}
			if v.MessageExpression != "" {
				it.accessor = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
				hasMessages = true
			}
			messages.items = append(messages.items, it)
		}
		charged := e.charge(cs, validations)
		if out.add(charged) {
			return out
		}
		if hasMessages {
			messages.budget = celconfig.RuntimeCELCostBudget - charged.Cost
			messages.used = charged.denied
			if out.add(e.charge(cs, messages)) {
				return out
			}
		}
	}
	if len(p.Spec.AuditAnnotations) > 0 {
		audit := group{path: spec.Child("auditAnnotations"), opts: opts, budget: celconfig.RuntimeCELCostBudget, ns: ns}
		for i, a := range p.Spec.AuditAnnotations {
			audit.items = append(audit.items, item{spec.Child("auditAnnotations").Index(i).Child("valueExpression"), &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}})
		}
		out.add(e.charge(cs, audit))
	}
	return out
}

// matchGroup is a policy's matchConditions, which kube-apiserver
// evaluates with no namespaceObject.
func matchGroup(conditions []admissionregistrationv1.MatchCondition, opts plugincel.OptionalVariableDeclarations) (group, bool) {
	g := group{path: field.NewPath("spec", "matchConditions"), opts: opts, budget: celconfig.RuntimeCELCostBudgetMatchConditions}
	for i := range conditions {
		g.items = append(g.items, item{g.path.Index(i).Child("expression"), (*matchconditions.MatchCondition)(&conditions[i])})
	}
	return g, len(g.items) > 0
}

// boundCost compiles src, and refuses what makes a policy pass
// kube-apiserver's CEL limits on the reference pod (measure). A policy
// carries its sources in their run order (the plugin's order for presets,
// Gatekeeper's for mutators); when it passes a limit, the compiler finds
// the most of them, first in that order, that keep it within the limits,
// and refuses the first beyond and every one after it. A source refused
// so stays with the plugin, and the rules that keep the compiled sources
// apart from those the plugin holds run again on what is left (a preset
// sharing pods with it is refused too, a mutator whose order with it may
// matter as well): so each round compiles everything again, until every
// policy fits.
func boundCost(src Sources) Result {
	over := map[Source]field.ErrorList{}
	for {
		r := compileOnce(src, over)
		var policy policyCost
		for _, p := range measure(r, src, "", false) {
			if p.over() != nil {
				policy = p
				break
			}
		}
		if policy.Name == "" {
			return r
		}
		sources := carried(r, src, policy.Name)
		if len(sources) == 0 {
			// Every policy carries a source; should one not, refusing
			// what it may carry still ends the loop.
			sources = r.Compiled
		}
		if len(sources) == 0 {
			// Nothing compiled, so no policy is due: make none.
			return Result{Refused: r.Refused}
		}
		// overWith is why the policy does not fit with the first k of
		// its sources, or nil.
		overWith := func(k int, describe bool) *field.Error {
			trial := maps.Clone(over)
			for _, s := range sources[k:] {
				trial[s] = field.ErrorList{field.Forbidden(field.NewPath("spec"), "left out to measure the others")}
			}
			for _, p := range measure(compileOnce(src, trial), src, policy.Name, describe) {
				if err := p.over(); err != nil {
					return err
				}
			}
			return nil
		}
		// With none of its sources the policy is not made: it fits.
		lo, hi := 0, len(sources)
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; overWith(mid, false) != nil {
				hi = mid
			} else {
				lo = mid
			}
		}
		why := overWith(hi, true)
		if why == nil {
			// Only a policy whose cost does not grow with its sources
			// could fit with more of them and not with fewer; refusing
			// what the bisection found still ends the loop.
			why = policy.over()
		}
		for i, s := range sources[lo:] {
			msg := fmt.Sprintf("with it and the %d before it in its order, %s would pass kube-apiserver's CEL limits on the reference pod: %s: %s", lo, policy, why.Field, why.Detail)
			if i > 0 {
				msg = fmt.Sprintf("comes after %s in %s's order, which is not compiled for its CEL cost", sources[lo], policy.Name)
			}
			over[s] = field.ErrorList{field.Forbidden(field.NewPath("spec"), msg)}
		}
	}
}

// compileOnce compiles src with the sources in over refused for their
// cost: a mutator is held for the plugin (so the compiled ones are kept
// apart from it), a preset refused with its reasons (so the presets that
// share pods with it are refused too).
func compileOnce(src Sources, over map[Source]field.ErrorList) Result {
	var r Result
	s := src
	s.overBudget = over
	s.Mutators, s.Held = nil, slices.Clone(src.Held)
	var refused []Refusal
	for _, m := range src.Mutators {
		if errs, ok := over[refusalOf(m, nil).Source]; ok {
			s.Held = append(s.Held, m)
			refused = append(refused, refusalOf(m, errs))
			continue
		}
		s.Mutators = append(s.Mutators, m)
	}
	compilePresets(s, &r)
	compileMutators(s, &r)
	r.Refused = append(r.Refused, refused...)
	return r
}

// carried are the sources of r that the policy named policy carries, in
// their run order.
func carried(r Result, src Sources, policy string) []Source {
	mutators := map[Source]*mutation.Mutator{}
	for _, m := range src.Mutators {
		mutators[refusalOf(m, nil).Source] = m
	}
	var out []Source
	for _, s := range r.Compiled {
		m := mutators[s]
		var carries bool
		switch policy {
		case MutatorsPolicyName:
			carries = m != nil && m.Mode() != mutation.ModeWarn && m.Mode() != mutation.ModeAudit
		case WarnMutatorsPolicyName:
			carries = m != nil && m.Mode() == mutation.ModeWarn
		case AuditMutatorsPolicyName:
			carries = m != nil && m.Mode() == mutation.ModeAudit
		default:
			// The presets' policies.
			carries = m == nil
		}
		if carries {
			out = append(out, s)
		}
	}
	return out
}
