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
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

func TestNetworkPolicyDefaults(t *testing.T) {
	np := defaulted(t, &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{}}}},
		Egress:  []networkingv1.NetworkPolicyEgressRule{{}},
	}})
	if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes); diff != "" {
		t.Errorf("policyTypes (-want +got):\n%s", diff)
	}
	if got := np.Spec.Ingress[0].Ports[0].Protocol; got == nil || *got != corev1.ProtocolTCP {
		t.Errorf("port protocol = %v, want TCP", got)
	}
	ingressOnly := defaulted(t, &networkingv1.NetworkPolicy{})
	if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, ingressOnly.Spec.PolicyTypes); diff != "" {
		t.Errorf("policyTypes without egress rules (-want +got):\n%s", diff)
	}
}

func TestIngressClassDefaults(t *testing.T) {
	ic := defaulted(t, &networkingv1.IngressClass{Spec: networkingv1.IngressClassSpec{
		Parameters: &networkingv1.IngressClassParametersReference{Kind: "Params", Name: "p"},
	}})
	if got := ic.Spec.Parameters.Scope; got == nil || *got != networkingv1.IngressClassParametersReferenceScopeCluster {
		t.Errorf("parameters scope = %v, want Cluster", got)
	}
}

func TestEndpointSliceDefaults(t *testing.T) {
	es := defaulted(t, &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{}}})
	if p := es.Ports[0]; p.Name == nil || *p.Name != "" || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP {
		t.Errorf("endpoint port %+v, want name \"\" and TCP", p)
	}
}
