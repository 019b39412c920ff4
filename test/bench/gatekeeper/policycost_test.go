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

package gatekeeper

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/admitkit/admitkit/plugin/compiler"
)

// policyCost is the CEL cost of one MutatingAdmissionPolicy on one pod
// create, as kube-apiserver's MutatingAdmissionPolicy plugin counts it
// (k8s.io/apiserver's admission CEL, the version kube-apiserver 1.37.2
// links): its matchConditions share one budget of
// celconfig.RuntimeCELCostBudgetMatchConditions; each mutation has a
// budget of celconfig.RuntimeCELCostBudget of its own, charged with its
// expression and with each variable it is the first to read; and no
// single expression may cost more than celconfig.PerCallLimit.
type policyCost struct {
	match     int64
	mutations []int64
}

// maxMutation is the costliest mutation's cost.
func (c policyCost) maxMutation() int64 {
	var m int64
	for _, v := range c.mutations {
		m = max(m, v)
	}
	return m
}

// total is what all of the policy's CEL costs, its matchConditions
// included.
func (c policyCost) total() int64 {
	t := c.match
	for _, v := range c.mutations {
		t += v
	}
	return t
}

// evaluatePolicyCost compiles policy's CEL as kube-apiserver does when it
// loads a policy, and evaluates it on a create of pod in ns, each
// mutation on pod as it arrives (kube-apiserver gives a mutation the
// object its predecessors patched; on the benchmark's pods that adds a
// few list entries, which the pods of growing size below dwarf). An
// expression that fails to compile or evaluate is an error, naming it.
func evaluatePolicyCost(policy *admissionregistrationv1.MutatingAdmissionPolicy, pod *corev1.Pod, ns *corev1.Namespace) (policyCost, error) {
	var cost policyCost
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return cost, err
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	var variables []plugincel.NamedExpressionAccessor
	for _, v := range policy.Spec.Variables {
		variables = append(variables, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(variables, opts, environment.StoredExpressions)

	pod = pod.DeepCopy()
	pod.APIVersion, pod.Kind = "v1", "Pod"
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	attrs := admission.NewAttributesRecord(pod, nil, gvk, pod.Namespace, pod.Name, gvr, "", admission.Create,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}})
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: admission.NewLazyObject(pod)}
	request := plugincel.CreateAdmissionRequest(attrs, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	// One composition context per policy, as kube-apiserver's dispatcher
	// makes: a variable is evaluated once and charged where first read.
	ctx := compiler.CreateContext(context.Background())

	if len(policy.Spec.MatchConditions) > 0 {
		var accessors []plugincel.ExpressionAccessor
		for i := range policy.Spec.MatchConditions {
			accessors = append(accessors, (*matchconditions.MatchCondition)(&policy.Spec.MatchConditions[i]))
		}
		eval := compiler.CompileCondition(accessors, opts, environment.StoredExpressions)
		if errs := eval.CompilationErrors(); len(errs) > 0 {
			return cost, fmt.Errorf("policy %s: matchConditions: %v", policy.Name, errs)
		}
		results, remaining, err := eval.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudgetMatchConditions)
		if err != nil {
			return cost, fmt.Errorf("policy %s: matchConditions: %w", policy.Name, err)
		}
		for i, r := range results {
			if r.Error != nil {
				return cost, fmt.Errorf("policy %s: matchConditions[%d]: %w", policy.Name, i, r.Error)
			}
		}
		cost.match = celconfig.RuntimeCELCostBudgetMatchConditions - remaining
	}

	patchOpts := opts
	patchOpts.HasPatchTypes = true
	for i, m := range policy.Spec.Mutations {
		var accessor plugincel.ExpressionAccessor
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			accessor = &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			accessor = &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}
		default:
			return cost, fmt.Errorf("policy %s: mutations[%d]: patchType %q without its expression", policy.Name, i, m.PatchType)
		}
		eval := compiler.CompileMutatingEvaluator(accessor, patchOpts, environment.StoredExpressions)
		if errs := eval.CompilationErrors(); len(errs) > 0 {
			return cost, fmt.Errorf("policy %s: mutations[%d]: %v", policy.Name, i, errs)
		}
		result, remaining, err := eval.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{}, ns, celconfig.RuntimeCELCostBudget)
		if err != nil {
			return cost, fmt.Errorf("policy %s: mutations[%d]: %w", policy.Name, i, err)
		}
		if result.Error != nil {
			return cost, fmt.Errorf("policy %s: mutations[%d]: %w", policy.Name, i, result.Error)
		}
		cost.mutations = append(cost.mutations, celconfig.RuntimeCELCostBudget-remaining)
	}
	return cost, nil
}

// hundredMutators are the ten mutators and 90 more, copies in turn of the
// four whose location names a key of its own (a label, an annotation, two
// env vars), copy k named <name>-k and writing key-k or KEY_k: a hundred
// mutators that write a hundred different places, as a set must for
// plugin/compiler to put it in one policy (one that writes where another
// reads would need Gatekeeper's second pass, which it refuses).
func hundredMutators(ten []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	keyed := []struct{ name, from, to string }{
		{"owner", "metadata.labels.owner", "metadata.labels.owner-%d"},
		{"mutated-by", "metadata.annotations.mutated-by", "metadata.annotations.mutated-by-%d"},
		{"env-cluster", "env[name: CLUSTER]", "env[name: CLUSTER_%d]"},
		{"env-namespace", "env[name: NAMESPACE]", "env[name: NAMESPACE_%d]"},
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, m := range ten {
		byName[m.GetName()] = m
	}
	out := slices.Clone(ten)
	for j := range 100 - len(ten) {
		kind, k := keyed[j%len(keyed)], j/len(keyed)+1
		m, ok := byName[kind.name]
		if !ok {
			return nil, fmt.Errorf("no mutator %s in %s", kind.name, tenMutatorsFile)
		}
		c := m.DeepCopy()
		c.SetName(fmt.Sprintf("%s-%d", kind.name, k))
		location, _, err := unstructured.NestedString(c.Object, "spec", "location")
		if err != nil || !strings.Contains(location, kind.from) {
			return nil, fmt.Errorf("%s %s: spec.location %q does not name %s: %v", m.GetKind(), m.GetName(), location, kind.from, err)
		}
		location = strings.ReplaceAll(location, kind.from, fmt.Sprintf(kind.to, k))
		if err := unstructured.SetNestedField(c.Object, location, "spec", "location"); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// sizedPod is the benchmark's pod with containers containers, each with
// env entries and args arguments, to see how the policies' cost grows
// with the pod.
func sizedPod(containers, env, args int) *corev1.Pod {
	pod := benchPod("sized")
	pod.Spec.Containers = nil
	for i := range containers {
		c := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: fmt.Sprintf("registry.example.com/app-%d:1", i)}
		for j := range env {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", j), Value: "value"})
		}
		for j := range args {
			c.Args = append(c.Args, fmt.Sprintf("--flag-%d", j))
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	return pod
}

// TestCompiledPolicyCost reports the CEL cost of the MutatingAdmissionPolicies
// plugin/compiler makes of the benchmark's five presets with its ten
// mutators, and with a hundred (hundredMutators), against kube-apiserver's
// budgets, on pods of growing size (evaluatePolicyCost); and what the stock
// kube-apiserver makes of the same policies: it accepts them (it estimates
// no CEL cost when a MutatingAdmissionPolicy is created, as it does for a
// CRD's validation rules), and its metrics count each mutation's outcome on
// a dry-run create of each pod, out_of_budget when a budget ran out. A
// policy that errs on a pod the API server would accept is a failure. The
// compiler bounds the cost on its reference pod of 100 containers and 10
// init containers with 50 env variables each (plugin/compiler/cost.go),
// where both sets fit; the pods of 300 containers here are larger, so a
// failure on them is a pod past the compiler's reference, or (with the
// hundred) kube-apiserver's request timeout. No cost is asserted.
func TestCompiledPolicyCost(t *testing.T) {
	ten := readObjects(t, tenMutatorsFile)
	hundred, err := hundredMutators(ten)
	if err != nil {
		t.Fatal(err)
	}
	presets := benchPresets(t)
	pods := []struct {
		name string
		pod  *corev1.Pod
	}{
		{"the benchmark's (3 containers)", benchPod("cost")},
		{"10 containers, 10 env, 10 args", sizedPod(10, 10, 10)},
		{"100 containers, 20 env, 20 args", sizedPod(100, 20, 20)},
		{"300 containers, 50 env, 50 args", sizedPod(300, 50, 50)},
		{"300 containers, 100 env (1 MB)", sizedPod(300, 100, 0)},
	}
	bins := buildBinaries(t)
	s := startStock(t, bins)
	createObjects(t, s.objects, benchNamespace())
	ns, err := s.client.CoreV1().Namespaces().Get(context.Background(), latencyNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nCEL cost per pod create of each compiled policy; budgets: matchConditions %d, each mutation %d, each expression %d\n",
		celconfig.RuntimeCELCostBudgetMatchConditions, celconfig.RuntimeCELCostBudget, celconfig.PerCallLimit)
	b.WriteString("| set | policy | mutations | pod | matchConditions | costliest mutation | all mutations | kube-apiserver's count of its mutations | the dry-run create took |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, set := range []struct {
		name     string
		mutators []*unstructured.Unstructured
	}{{"5 presets, 10 mutators", ten}, {"5 presets, 100 mutators", hundred}} {
		r := compiler.Compile(compileSources(t, set.mutators, presets))
		for _, refused := range r.Refused {
			t.Logf("%s: not compiled: %s %s/%s: %v", set.name, refused.Source.Kind, refused.Source.Namespace, refused.Source.Name, refused.Errs.ToAggregate())
		}
		if len(r.MutatingPolicies) == 0 {
			t.Errorf("%s: plugin/compiler made no MutatingAdmissionPolicy", set.name)
			continue
		}
		installPolicies(t, s, r)
		waitForPolicies(t, s, r)
		for _, p := range pods {
			before := policyOutcomes(t, s)
			pod := p.pod.DeepCopy()
			pod.Namespace = latencyNamespace
			start := time.Now()
			if _, err := s.client.CoreV1().Pods(latencyNamespace).Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("%s: a dry-run create of %s: %s", set.name, p.name, evaluationError(err))
			}
			took := time.Since(start)
			after := policyOutcomes(t, s)
			for i := range r.MutatingPolicies {
				policy := &r.MutatingPolicies[i]
				var outcomes []string
				for outcome, n := range after[policy.Name] {
					if d := n - before[policy.Name][outcome]; d > 0 {
						outcomes = append(outcomes, fmt.Sprintf("%s %.0f", outcome, d))
						if outcome != "no_error" {
							t.Errorf("%s: policy %s on %s: %.0f mutations ended in %s", set.name, policy.Name, p.name, d, outcome)
						}
					}
				}
				slices.Sort(outcomes)
				match, costliest, all := "-", "-", "-"
				if cost, err := evaluatePolicyCost(policy, pod, ns); err != nil {
					costliest = "error: " + evaluationError(err)
					t.Errorf("%s: %s: policy %s: %s", set.name, p.name, policy.Name, costliest)
				} else {
					match, costliest, all = strconv.FormatInt(cost.match, 10), strconv.FormatInt(cost.maxMutation(), 10), strconv.FormatInt(cost.total()-cost.match, 10)
				}
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", set.name, policy.Name, len(policy.Spec.Mutations), p.name,
					match, costliest, all, strings.Join(outcomes, ", "), took.Round(time.Millisecond))
			}
		}
		deletePolicies(t, s, r)
		waitForNoPolicies(t, s)
	}
	b.WriteString(budgetProbe(t, s, pods[0].pod, pods[len(pods)-1].pod))
	fmt.Print(b.String())
	t.Log(b.String())
}

// budgetProbe shows, on s, what kube-apiserver does with a policy whose
// CEL grows with the cube of a pod's containers (not the compiler's: a
// policy of this test's own): it accepts the policy, applies it to small,
// a pod it fits, and on big, where the expression passes
// celconfig.PerCallLimit, refuses the create (failurePolicy Fail) and
// counts the mutation as an invalid_error, not as out_of_budget, which it
// keeps for a mutation's budget of celconfig.RuntimeCELCostBudget.
func budgetProbe(t *testing.T, s *stockServer, small, big *corev1.Pod) string {
	t.Helper()
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "budget-probe"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"distinct": string(
  object.spec.containers.all(a, object.spec.containers.all(b, object.spec.containers.all(c, a.name + b.name + c.name != ""))))}}}`},
			}},
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "budget-probe"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "budget-probe"},
	}
	ctx := context.Background()
	for _, o := range []client.Object{policy, binding} {
		if err := s.objects.Create(ctx, o); err != nil {
			t.Fatalf("kube-apiserver refused %T %s: %v", o, o.GetName(), err)
		}
	}
	var b strings.Builder
	b.WriteString("\nbudget probe: a policy of cubic cost in the containers, accepted at creation\n")
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err := s.client.CoreV1().Pods(latencyNamespace).Create(ctx, small.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && pod.Labels["distinct"] == "true", nil
	})
	if err != nil {
		t.Fatalf("the budget probe never applied to %d containers: %v", len(small.Spec.Containers), err)
	}
	cost, err := evaluatePolicyCost(policy, small, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "%d containers: applied, cost %d\n", len(small.Spec.Containers), cost.total())
	before := policyOutcomes(t, s)
	_, err = s.client.CoreV1().Pods(latencyNamespace).Create(ctx, big.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	after := policyOutcomes(t, s)
	if err == nil {
		t.Errorf("the budget probe: %d containers were admitted", len(big.Spec.Containers))
	}
	var outcomes []string
	for outcome, n := range after[policy.Name] {
		if d := n - before[policy.Name][outcome]; d > 0 {
			outcomes = append(outcomes, fmt.Sprintf("%s %.0f", outcome, d))
		}
	}
	slices.Sort(outcomes)
	refusal := "admitted"
	if err != nil {
		refusal = "refused: " + evaluationError(err)
	}
	fmt.Fprintf(&b, "%d containers: %s; kube-apiserver counted %s\n", len(big.Spec.Containers), refusal, strings.Join(outcomes, ", "))
	for _, o := range []client.Object{binding, policy} {
		if err := s.objects.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// evaluationError is what an evaluation error (in-process or kube-apiserver's
// refusal) says after the expression it quotes, which can run to kilobytes.
func evaluationError(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "resulted in error: "); i >= 0 {
		return msg[i+len("resulted in error: "):]
	}
	return msg
}

// policyOutcomes is kube-apiserver's count of the mutations of each
// MutatingAdmissionPolicy so far, by outcome
// (apiserver_mutating_admission_policy_check_total's error_type).
func policyOutcomes(t *testing.T, s *stockServer) map[string]map[string]float64 {
	t.Helper()
	data, err := s.apiserverScrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all, err := parseMetrics(data)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, m := range all {
		if m.name != "apiserver_mutating_admission_policy_check_total" {
			continue
		}
		if out[m.labels["policy"]] == nil {
			out[m.labels["policy"]] = map[string]float64{}
		}
		out[m.labels["policy"]][m.labels["error_type"]] += m.value
	}
	return out
}

// waitForPolicies waits until kube-apiserver applies every mutating
// policy of r to a dry-run create of the benchmark's pod, as its metrics
// count.
func waitForPolicies(t *testing.T, s *stockServer, r compiler.Result) {
	t.Helper()
	var missing []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		before := policyOutcomes(t, s)
		if _, err := dryRunPod(ctx, s); err != nil {
			return false, nil
		}
		after := policyOutcomes(t, s)
		missing = nil
		for _, p := range r.MutatingPolicies {
			if after[p.Name]["no_error"] <= before[p.Name]["no_error"] {
				missing = append(missing, p.Name)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver never applied policies %v: %v", missing, err)
	}
}

// waitForNoPolicies waits until kube-apiserver applies no mutating policy
// to a dry-run create any more.
func waitForNoPolicies(t *testing.T, s *stockServer) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		before := policyOutcomes(t, s)
		if _, err := dryRunPod(ctx, s); err != nil {
			return false, nil
		}
		return maps.EqualFunc(before, policyOutcomes(t, s), maps.Equal), nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver still applies policies after their removal: %v", err)
	}
}
