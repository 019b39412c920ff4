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

package manifests_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	admissioncel "k8s.io/apiserver/pkg/admission/plugin/cel"
	webhookaccessor "k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

// TestPodRouting sends requests through the mutating webhooks as
// kube-apiserver matches them (rules, namespace selector, matchConditions
// compiled by kube-apiserver's own CEL compiler) and requires each request
// to reach PodPreset and LocationMutator where their plugins act, each at
// most once: a pod create through the pods webhook's chain, what that
// webhook does not take through the LocationMutator webhook, and the pod
// creates of namespaces Gatekeeper's ignore label opts out through the
// PodPreset webhook.
func TestPodRouting(t *testing.T) {
	in := read(t)
	compiler := admissioncel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	plain, ignored := map[string]string{}, map[string]string{"admission.gatekeeper.sh/ignore": "yes"}
	mirror := map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	excluded := map[string]string{"podpreset.admission.kubernetes.io/exclude": "true"}
	notExcluded := map[string]string{"podpreset.admission.kubernetes.io/exclude": "false"}
	const both, presets, mutators = "PodPreset/LocationMutator", "PodPreset", "LocationMutator"
	for _, tc := range []struct {
		name        string
		resource    schema.GroupVersionResource
		subresource string
		operation   admission.Operation
		namespace   string
		nsLabels    map[string]string
		annotations map[string]string
		want        string // the plugins run, in order, "/" between
	}{
		{"pod create", pods, "", admission.Create, "shop", plain, nil, both},
		{"pod create, exclude false", pods, "", admission.Create, "shop", plain, notExcluded, both},
		{"mirror pod create", pods, "", admission.Create, "shop", plain, mirror, mutators},
		{"excluded pod create", pods, "", admission.Create, "shop", plain, excluded, mutators},
		{"pod update", pods, "", admission.Update, "shop", plain, nil, mutators},
		{"pod status update", pods, "status", admission.Update, "shop", plain, nil, ""},
		{"pod binding", pods, "binding", admission.Create, "shop", plain, nil, ""},
		{"configmap create", configMaps, "", admission.Create, "shop", plain, nil, mutators},
		{"pod create, ignored namespace", pods, "", admission.Create, "quiet", ignored, nil, presets},
		{"excluded pod create, ignored namespace", pods, "", admission.Create, "quiet", ignored, excluded, ""},
		{"configmap create, ignored namespace", configMaps, "", admission.Create, "quiet", ignored, nil, ""},
		// kube-node-lease is left out of the LocationMutator webhook for
		// Leases; a pod created there gets both, as in-process.
		{"pod create, kube-node-lease", pods, "", admission.Create, "kube-node-lease", plain, nil, both},
		{"configmap create, kube-node-lease", configMaps, "", admission.Create, "kube-node-lease", plain, nil, ""},
		{"pod create, kube-system", pods, "", admission.Create, "kube-system", plain, nil, ""},
		{"pod create, admitkit-system", pods, "", admission.Create, namespace, plain, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion("v1")
			obj.SetKind("Pod")
			obj.SetName("p")
			obj.SetNamespace(tc.namespace)
			obj.SetAnnotations(tc.annotations)
			var old runtime.Object
			if tc.operation == admission.Update {
				old = obj.DeepCopy()
			}
			kind := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
			attrs := admission.NewAttributesRecord(obj, old, kind, tc.namespace, "p", tc.resource, tc.subresource, tc.operation, nil, false, &user.DefaultInfo{Name: "alice"})
			nsLabels := map[string]string{corev1.LabelMetadataName: tc.namespace}
			for k, v := range tc.nsLabels {
				nsLabels[k] = v
			}
			var ran []string
			for _, w := range in.mutating.Webhooks {
				if !calls(t, compiler, w, attrs, nsLabels) {
					continue
				}
				path, _ := strings.CutPrefix(*w.ClientConfig.Service.Path, "/mutate/")
				for _, lower := range strings.Split(path, "/") {
					switch lower {
					case "podpreset":
						ran = append(ran, "PodPreset")
					case "locationmutator":
						ran = append(ran, "LocationMutator")
					}
				}
			}
			if got := strings.Join(ran, "/"); got != tc.want {
				t.Errorf("ran %q, want %q", got, tc.want)
			}
			for i, p := range ran {
				if slices.Contains(ran[i+1:], p) {
					t.Errorf("%s runs twice: %v", p, ran)
				}
			}
		})
	}
}

// calls reports whether kube-apiserver calls the webhook w on attrs, in a
// namespace labelled nsLabels. A matchCondition that fails to evaluate
// fails the test, whatever the webhook's failure policy, rather than
// quietly count as not matching.
func calls(t *testing.T, compiler admissioncel.ConditionCompiler, w admissionregistrationv1.MutatingWebhook, attrs admission.Attributes, nsLabels map[string]string) bool {
	t.Helper()
	matched := false
	for _, r := range w.Rules {
		if (&rules.Matcher{Rule: r, Attr: attrs}).Matches() {
			matched = true
			break
		}
	}
	if !matched {
		return false
	}
	selector, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
	if err != nil {
		t.Fatalf("%s: namespaceSelector: %v", w.Name, err)
	}
	if !selector.Matches(labels.Set(nsLabels)) {
		return false
	}
	if len(w.MatchConditions) == 0 {
		return true
	}
	strict := w.DeepCopy()
	fail := admissionregistrationv1.Fail
	strict.FailurePolicy = &fail
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: attrs.GetKind()}
	versioned.VersionedObject.Set(attrs.GetObject())
	if old := attrs.GetOldObject(); old != nil {
		versioned.VersionedOldObject.Set(old)
	}
	result := webhookaccessor.NewMutatingWebhookAccessor(w.Name, "admitkit-mutating", strict).GetCompiledMatcher(compiler).Match(context.Background(), versioned, nil, nil)
	if result.Error != nil {
		t.Fatalf("%s: matchConditions: %v", w.Name, result.Error)
	}
	return result.Matches
}

// TestNodeRestrictionRouting matches requests against the NodeRestriction
// webhook as kube-apiserver does, once an administrator has listed an
// account in its first matchCondition: a credential of that account that
// names its node reaches the webhook for the kinds NodeRestriction holds
// to a node and for nothing else, one that names no node for everything
// (in-process, NodeRestriction refuses its every write), and no other
// user's request reaches it.
func TestNodeRestrictionRouting(t *testing.T) {
	in := read(t)
	compiler := admissioncel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	const account = "system:serviceaccount:node-agents:agent"
	var webhook *admissionregistrationv1.MutatingWebhook
	for _, w := range in.validating.Webhooks {
		if w.Name != "noderestriction.admission.admitkit.io" {
			continue
		}
		// The same fields, as calls takes them; matching does not depend on
		// the phase.
		webhook = &admissionregistrationv1.MutatingWebhook{
			Name: w.Name, ClientConfig: w.ClientConfig, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
			MatchPolicy: w.MatchPolicy, NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector,
			SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
			MatchConditions: slices.Clone(w.MatchConditions),
		}
		webhook.MatchConditions[0].Expression = "request.userInfo.username in ['" + account + "']"
	}
	if webhook == nil {
		t.Fatal("no NodeRestriction webhook")
	}
	bound := &user.DefaultInfo{Name: account, Extra: map[string][]string{"authentication.kubernetes.io/node-name": {"node-1"}}}
	unbound := &user.DefaultInfo{Name: account}
	other := &user.DefaultInfo{Name: "system:serviceaccount:node-agents:other", Extra: bound.Extra}
	core := func(r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Version: "v1", Resource: r}
	}
	gvr := func(g, r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: g, Version: "v1", Resource: r}
	}
	for _, tc := range []struct {
		name        string
		user        user.Info
		resource    schema.GroupVersionResource
		subresource string
		operation   admission.Operation
		namespace   string
		want        bool
	}{
		{"its node", bound, core("nodes"), "", admission.Update, "", true},
		{"its node's status", bound, core("nodes"), "status", admission.Update, "", true},
		{"its node's kubelet", bound, core("nodes"), "proxy", admission.Connect, "", true},
		{"a pod", bound, core("pods"), "", admission.Delete, "shop", true},
		{"exec into a pod", bound, core("pods"), "exec", admission.Connect, "shop", true},
		{"an eviction", bound, core("pods"), "eviction", admission.Create, "shop", true},
		{"a resource slice", bound, gvr("resource.k8s.io", "resourceslices"), "", admission.Create, "", true},
		{"a claim's status", bound, gvr("resource.k8s.io", "resourceclaims"), "status", admission.Update, "shop", true},
		{"a claim", bound, gvr("resource.k8s.io", "resourceclaims"), "", admission.Update, "shop", false},
		{"a node lease", bound, gvr("coordination.k8s.io", "leases"), "", admission.Update, "kube-node-lease", true},
		{"a csinode", bound, gvr("storage.k8s.io", "csinodes"), "", admission.Update, "", true},
		{"a configmap", bound, core("configmaps"), "", admission.Create, "shop", false},
		{"an event", bound, gvr("events.k8s.io", "events"), "", admission.Create, "shop", false},
		{"a configmap, no node", unbound, core("configmaps"), "", admission.Create, "shop", true},
		{"a secret, no node", unbound, core("secrets"), "", admission.Update, "shop", true},
		{"a cluster role, no node", unbound, gvr("rbac.authorization.k8s.io", "clusterroles"), "", admission.Create, "", true},
		{"its node, no node", unbound, core("nodes"), "", admission.Update, "", true},
		// The namespaces every webhook leaves out: kube-system's objects are
		// RBAC's alone on this host, whatever the credential.
		{"a configmap in kube-system, no node", unbound, core("configmaps"), "", admission.Create, "kube-system", false},
		{"another account's node", other, core("nodes"), "", admission.Update, "", false},
		{"another account, no node", &user.DefaultInfo{Name: other.Name}, core("configmaps"), "", admission.Create, "shop", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion("v1")
			obj.SetKind("Object")
			obj.SetName("o")
			obj.SetNamespace(tc.namespace)
			kind := schema.GroupVersionKind{Group: tc.resource.Group, Version: "v1", Kind: "Object"}
			attrs := admission.NewAttributesRecord(obj, nil, kind, tc.namespace, "o", tc.resource, tc.subresource, tc.operation, nil, false, tc.user)
			nsLabels := map[string]string{corev1.LabelMetadataName: tc.namespace}
			if got := calls(t, compiler, *webhook, attrs, nsLabels); got != tc.want {
				t.Errorf("sent to the webhook: %v, want %v", got, tc.want)
			}
		})
	}
}
