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

package compilertest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/compilertest"
)

// podRules matches pod creates, as a compiled policy does.
var podRules = &admissionregistrationv1.MatchResources{
	ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{""},
				APIVersions: []string{"v1"},
				Resources:   []string{"pods"},
			},
		},
	}},
}

// mutatingPolicy is a MAP of the given mutations on pod creates, bound to
// every namespace unless binding narrows it.
func mutatingPolicy(name string, mutations ...admissionregistrationv1.Mutation) admissionregistrationv1.MutatingAdmissionPolicy {
	return admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints:   podRules.DeepCopy(),
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations:          mutations,
		},
	}
}

func mutatingBinding(policy string) admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy},
	}
}

func applyConfiguration(expression string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{
		PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expression},
	}
}

func jsonPatch(expression string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{
		PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expression},
	}
}

func validatingPolicy(name string, validations ...admissionregistrationv1.Validation) admissionregistrationv1.ValidatingAdmissionPolicy {
	return admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: podRules.DeepCopy(),
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			Validations:      validations,
		},
	}
}

func validatingBinding(policy string, actions ...admissionregistrationv1.ValidationAction) admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy,
			ValidationActions: actions,
		},
	}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// pod is a pod as a user writes it; Admit defaults it as kube-apiserver
// decodes it (imagePullPolicy IfNotPresent for a tagged image).
func pod(labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "registry.example/app:1.0"},
			{Name: "sidecar", Image: "registry.example/sidecar:2.0"},
		}},
	}
}

func newRunner(t *testing.T, result compiler.Result, namespaces ...*corev1.Namespace) *compilertest.Runner {
	t.Helper()
	r, err := compilertest.New(result, namespaces...)
	if err != nil {
		t.Fatalf("compilertest.New: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

func admitPod(t *testing.T, r *compilertest.Runner, in *corev1.Pod, ns string) (*corev1.Pod, []string, map[string]string, error) {
	t.Helper()
	out, warnings, audit, err := r.Admit(context.Background(), in, admission.Create, ns)
	if err != nil {
		return nil, warnings, audit, err
	}
	p, ok := out.(*corev1.Pod)
	if !ok {
		t.Fatalf("Admit returned %T, want *corev1.Pod", out)
	}
	return p, warnings, audit, nil
}

func pullPolicies(p *corev1.Pod) []corev1.PullPolicy {
	var out []corev1.PullPolicy
	for _, c := range p.Spec.Containers {
		out = append(out, c.ImagePullPolicy)
	}
	return out
}

const alwaysPull = `Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, imagePullPolicy: "Always"})}}`

func TestApplyConfigurationSetsEveryContainer(t *testing.T) {
	r := newRunner(t, compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{mutatingPolicy("always-pull", applyConfiguration(alwaysPull))},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("always-pull")},
	}, namespace("default", nil))

	in := pod(nil)
	out, _, _, err := admitPod(t, r, in, "default")
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if diff := cmp.Diff([]corev1.PullPolicy{corev1.PullAlways, corev1.PullAlways}, pullPolicies(out)); diff != "" {
		t.Errorf("imagePullPolicy (-want +got):\n%s", diff)
	}
	if in.Spec.Containers[0].ImagePullPolicy != "" {
		t.Errorf("Admit changed its input: imagePullPolicy %q", in.Spec.Containers[0].ImagePullPolicy)
	}
	if out.Namespace != "default" {
		t.Errorf("metadata.namespace = %q, want the request's, default", out.Namespace)
	}
}

// Without a policy the pod comes back as decoded: defaulted, not mutated.
func TestNoPolicyOnlyDefaults(t *testing.T) {
	r := newRunner(t, compiler.Result{}, namespace("default", nil))
	out, _, _, err := admitPod(t, r, pod(nil), "default")
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if diff := cmp.Diff([]corev1.PullPolicy{corev1.PullIfNotPresent, corev1.PullIfNotPresent}, pullPolicies(out)); diff != "" {
		t.Errorf("imagePullPolicy (-want +got):\n%s", diff)
	}
}

// A JSONPatch whose value is a plain CEL map (not an Object{} literal), as
// the compiler writes to stay clear of kubernetes#142181.
const appendEnv = `object.spec.containers.map(c, c.name).map(n, JSONPatch{
	op: "add",
	path: "/spec/containers/" + string(object.spec.containers.map(c, c.name).indexOf(n)) + "/env" + (has(object.spec.containers[object.spec.containers.map(c, c.name).indexOf(n)].env) ? "/-" : ""),
	value: has(object.spec.containers[object.spec.containers.map(c, c.name).indexOf(n)].env) ? dyn({"name": "REGION", "value": "eu-west-1"}) : dyn([{"name": "REGION", "value": "eu-west-1"}])
})`

func TestJSONPatchAppendsEnv(t *testing.T) {
	r := newRunner(t, compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{mutatingPolicy("region", jsonPatch(appendEnv))},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("region")},
	}, namespace("default", nil))

	in := pod(nil)
	in.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
	out, _, _, err := admitPod(t, r, in, "default")
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	want := [][]corev1.EnvVar{
		{{Name: "REGION", Value: "eu-west-1"}},
		{{Name: "MODE", Value: "fast"}, {Name: "REGION", Value: "eu-west-1"}},
	}
	var got [][]corev1.EnvVar
	for _, c := range out.Spec.Containers {
		got = append(got, c.Env)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

func TestNamespaceSelectorBinding(t *testing.T) {
	policy := mutatingPolicy("always-pull", applyConfiguration(alwaysPull))
	binding := mutatingBinding("always-pull")
	binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pull": "always"}},
	}
	r := newRunner(t, compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{policy},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{binding},
	}, namespace("selected", map[string]string{"pull": "always"}), namespace("other", nil))

	for ns, want := range map[string]corev1.PullPolicy{"selected": corev1.PullAlways, "other": corev1.PullIfNotPresent} {
		out, _, _, err := admitPod(t, r, pod(nil), ns)
		if err != nil {
			t.Fatalf("Admit in %s: %v", ns, err)
		}
		if diff := cmp.Diff([]corev1.PullPolicy{want, want}, pullPolicies(out)); diff != "" {
			t.Errorf("imagePullPolicy in namespace %s (-want +got):\n%s", ns, diff)
		}
	}
}

func TestObjectSelectorAndMatchCondition(t *testing.T) {
	labelled := mutatingPolicy("labelled", applyConfiguration(`Object{metadata: Object.metadata{annotations: {"labelled": "yes"}}}`))
	labelled.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	// A policy whose matchCondition is false for every pod never mutates.
	never := mutatingPolicy("never", applyConfiguration(`Object{metadata: Object.metadata{annotations: {"never": "ran"}}}`))
	never.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "host-network", Expression: `has(object.spec.hostNetwork) && object.spec.hostNetwork`}}
	// One whose matchCondition holds, with a variable.
	named := mutatingPolicy("named", applyConfiguration(`Object{metadata: Object.metadata{annotations: {"first": variables.first}}}`))
	named.Spec.Variables = []admissionregistrationv1.Variable{{Name: "first", Expression: `object.spec.containers[0].name`}}
	named.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "has-app", Expression: `object.spec.containers.exists(c, c.name == "app")`}}

	r := newRunner(t, compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{labelled, never, named},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("labelled"), mutatingBinding("never"), mutatingBinding("named")},
	}, namespace("default", nil))

	for _, tc := range []struct {
		labels map[string]string
		want   map[string]string
	}{
		{labels: map[string]string{"app": "web"}, want: map[string]string{"labelled": "yes", "first": "app"}},
		{labels: map[string]string{"app": "db"}, want: map[string]string{"first": "app"}},
	} {
		out, _, _, err := admitPod(t, r, pod(tc.labels), "default")
		if err != nil {
			t.Fatalf("Admit of a pod labelled %v: %v", tc.labels, err)
		}
		if diff := cmp.Diff(tc.want, out.Annotations); diff != "" {
			t.Errorf("annotations of a pod labelled %v (-want +got):\n%s", tc.labels, diff)
		}
	}
}

func TestValidatingWarnAuditAndDeny(t *testing.T) {
	noLatest := validatingPolicy("no-latest", admissionregistrationv1.Validation{
		Expression: `object.spec.containers.all(c, !c.image.endsWith(":latest"))`,
		Message:    "images must name a tag other than latest",
	})
	noLatest.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "containers", ValueExpression: `string(size(object.spec.containers))`}}
	noPrivileged := validatingPolicy("no-privileged", admissionregistrationv1.Validation{
		Expression: `object.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)`,
		Message:    "privileged containers are refused",
	})
	r := newRunner(t, compiler.Result{
		ValidatingPolicies: []admissionregistrationv1.ValidatingAdmissionPolicy{noLatest, noPrivileged},
		ValidatingBindings: []admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			validatingBinding("no-latest", admissionregistrationv1.Warn, admissionregistrationv1.Audit),
			validatingBinding("no-privileged", admissionregistrationv1.Deny),
		},
	}, namespace("default", nil))

	latest := pod(nil)
	latest.Spec.Containers[0].Image = "registry.example/app:latest"
	_, warnings, audit, err := admitPod(t, r, latest, "default")
	if err != nil {
		t.Fatalf("Admit of a pod with a latest image (Warn, Audit): %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "images must name a tag other than latest") || !strings.Contains(warnings[0], "no-latest") {
		t.Errorf("warnings = %q, want one from no-latest with its message", warnings)
	}
	if audit["no-latest/containers"] != "2" {
		t.Errorf("audit annotation no-latest/containers = %q, want 2 (all: %v)", audit["no-latest/containers"], audit)
	}
	if !strings.Contains(audit["validation.policy.admission.k8s.io/validation_failure"], "no-latest") {
		t.Errorf("audit annotations %v lack the Audit action's validation_failure for no-latest", audit)
	}

	privileged := pod(nil)
	privileged.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	_, _, _, err = admitPod(t, r, privileged, "default")
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "privileged containers are refused") {
		t.Errorf("Admit of a privileged pod: error %v, want the Deny action's Invalid refusal with its message", err)
	}

	_, warnings, _, err = admitPod(t, r, pod(nil), "default")
	if err != nil || len(warnings) != 0 {
		t.Errorf("Admit of a compliant pod: warnings %q, error %v; want neither", warnings, err)
	}
}

// The ValidatingAdmissionPolicy sees the mutated pod: MAPs run before VAPs.
func TestValidationSeesMutations(t *testing.T) {
	r := newRunner(t, compiler.Result{
		MutatingPolicies:   []admissionregistrationv1.MutatingAdmissionPolicy{mutatingPolicy("always-pull", applyConfiguration(alwaysPull))},
		MutatingBindings:   []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("always-pull")},
		ValidatingPolicies: []admissionregistrationv1.ValidatingAdmissionPolicy{validatingPolicy("pull-always", admissionregistrationv1.Validation{Expression: `object.spec.containers.all(c, c.imagePullPolicy == "Always")`})},
		ValidatingBindings: []admissionregistrationv1.ValidatingAdmissionPolicyBinding{validatingBinding("pull-always", admissionregistrationv1.Deny)},
	}, namespace("default", nil))
	out, _, _, err := admitPod(t, r, pod(nil), "default")
	if err != nil {
		t.Fatalf("Admit: %v, want the mutated pod to pass validation", err)
	}
	if diff := cmp.Diff([]corev1.PullPolicy{corev1.PullAlways, corev1.PullAlways}, pullPolicies(out)); diff != "" {
		t.Errorf("imagePullPolicy (-want +got):\n%s", diff)
	}
}

// A reference to a field the pod does not have fails the request, as
// kube-apiserver fails it under failurePolicy Fail, naming the policy; under
// Ignore the pod passes unchanged.
func TestMissingFieldErrors(t *testing.T) {
	missing := `Object{metadata: Object.metadata{annotations: {"node": object.spec.nodeName}}}`
	for _, tc := range []struct {
		failurePolicy admissionregistrationv1.FailurePolicyType
		wantErr       bool
	}{{admissionregistrationv1.Fail, true}, {admissionregistrationv1.Ignore, false}} {
		policy := mutatingPolicy("node-annotation", applyConfiguration(missing))
		policy.Spec.FailurePolicy = ptr.To(tc.failurePolicy)
		r := newRunner(t, compiler.Result{
			MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{policy},
			MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("node-annotation")},
		}, namespace("default", nil))
		out, _, _, err := admitPod(t, r, pod(nil), "default")
		if !tc.wantErr {
			if err != nil || len(out.Annotations) != 0 {
				t.Errorf("failurePolicy Ignore: annotations %v, error %v; want the pod unchanged", out.Annotations, err)
			}
			continue
		}
		if err == nil {
			t.Fatalf("failurePolicy Fail: Admit returned no error for a missing field")
		}
		for _, want := range []string{"node-annotation", "no such key: nodeName"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("failurePolicy Fail: error %q does not contain %q", err, want)
			}
		}
	}
}

// An unstructured pod comes back unstructured, mutated as the typed one.
func TestUnstructuredPod(t *testing.T) {
	r := newRunner(t, compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{mutatingPolicy("always-pull", applyConfiguration(alwaysPull))},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("always-pull")},
	}, namespace("default", nil))
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod(nil))
	if err != nil {
		t.Fatal(err)
	}
	in := &unstructured.Unstructured{Object: content}
	in.SetAPIVersion("v1")
	in.SetKind("Pod")
	out, _, _, err := r.Admit(context.Background(), in, admission.Create, "default")
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("Admit returned %T, want *unstructured.Unstructured", out)
	}
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
	for i, c := range containers {
		if got := c.(map[string]any)["imagePullPolicy"]; got != "Always" {
			t.Errorf("containers[%d].imagePullPolicy = %v, want Always", i, got)
		}
	}
}

// An update is admitted with its old object: a policy on UPDATE sees both.
func TestUpdateSeesOldObject(t *testing.T) {
	keep := validatingPolicy("keep-containers", admissionregistrationv1.Validation{
		Expression: `size(object.spec.containers) == size(oldObject.spec.containers)`,
		Message:    "containers may not be added or removed",
	})
	keep.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	r := newRunner(t, compiler.Result{
		ValidatingPolicies: []admissionregistrationv1.ValidatingAdmissionPolicy{keep},
		ValidatingBindings: []admissionregistrationv1.ValidatingAdmissionPolicyBinding{validatingBinding("keep-containers", admissionregistrationv1.Deny)},
	}, namespace("default", nil))

	old := pod(nil)
	grown := pod(nil)
	grown.Spec.Containers = append(grown.Spec.Containers, corev1.Container{Name: "extra", Image: "registry.example/extra:1.0"})
	if _, _, _, err := r.AdmitUpdate(context.Background(), grown, old, "default"); err == nil || !strings.Contains(err.Error(), "containers may not be added or removed") {
		t.Errorf("AdmitUpdate adding a container: error %v, want the Deny refusal", err)
	}
	if _, _, _, err := r.Admit(context.Background(), old, admission.Update, "default"); err != nil {
		t.Errorf("Admit of an update that changes nothing: %v", err)
	}
	if _, _, _, err := r.Admit(context.Background(), grown, admission.Create, "default"); err != nil {
		t.Errorf("Admit of a create, which the policy does not match: %v", err)
	}
}
