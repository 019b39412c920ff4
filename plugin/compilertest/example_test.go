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
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/compilertest"
)

// A compiler test runs what Compile made on a pod and reads the pod back.
func Example() {
	// In a compiler test: result := compiler.Compile(sources).
	result := compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{{
			ObjectMeta: metav1.ObjectMeta{Name: "team"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{
					ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
						RuleWithOperations: admissionregistrationv1.RuleWithOperations{
							Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
							Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
						},
					}},
				},
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				Mutations: []admissionregistrationv1.Mutation{{
					PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"team": namespaceObject.metadata.labels["team"]}}}`},
				}},
			},
		}},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{{
			ObjectMeta: metav1.ObjectMeta{Name: "team"},
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "team"},
		}},
	}
	r, err := compilertest.New(result, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "payments"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close() // in a test: t.Cleanup(r.Close)

	in := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1.0"}}},
	}
	out, warnings, audit, err := r.Admit(context.Background(), in, admission.Create, "shop")
	if err != nil {
		fmt.Println(err) // a VAP Deny, or a policy that failed under failurePolicy Fail
		return
	}
	p := out.(*corev1.Pod)
	fmt.Println(p.Labels["team"], p.Spec.Containers[0].ImagePullPolicy, len(warnings), len(audit))
	// Output: payments IfNotPresent 0 0
}
