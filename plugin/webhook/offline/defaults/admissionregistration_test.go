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

package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestWebhookConfigurationDefaults(t *testing.T) {
	c := defaulted(t, &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
		Name:         "m.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}},
		Rules:        []admissionregistrationv1.RuleWithOperations{{}},
	}}})
	w := c.Webhooks[0]
	want := admissionregistrationv1.MutatingWebhook{
		Name: "m.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: "ns", Name: "svc", Port: ptr.To[int32](443),
		}},
		Rules:              []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{Scope: ptr.To(admissionregistrationv1.AllScopes)}}},
		FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:        ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:  &metav1.LabelSelector{},
		ObjectSelector:     &metav1.LabelSelector{},
		TimeoutSeconds:     ptr.To[int32](10),
		ReinvocationPolicy: ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
	}
	if diff := cmp.Diff(want, w); diff != "" {
		t.Errorf("mutating webhook (-want +got):\n%s", diff)
	}
	v := defaulted(t, &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{}}})
	if got := v.Webhooks[0].TimeoutSeconds; got == nil || *got != 10 {
		t.Errorf("validating webhook timeout = %v, want 10", got)
	}
}

func TestAdmissionPolicyDefaults(t *testing.T) {
	p := defaulted(t, &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConstraints: &admissionregistrationv1.MatchResources{},
	}})
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail || *p.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("policy failurePolicy %q, matchPolicy %q; want Fail and Equivalent", *p.Spec.FailurePolicy, *p.Spec.MatchConstraints.MatchPolicy)
	}
	b := defaulted(t, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})
	if b.Spec.MatchResources != nil {
		t.Errorf("a binding without matchResources got %+v", b.Spec.MatchResources)
	}
}
