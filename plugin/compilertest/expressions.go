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
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitkit/admitkit/plugin/compiler"
)

// checkExpressions compiles every CEL expression of result's policies as
// kube-apiserver does when the policy is created (the environment for new
// expressions, one composited compiler per policy so that later expressions
// see the variables) and returns what kube-apiserver would refuse the
// policy for. Without it a policy that does not compile would reach the
// plugins, which fail (or, under failurePolicy Ignore, skip) it at every
// request instead. It checks compilation only, not the rest of
// kube-apiserver's validation of the objects' fields.
func checkExpressions(result compiler.Result) error {
	var errs []error
	for i := range result.MutatingPolicies {
		p := &result.MutatingPolicies[i]
		if list := checkMutatingPolicy(p); len(list) > 0 {
			errs = append(errs, fmt.Errorf("MutatingAdmissionPolicy %s: %w", p.Name, list.ToAggregate()))
		}
	}
	for i := range result.ValidatingPolicies {
		p := &result.ValidatingPolicies[i]
		if list := checkValidatingPolicy(p); len(list) > 0 {
			errs = append(errs, fmt.Errorf("ValidatingAdmissionPolicy %s: %w", p.Name, list.ToAggregate()))
		}
	}
	return errors.Join(errs...)
}

func checkMutatingPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	spec := field.NewPath("spec")
	compiler, errs := newChecker(spec)
	if compiler == nil {
		return errs
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	errs = append(errs, checkVariables(compiler, p.Spec.Variables, opts, spec.Child("variables"))...)
	errs = append(errs, checkMatchConditions(compiler, p.Spec.MatchConditions, opts, spec.Child("matchConditions"))...)
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	for i, m := range p.Spec.Mutations {
		path := spec.Child("mutations").Index(i)
		switch {
		case m.JSONPatch != nil:
			errs = append(errs, compileOne(compiler, &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchOpts, path.Child("jsonPatch", "expression"))...)
		case m.ApplyConfiguration != nil:
			errs = append(errs, compileOne(compiler, &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchOpts, path.Child("applyConfiguration", "expression"))...)
		}
	}
	return errs
}

func checkValidatingPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	spec := field.NewPath("spec")
	compiler, errs := newChecker(spec)
	if compiler == nil {
		return errs
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	// messageExpression has no authorizer, as in the plugin.
	messageOpts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil}
	errs = append(errs, checkVariables(compiler, p.Spec.Variables, opts, spec.Child("variables"))...)
	errs = append(errs, checkMatchConditions(compiler, p.Spec.MatchConditions, opts, spec.Child("matchConditions"))...)
	for i, v := range p.Spec.Validations {
		path := spec.Child("validations").Index(i)
		errs = append(errs, compileOne(compiler, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}, opts, path.Child("expression"))...)
		if v.MessageExpression != "" {
			errs = append(errs, compileOne(compiler, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}, messageOpts, path.Child("messageExpression"))...)
		}
	}
	for i, a := range p.Spec.AuditAnnotations {
		errs = append(errs, compileOne(compiler, &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}, opts, spec.Child("auditAnnotations").Index(i).Child("valueExpression"))...)
	}
	return errs
}

func newChecker(spec *field.Path) (*plugincel.CompositedCompiler, field.ErrorList) {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, field.ErrorList{field.InternalError(spec, err)}
	}
	return compiler, nil
}

func checkVariables(compiler *plugincel.CompositedCompiler, variables []admissionregistrationv1.Variable, opts plugincel.OptionalVariableDeclarations, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range variables {
		result := compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, opts, environment.NewExpressions)
		if result.Error != nil {
			errs = append(errs, celError(path.Index(i).Child("expression"), v.Expression, result.Error))
		}
	}
	return errs
}

func checkMatchConditions(compiler *plugincel.CompositedCompiler, conditions []admissionregistrationv1.MatchCondition, opts plugincel.OptionalVariableDeclarations, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range conditions {
		errs = append(errs, compileOne(compiler, (*matchconditions.MatchCondition)(&conditions[i]), opts, path.Index(i).Child("expression"))...)
	}
	return errs
}

func compileOne(compiler *plugincel.CompositedCompiler, expression plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations, path *field.Path) field.ErrorList {
	result := compiler.CompileCELExpression(expression, opts, environment.NewExpressions)
	if result.Error == nil {
		return nil
	}
	return field.ErrorList{celError(path, expression.GetExpression(), result.Error)}
}

// celError words a compile error as kube-apiserver's validation does.
func celError(path *field.Path, expression string, err *apiservercel.Error) *field.Error {
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.Required(path, err.Detail)
	case apiservercel.ErrorTypeInvalid:
		return field.Invalid(path, expression, err.Detail)
	default:
		return field.InternalError(path, err)
	}
}
