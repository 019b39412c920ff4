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

package compilertest

import (
	"fmt"
	"io"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/openapi"
)

// registerMutating registers, under upstream's plugin name, the
// MutatingAdmissionPolicy plugin assembled from apiserver's own parts: its
// generic policy plugin, policy source, dispatcher (with the reinvocation
// bookkeeping) and patchers. Only two things differ from
// mutating.NewPlugin, and neither changes what a policy does:
//
//   - The type converter for ApplyConfiguration patches. kube-apiserver
//     builds it from the OpenAPI v3 schemas it serves (discovery); without a
//     server, the same schemas come from client-go's apply configurations
//     (the structural schema of every built-in type, generated from the same
//     OpenAPI definitions). Kinds it lacks (custom resources) find no schema,
//     as a CRD kube-apiserver has not published yet.
//   - mutating.NewPlugin's compile function is unexported, so
//     compileMutatingPolicy below assembles the same exported pieces.
func registerMutating(plugins *admission.Plugins, typeConverter managedfields.TypeConverter) {
	plugins.Register(mutating.PluginName, func(io.Reader) (admission.Interface, error) {
		p := &mutating.Plugin{Plugin: generic.NewPlugin(
			// The operations mutating.NewPlugin handles.
			admission.NewHandler(admission.Create, admission.Update, admission.Connect),
			func(f informers.SharedInformerFactory, _ kubernetes.Interface, dynamicClient dynamic.Interface, restMapper meta.RESTMapper) generic.Source[mutating.PolicyHook] {
				return generic.NewPolicySource(
					f.Admissionregistration().V1().MutatingAdmissionPolicies().Informer(),
					f.Admissionregistration().V1().MutatingAdmissionPolicyBindings().Informer(),
					mutating.NewMutatingAdmissionPolicyAccessor,
					mutating.NewMutatingAdmissionPolicyBindingAccessor,
					compileMutatingPolicy,
					f,
					dynamicClient,
					restMapper,
				)
			},
			func(a authorizer.UnconditionalAuthorizer, m *matching.Matcher, _ kubernetes.Interface) generic.Dispatcher[mutating.PolicyHook] {
				return mutating.NewDispatcher(a, m, patch.NewTypeConverterManager(typeConverter, noSchemas{}))
			},
		)}
		return p, nil
	})
}

// compileMutatingPolicy compiles a policy as kube-apiserver 1.37's
// MutatingAdmissionPolicy plugin does: one composited compiler per policy
// on the base CEL environment of this apiserver version (with its per-call
// cost limit), the variables stored for every later expression, the
// authorizer declared, and the patch types declared for the mutations.
func compileMutatingPolicy(policy *admissionregistrationv1.MutatingAdmissionPolicy) mutating.PolicyEvaluator {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return mutating.PolicyEvaluator{Error: fmt.Errorf("MutatingAdmissionPolicy %s: CEL compiler: %w", policy.Name, err)}
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}

	variables := make([]plugincel.NamedExpressionAccessor, len(policy.Spec.Variables))
	for i, v := range policy.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(variables, opts, environment.StoredExpressions)

	var matcher matchconditions.Matcher
	if conditions := policy.Spec.MatchConditions; len(conditions) > 0 {
		accessors := make([]plugincel.ExpressionAccessor, len(conditions))
		for i := range conditions {
			accessors[i] = (*matchconditions.MatchCondition)(&conditions[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(accessors, opts, environment.StoredExpressions),
			policy.Spec.FailurePolicy, "policy", "validate", policy.Name)
	}

	patchOpts := opts
	patchOpts.HasPatchTypes = true
	var patchers []patch.Patcher
	for _, m := range policy.Spec.Mutations {
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			evaluator := compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchOpts, environment.StoredExpressions)
			patchers = append(patchers, patch.NewJSONPatcher(evaluator))
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			evaluator := compiler.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchOpts, environment.StoredExpressions)
			patchers = append(patchers, patch.NewApplyConfigurationPatcher(evaluator))
		}
	}
	return mutating.PolicyEvaluator{Matcher: matcher, Mutators: patchers, CompositedCompiler: compiler}
}

// noSchemas is the OpenAPI v3 discovery of a server that publishes no
// schema beyond the built-in types the static type converter holds.
type noSchemas struct{}

func (noSchemas) Paths() (map[string]openapi.GroupVersion, error) {
	return map[string]openapi.GroupVersion{}, nil
}

var _ openapi.Client = noSchemas{}
