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

// These tests pin what apiserver v0.37.2's plugins do where the compiler
// must design around them; each fails if the Runner does not run them.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/compilertest"
)

// kubernetes#142181: a JSONPatch value holding a list of Object{} literals
// panics kube-apiserver 1.36.0 to 1.36.3. apiserver v0.37.2 applies it,
// nested literals included. The compiler still writes plain maps, since
// its policies must also run on those 1.36 releases.
func TestJSONPatchListOfObjectLiterals(t *testing.T) {
	r := newRunner(t, compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{mutatingPolicy("literals",
			jsonPatch(`[JSONPatch{op: "add", path: "/spec/containers/0/env", value: [Object.spec.containers.env{name: "A", value: "1"}, Object.spec.containers.env{name: "B", value: "2"}]}]`),
			jsonPatch(`[JSONPatch{op: "add", path: "/spec/volumes", value: [Object.spec.volumes{name: "config", configMap: Object.spec.volumes.configMap{name: "cm", items: [Object.spec.volumes.configMap.items{key: "k", path: "p"}]}}]}]`),
		)},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("literals")},
	}, namespace("default", nil))
	out, _, _, err := admitPod(t, r, pod(nil), "default")
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}, out.Spec.Containers[0].Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if len(out.Spec.Volumes) != 1 || out.Spec.Volumes[0].ConfigMap == nil || out.Spec.Volumes[0].ConfigMap.Name != "cm" ||
		len(out.Spec.Volumes[0].ConfigMap.Items) != 1 || out.Spec.Volumes[0].ConfigMap.Items[0].Path != "p" {
		t.Errorf("volumes = %+v, want the configMap volume cm with one item", out.Spec.Volumes)
	}
}

// An expression past the per-expression cost limit fails the request with
// the CEL runtime's error, as kube-apiserver reports it.
func TestCostLimitExceeded(t *testing.T) {
	twenty := "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]"
	expensive := fmt.Sprintf(`Object{metadata: Object.metadata{annotations: {"n": string(size(%[1]s.map(a, %[1]s.map(b, %[1]s.map(c, %[1]s.map(d, %[1]s.map(e, a+b+c+d+e)))))))}}}`, twenty)
	r := newRunner(t, compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{mutatingPolicy("expensive", applyConfiguration(expensive))},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("expensive")},
	}, namespace("default", nil))
	_, _, _, err := admitPod(t, r, pod(nil), "default")
	if err == nil || !strings.Contains(err.Error(), "operation cancelled: actual cost limit exceeded") || !strings.Contains(err.Error(), "policy 'expensive'") {
		t.Errorf("Admit: error %v, want policy 'expensive' refused for exceeding the cost limit", err)
	}
}

// counter adds one to the pod's annotation "count" each time it runs.
const counter = `Object{metadata: Object.metadata{annotations: {"count": string(has(object.metadata.annotations) && "count" in object.metadata.annotations ? int(object.metadata.annotations["count"]) + 1 : 1)}}}`

// An IfNeeded policy that changed the pod runs once more even when nothing
// after it changed the pod (the dispatcher asks for a reinvocation whenever
// the object it converts back is dirty), and only once: compiled IfNeeded
// policies must be idempotent. A Never policy runs once.
func TestReinvocationOfAPolicyAlone(t *testing.T) {
	for policy, want := range map[admissionregistrationv1.ReinvocationPolicyType]string{
		admissionregistrationv1.IfNeededReinvocationPolicy: "2",
		admissionregistrationv1.NeverReinvocationPolicy:    "1",
	} {
		p := mutatingPolicy("counter", applyConfiguration(counter))
		p.Spec.ReinvocationPolicy = policy
		r := newRunner(t, compiler.Result{
			MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{p},
			MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("counter")},
		}, namespace("default", nil))
		out, _, _, err := admitPod(t, r, pod(nil), "default")
		if err != nil {
			t.Fatalf("reinvocationPolicy %s: Admit: %v", policy, err)
		}
		if got := out.Annotations["count"]; got != want {
			t.Errorf("reinvocationPolicy %s: the policy ran %s times, want %s", policy, got, want)
		}
	}
}

// MAPs run in no set order; an IfNeeded policy that reads what another
// writes sees it in the end whichever runs first. Several Runners give
// several orders.
func TestReinvocationSeesLaterPolicies(t *testing.T) {
	reader := mutatingPolicy("reader", applyConfiguration(
		`Object{metadata: Object.metadata{annotations: {"saw-writer": has(object.metadata.annotations) && "writer" in object.metadata.annotations ? "yes" : "no"}}}`))
	reader.Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
	writer := mutatingPolicy("writer", applyConfiguration(`Object{metadata: Object.metadata{annotations: {"writer": "wrote"}}}`))
	result := compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{reader, writer},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("reader"), mutatingBinding("writer")},
	}
	for i := range 5 {
		r := newRunner(t, result, namespace("default", nil))
		out, _, _, err := admitPod(t, r, pod(nil), "default")
		if err != nil {
			t.Fatalf("run %d: Admit: %v", i, err)
		}
		if diff := cmp.Diff(map[string]string{"saw-writer": "yes", "writer": "wrote"}, out.Annotations); diff != "" {
			t.Errorf("run %d: annotations (-want +got):\n%s", i, diff)
		}
	}
}

// New refuses a policy kube-apiserver would not create, naming the policy
// and the field.
func TestNewRefusesExpressionsThatDoNotCompile(t *testing.T) {
	vap := validatingPolicy("bad-message", admissionregistrationv1.Validation{Expression: "true", MessageExpression: `"x" +`})
	_, err := compilertest.New(compiler.Result{
		MutatingPolicies:   []admissionregistrationv1.MutatingAdmissionPolicy{mutatingPolicy("bad-patch", jsonPatch(`[JSONPatch{op: "add", path: "/x", value: undefinedName}]`))},
		ValidatingPolicies: []admissionregistrationv1.ValidatingAdmissionPolicy{vap},
	})
	if err == nil {
		t.Fatal("New accepted expressions that do not compile")
	}
	for _, want := range []string{
		"MutatingAdmissionPolicy bad-patch", "spec.mutations[0].jsonPatch.expression", "undeclared reference to 'undefinedName'",
		"ValidatingAdmissionPolicy bad-message", "spec.validations[0].messageExpression",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New: error %q does not contain %q", err, want)
		}
	}
}

// ApplyConfiguration may not set an atomic list or struct (args, envFrom,
// ...): the request fails naming each path, so the compiler uses JSONPatch
// there.
func TestApplyConfigurationRefusesAtomicLists(t *testing.T) {
	r := newRunner(t, compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{mutatingPolicy("args", applyConfiguration(
			`Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, args: ["--verbose"]})}}`))},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("args")},
	}, namespace("default", nil))
	_, _, _, err := admitPod(t, r, pod(nil), "default")
	if err == nil || !strings.Contains(err.Error(), "may not mutate atomic arrays, maps or structs: .spec.containers[0].args, .spec.containers[1].args") {
		t.Errorf("Admit: error %v, want the atomic args of both containers refused", err)
	}
}

// A Runner holds no parameter objects: New refuses a policy with a
// paramKind rather than run it without its parameters.
func TestNewRefusesParamKind(t *testing.T) {
	p := mutatingPolicy("with-params", applyConfiguration(alwaysPull))
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	_, err := compilertest.New(compiler.Result{MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{p}})
	if err == nil || !strings.Contains(err.Error(), "MutatingAdmissionPolicy with-params: spec.paramKind") {
		t.Errorf("New: error %v, want with-params refused for its paramKind", err)
	}
}
