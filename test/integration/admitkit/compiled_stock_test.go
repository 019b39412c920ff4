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

package admitkit

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// policyServer is upstream's kube-apiserver with nothing of admitkit in it:
// for TestCompiledIsThePlugins nothing of admitkit beside it either (unlike
// the package's stock host, no admitkit webhook is configured), so that
// what a pod gets there comes from kube-apiserver and the compiled policies
// alone; for TestCompiledLiveIsThePlugins, the webhook server in its
// compiled-policies mode beside it.
type policyServer struct {
	server *framework.Server
	client kubernetes.Interface
	// round numbers the policy sets applied, for the probe.
	round int
}

// compiledProbeNamespace holds only the probe pod; no compiled policy
// selects it, since every generated source is scoped to its case's
// namespace and the samples' own namespaces are others.
const compiledProbeNamespace = "compiled-probe"

// startPolicyServer starts the server and checks that it serves
// MutatingAdmissionPolicies in admissionregistration.k8s.io/v1 (GA and on by
// default since 1.36: no flag is given for it, as a cluster admin gives
// none); that the plugin runs is shown by the probe of every round.
func startPolicyServer(t *testing.T) *policyServer {
	t.Helper()
	start := time.Now()
	srv, err := framework.StartStock(framework.Config{})
	if err != nil {
		t.Fatalf("starting upstream's kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Cleanup(); err != nil {
			t.Errorf("stopping upstream's kube-apiserver: %v", err)
		}
	})
	t.Logf("upstream's kube-apiserver ready in %s", time.Since(start).Round(time.Millisecond))
	return newPolicyServer(t, srv)
}

// newPolicyServer is srv, checked as startPolicyServer checks it, with the
// probe's namespace: what else runs beside srv is the caller's to say.
func newPolicyServer(t *testing.T, srv *framework.Server) *policyServer {
	t.Helper()
	client := framework.KubeClient(t, srv.AdminConfig())
	resources, err := client.Discovery().ServerResourcesForGroupVersion(admissionregistrationv1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, r := range resources.APIResources {
		served = append(served, r.Name)
	}
	for _, want := range []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings", "validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
		if !slices.Contains(served, want) {
			t.Fatalf("admissionregistration.k8s.io/v1 does not serve %s (it serves %v)", want, served)
		}
	}
	framework.CreateNamespace(t, srv.AdminConfig(), compiledProbeNamespace, nil)
	return &policyServer{server: srv, client: client}
}

// apply creates the compiled policies and bindings, then the probe's, and
// waits until kube-apiserver enforces them all. It returns what deletes
// them again and waits until none is enforced, to be called even when
// apply fails half-way.
func (p *policyServer) apply(t *testing.T, r compiler.Result) (remove func()) {
	t.Helper()
	p.round++
	ctx := context.Background()
	api := p.client.AdmissionregistrationV1()
	opts, del := metav1.CreateOptions{}, metav1.DeleteOptions{}
	var created []func() error
	remove = func() {
		// In creation order: the probe's objects go last, so that once the
		// probe no longer shows, every earlier deletion reached the policy
		// informers too.
		for _, deleteIt := range created {
			if err := deleteIt(); err != nil {
				t.Errorf("deleting a policy of round %d: %v", p.round, err)
			}
		}
		p.waitForProbe(t, false)
	}
	start := time.Now()
	// The probe's objects are created after every compiled one, so each
	// is the last of its kind.
	for _, set := range []compiler.Result{r, probeResult(p.round)} {
		for _, o := range set.MutatingPolicies {
			_, err := api.MutatingAdmissionPolicies().Create(ctx, &o, opts)
			p.created(t, &created, "MutatingAdmissionPolicy", o.Name, err, func() error { return api.MutatingAdmissionPolicies().Delete(ctx, o.Name, del) })
		}
		for _, o := range set.ValidatingPolicies {
			_, err := api.ValidatingAdmissionPolicies().Create(ctx, &o, opts)
			p.created(t, &created, "ValidatingAdmissionPolicy", o.Name, err, func() error { return api.ValidatingAdmissionPolicies().Delete(ctx, o.Name, del) })
		}
		for _, o := range set.MutatingBindings {
			_, err := api.MutatingAdmissionPolicyBindings().Create(ctx, &o, opts)
			p.created(t, &created, "MutatingAdmissionPolicyBinding", o.Name, err, func() error { return api.MutatingAdmissionPolicyBindings().Delete(ctx, o.Name, del) })
		}
		for _, o := range set.ValidatingBindings {
			_, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, &o, opts)
			p.created(t, &created, "ValidatingAdmissionPolicyBinding", o.Name, err, func() error { return api.ValidatingAdmissionPolicyBindings().Delete(ctx, o.Name, del) })
		}
	}
	p.waitForProbe(t, true)
	t.Logf("round %d: %d MutatingAdmissionPolicies and %d ValidatingAdmissionPolicies enforced %s after their creation began",
		p.round, len(r.MutatingPolicies), len(r.ValidatingPolicies), time.Since(start).Round(time.Millisecond))
	return remove
}

// created records how to delete an object apply created, or fails the
// test when kube-apiserver refused it: the compiler must never make what
// the API refuses.
func (p *policyServer) created(t *testing.T, deletes *[]func() error, kind, name string, err error, deleteIt func() error) {
	t.Helper()
	if err != nil {
		t.Fatalf("kube-apiserver refused the compiled %s %s: %v", kind, name, err)
	}
	*deletes = append(*deletes, deleteIt)
}

// The probe: a MutatingAdmissionPolicy that writes the round's number into
// an annotation, and a ValidatingAdmissionPolicy that warns with it, of
// pods in the probe namespace. kube-apiserver's policy plugins load
// policies and bindings from one informer per kind, which delivers them in
// the order they were stored; the probe's are stored after the round's
// others, so a probe pod showing both proves every compiled policy and
// binding loaded. Deleted last, a probe pod showing neither proves every
// compiled policy or its binding gone.
const probeAnnotation = "admitkit.io/compiled-round"

// probeName names the probe's policies and bindings.
const probeName = "admitkit-compiled-probe"

func probeMatch() *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		},
	}}}
}

func probeBindingMatch() *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{corev1.LabelMetadataName: compiledProbeNamespace},
	}}
}

func probeMutatingPolicy(round int) admissionregistrationv1.MutatingAdmissionPolicy {
	return admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: probeName},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: probeMatch(),
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: fmt.Sprintf(`Object{metadata: Object.metadata{annotations: {%q: %q}}}`, probeAnnotation, strconv.Itoa(round)),
				},
			}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

func probeMutatingBinding() admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: probeName},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: probeName, MatchResources: probeBindingMatch()},
	}
}

func probeValidatingPolicy(round int) admissionregistrationv1.ValidatingAdmissionPolicy {
	return admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: probeName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: probeMatch(),
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			Validations:      []admissionregistrationv1.Validation{{Expression: "false", Message: probeWarning(round)}},
		},
	}
}

func probeValidatingBinding() admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: probeName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: probeName, MatchResources: probeBindingMatch(),
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}},
	}
}

// probeResult is the probe's policies and bindings for round.
func probeResult(round int) compiler.Result {
	return compiler.Result{
		MutatingPolicies:   []admissionregistrationv1.MutatingAdmissionPolicy{probeMutatingPolicy(round)},
		MutatingBindings:   []admissionregistrationv1.MutatingAdmissionPolicyBinding{probeMutatingBinding()},
		ValidatingPolicies: []admissionregistrationv1.ValidatingAdmissionPolicy{probeValidatingPolicy(round)},
		ValidatingBindings: []admissionregistrationv1.ValidatingAdmissionPolicyBinding{probeValidatingBinding()},
	}
}

func probeWarning(round int) string { return fmt.Sprintf("compiled round %d", round) }

// waitForProbe polls a dry-run probe pod until it shows this round's probe
// (loaded) or no probe at all (not loaded).
func (p *policyServer) waitForProbe(t *testing.T, loaded bool) {
	t.Helper()
	warnings := &warningLog{}
	cfg := rest.CopyConfig(p.server.AdminConfig())
	cfg.WarningHandler = warnings
	client := framework.KubeClient(t, cfg)
	round := strconv.Itoa(p.round)
	what := fmt.Sprintf("the policies of round %d to be enforced", p.round)
	if !loaded {
		what = fmt.Sprintf("the policies of round %d to be gone", p.round)
	}
	framework.Poll(t, what, func() bool {
		pod, err := client.CoreV1().Pods(compiledProbeNamespace).Create(context.Background(), framework.Pod("probe", nil, "c"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("the probe pod: %v", err)
		}
		got := warnings.take()
		annotation, annotated := pod.Annotations[probeAnnotation]
		warned := slices.ContainsFunc(got, func(w string) bool { return strings.HasSuffix(w, ": "+probeWarning(p.round)) })
		if loaded {
			return annotation == round && warned
		}
		return !annotated && len(got) == 0
	})
}

// warningLog keeps the warnings the server sends a client until taken.
type warningLog struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// take returns the warnings kept and forgets them.
func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	return out
}
