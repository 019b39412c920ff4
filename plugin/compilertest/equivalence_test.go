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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/openapi/openapitest"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/compilertest"
)

// New assembles the MutatingAdmissionPolicy plugin from apiserver's parts
// with its own compile function and client-go's schemas; kube-apiserver
// runs mutating.NewPlugin, which reads the schemas from OpenAPI discovery.
// Both admit the same pods to the same result. (client-go's embedded
// OpenAPI files are of an older release: the pods use no newer field.)
func TestSameAsUpstreamPlugin(t *testing.T) {
	reader := mutatingPolicy("reader", applyConfiguration(
		`Object{metadata: Object.metadata{annotations: {"saw-writer": has(object.metadata.annotations) && "writer" in object.metadata.annotations ? "yes" : "no"}}}`))
	reader.Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
	reader.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "labelled", Expression: `has(object.metadata.labels) && "app" in object.metadata.labels`}}
	writer := mutatingPolicy("writer", applyConfiguration(`Object{metadata: Object.metadata{annotations: {"writer": variables.ns}}}`))
	writer.Spec.Variables = []admissionregistrationv1.Variable{{Name: "ns", Expression: `namespaceObject.metadata.name`}}
	counter := mutatingPolicy("counter", applyConfiguration(counter))
	counter.Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
	failing := mutatingPolicy("failing", applyConfiguration(`Object{metadata: Object.metadata{annotations: {"node": object.spec.nodeName}}}`))
	failing.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"fail": "yes"}}
	// ApplyConfiguration refuses to set an atomic list (args): the
	// schemas, not the expression, say which lists are atomic.
	atomic := mutatingPolicy("atomic", applyConfiguration(
		`Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, args: ["--verbose"]})}}`))
	atomic.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"atomic": "yes"}}
	selected := mutatingBinding("always-pull")
	selected.Spec.MatchResources = &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pull": "always"}},
	}
	result := compiler.Result{
		MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{
			mutatingPolicy("always-pull", applyConfiguration(alwaysPull)),
			mutatingPolicy("region", jsonPatch(appendEnv)),
			reader, writer, counter, failing, atomic,
		},
		MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{
			selected, mutatingBinding("region"), mutatingBinding("reader"), mutatingBinding("writer"), mutatingBinding("counter"), mutatingBinding("failing"), mutatingBinding("atomic"),
		},
	}
	namespaces := []*corev1.Namespace{namespace("selected", map[string]string{"pull": "always"}), namespace("other", nil)}

	ours := newRunner(t, result, namespaces...)
	upstream, err := compilertest.NewUpstream(result, openapitest.NewEmbeddedFileClient(), namespaces...)
	if err != nil {
		t.Fatalf("NewUpstream: %v", err)
	}
	t.Cleanup(upstream.Close)
	// Upstream's plugin fetches the schema index in the background after
	// it starts, and answers 503 until then, as kube-apiserver does at start.
	waitForSchemas(t, upstream)

	for _, ns := range []string{"selected", "other"} {
		for _, labels := range []map[string]string{nil, {"app": "web"}, {"app": "web", "fail": "yes"}, {"atomic": "yes"}} {
			in := pod(labels)
			in.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
			want, _, _, wantErr := upstream.Admit(context.Background(), in, admission.Create, ns)
			got, _, _, gotErr := ours.Admit(context.Background(), in, admission.Create, ns)
			name := fmt.Sprintf("namespace %s, labels %v", ns, labels)
			if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
				t.Errorf("%s: error %v, upstream's plugin %v", name, gotErr, wantErr)
				continue
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: pod (-upstream +ours):\n%s", name, diff)
			}
			if wantErr == nil && got.(*corev1.Pod).Annotations["count"] == "" {
				t.Errorf("%s: the counter policy did not run", name)
			}
		}
	}
}

func waitForSchemas(t *testing.T, r *compilertest.Runner) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, _, err := r.Admit(context.Background(), pod(nil), admission.Create, "selected")
		if !apierrors.IsServiceUnavailable(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream's plugin found no schema for pods: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
