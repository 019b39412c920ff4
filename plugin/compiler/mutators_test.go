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

package compiler_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/compilertest"
	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/plugin/webhook/offline/defaults"
)

// request is one object admitted, as both sides see it: namespace is the
// request's namespace, nil for a cluster-scoped object.
type request struct {
	obj       runtime.Object
	gvk       schema.GroupVersionKind
	resource  string
	namespace *corev1.Namespace
	// update makes it an UPDATE that changes nothing, rather than a
	// CREATE.
	update bool
}

// operation is the request's, as admission names it.
func (rq request) operation() admission.Operation {
	if rq.update {
		return admission.Update
	}
	return admission.Create
}

func configMapRequest(ns *corev1.Namespace, labels map[string]string) request {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns.Name, Labels: labels}, Data: map[string]string{"k": "v"}}
	return request{obj: cm, gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap"), resource: "configmaps", namespace: ns}
}

func clusterRoleRequest(labels map[string]string) request {
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader", Labels: labels}}
	return request{obj: cr, gvk: rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), resource: "clusterroles", namespace: nil}
}

func namespaceRequest(ns *corev1.Namespace) request {
	return request{obj: ns.DeepCopy(), gvk: corev1.SchemeGroupVersion.WithKind("Namespace"), resource: "namespaces", namespace: nil}
}

// requestNamespace is the namespace of the request, "" for none.
func (rq request) requestNamespace() string {
	if rq.namespace == nil {
		return ""
	}
	return rq.namespace.Name
}

func podRequest(p *corev1.Pod, ns *corev1.Namespace) request {
	p = p.DeepCopy()
	p.Namespace = ns.Name
	return request{obj: p, gvk: corev1.SchemeGroupVersion.WithKind("Pod"), resource: "pods", namespace: ns}
}

func typedRequest(obj runtime.Object, ns *corev1.Namespace) request {
	if d, ok := obj.(*appsv1.Deployment); ok {
		d = d.DeepCopy()
		d.Namespace = ns.Name
		return request{obj: d, gvk: appsv1.SchemeGroupVersion.WithKind("Deployment"), resource: "deployments", namespace: ns}
	}
	return podRequest(obj.(*corev1.Pod), ns)
}

func metaAccessor(obj runtime.Object) (metav1.Object, error) {
	if o, ok := obj.(metav1.Object); ok {
		return o, nil
	}
	return nil, errors.New("no metadata")
}

// defaultingScheme defaults objects as kube-apiserver does (and as
// compilertest's Runner does).
var defaultingScheme = defaults.NewScheme()

// admitWithMutators runs the mutators on a CREATE of rq as the
// LocationMutator does: the candidates of the request's kind, matched
// against the request's target, until they converge.
func admitWithMutators(ms []*mutation.Mutator, rq request) (runtime.Object, error) {
	sys, err := mutation.NewSystem(ms)
	if err != nil {
		return nil, err
	}
	obj := rq.obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(rq.gvk)
	accessor, err := metaAccessor(obj)
	if err != nil {
		return nil, err
	}
	// kube-apiserver defaults the object it decodes, and again what a
	// webhook's patch made (as it does after every mutating policy).
	defaultingScheme.Default(obj)
	// As the plugin's target: no namespace for a Namespace.
	target := match.Target{
		GVK:          rq.gvk,
		Namespace:    rq.requestNamespace(),
		Name:         accessor.GetName(),
		GenerateName: accessor.GetGenerateName(),
		Labels:       labels.Set(accessor.GetLabels()),
		NamespaceLabels: func(name string) (labels.Labels, error) {
			if rq.namespace == nil || rq.namespace.Name != name {
				return nil, errors.New("no such namespace " + name)
			}
			return labels.Set(rq.namespace.Labels), nil
		},
	}
	_, err = mutation.Mutate(sys.Candidates(rq.gvk, string(rq.operation())), obj, &target, mutation.Options{})
	defaultingScheme.Default(obj)
	return obj, err
}

// compiledSubset is the mutators of ms the result compiled.
func compiledSubset(ms []*mutation.Mutator, r compiler.Result) []*mutation.Mutator {
	var out []*mutation.Mutator
	for _, m := range ms {
		if slices.Contains(r.Compiled, compiler.Source{Kind: m.ID().Kind, Name: m.ID().Name}) {
			out = append(out, m)
		}
	}
	return out
}

// compiledCase is a set of mutators and what they compiled into.
type compiledCase struct {
	ms     []*mutation.Mutator
	result compiler.Result
	runner *compilertest.Runner
}

// compileCase compiles ms and starts a Runner of what compiled, with the
// namespaces of the requests.
func compileCase(t testing.TB, ms []*mutation.Mutator) compiledCase {
	t.Helper()
	c := compiledCase{ms: ms, result: compiler.Compile(compiler.Sources{Mutators: ms})}
	r, err := compilertest.New(c.result, namespaces...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	c.runner = r
	return c
}

// agree admits rq through the policy compiled from c's mutators and
// through the plugin running those that compiled, and reports a
// difference: both must store the same object, or both refuse it.
func agree(t *testing.T, c compiledCase, rq request) (string, bool) {
	t.Helper()
	want, werr := admitWithMutators(compiledSubset(c.ms, c.result), rq)
	obj := rq.obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(rq.gvk)
	got, _, _, gerr := c.runner.Admit(context.Background(), obj, rq.operation(), rq.requestNamespace())
	switch {
	case werr != nil || gerr != nil:
		if (werr == nil) != (gerr == nil) {
			return "plugin: " + errString(werr) + "\npolicy: " + errString(gerr), false
		}
		return "", true
	case !equality.Semantic.DeepEqual(stripTypeMeta(want), stripTypeMeta(got)):
		return "plugin:\n" + toYAML(want) + "policy:\n" + toYAML(got), false
	}
	return "", true
}

// refusalKind is a refusal's message without what names one mutator or
// value, to count refusals by reason.
func refusalKind(msg string) string {
	for _, cut := range []string{" which runs", ": Assign", ": Modify", ": AssignImage", "reads back", "does not fit", "is the empty value", "has no field", "is not a list"} {
		if i := strings.Index(msg, cut); i >= 0 {
			return msg[:min(i+len(cut), 120)]
		}
	}
	return msg[:min(len(msg), 120)]
}

func errString(err error) string {
	if err == nil {
		return "admitted"
	}
	return err.Error()
}

func stripTypeMeta(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj
}

func toYAML(v any) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// testdataMutators decodes every mutator of a LocationMutator testdata
// file, as the plugin's static source does.
func testdataMutators(t testing.TB, name string) []*mutation.Mutator {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "pkg", "admission", "locationmutator", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var ms []*mutation.Mutator
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(js, &list); err != nil || list.Kind == "" {
			continue // comments only
		}
		items := []json.RawMessage{js}
		if list.Kind == "List" {
			items = list.Items
		}
		for _, item := range items {
			m, errs := mutation.DecodeJSON(item)
			if len(errs) > 0 {
				t.Fatalf("%s: %v", name, errs.ToAggregate())
			}
			ms = append(ms, m)
		}
	}
	return ms
}

// namespaces are where the requests are made: labelled or not, system or
// not, so that namespace matches go both ways.
var namespaces = []*corev1.Namespace{
	{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
	{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod", "team": "a"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", Labels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}}},
}

// fuzzPods are pods from fuzzobjectstest's generator, the same for every
// run.
func fuzzPods(n int) []*corev1.Pod {
	r := rand.New(rand.NewSource(7))
	out := make([]*corev1.Pod, n)
	for i := range out {
		b := make([]byte, 64)
		r.Read(b)
		out[i] = fuzzobjectstest.TypedPod(fuzzobjectstest.NewSource(b))
	}
	return out
}

func TestTestdataMutatorsAgree(t *testing.T) {
	objects := fuzzPods(12)
	for _, file := range []string{"ten-pod-mutators.yaml", "mutators.yaml", "gatekeeper-shapes.yaml", "pull-always.yaml"} {
		t.Run(file, func(t *testing.T) {
			ms := testdataMutators(t, file)
			c := compileCase(t, ms)
			r := c.result
			for _, ref := range r.Refused {
				t.Logf("refused %s/%s: %v", ref.Source.Kind, ref.Source.Name, ref.Errs.ToAggregate())
			}
			alone := 0
			var cases []compiledCase
			for _, m := range ms {
				one := compileCase(t, []*mutation.Mutator{m})
				if len(one.result.Compiled) == 1 {
					alone++
					cases = append(cases, one)
				} else {
					t.Logf("%s alone: refused: %v", m.ID(), one.result.Refused[0].Errs.ToAggregate())
				}
			}
			t.Logf("%s: %d of %d mutators compile together, %d each alone", file, len(r.Compiled), len(ms), alone)
			var rqs []request
			for _, ns := range namespaces {
				for _, obj := range objects {
					rqs = append(rqs, podRequest(obj, ns))
				}
				rqs = append(rqs, configMapRequest(ns, nil), configMapRequest(ns, map[string]string{"team": "a", "owner": "x"}), namespaceRequest(ns))
			}
			rqs = append(rqs, clusterRoleRequest(nil), clusterRoleRequest(map[string]string{"team": "a"}))
			for _, rq := range rqs {
				for _, c := range append(cases, c) {
					if diff, ok := agree(t, c, rq); !ok {
						t.Fatalf("%v: %s %s in %s: %s", c.result.Compiled, rq.gvk.Kind, rq.obj.(metav1.Object).GetName(), rq.requestNamespace(), diff)
					}
				}
			}
		})
	}
}

// TestGeneratedMutatorsAgree runs sets of fuzzobjectstest's mutators on its
// typed pods and deployments, through the plugin and the compiled policy.
func TestGeneratedMutatorsAgree(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	const sets = 150
	var compiledSets, fullSets, mutators, compiled, agreed, cases int
	reasons := map[string]int{}
	for set := 0; set < sets; set++ {
		b := make([]byte, 96)
		r.Read(b)
		s := fuzzobjectstest.NewSource(b)
		obj := fuzzobjectstest.TypedObject(s)
		_, deploy := obj.(*appsv1.Deployment)
		g := &fuzzobjectstest.Mutators{Source: s, Deployment: deploy}
		var ms []*mutation.Mutator
		for i := s.Next(6); i >= 0; i-- {
			data, err := json.Marshal(g.Mutator(i))
			if err != nil {
				t.Fatal(err)
			}
			if m, errs := mutation.DecodeJSON(data); len(errs) == 0 {
				ms = append(ms, m)
			}
		}
		c := compileCase(t, ms)
		res := c.result
		for _, ref := range res.Refused {
			for _, e := range ref.Errs {
				reasons[refusalKind(e.Error())]++
			}
		}
		mutators += len(ms)
		compiled += len(res.Compiled)
		if len(res.Compiled) == 0 {
			continue
		}
		compiledSets++
		if len(res.Compiled) == len(ms) {
			fullSets++
		}
		for _, ns := range namespaces[:2] {
			cases++
			diff, ok := agree(t, c, typedRequest(obj, ns))
			if !ok {
				var b strings.Builder
				for _, m := range compiledSubset(ms, res) {
					b.WriteString("\n  " + m.ID().String() + " " + m.Location().String() + ": " + m.Effect())
				}
				t.Errorf("set %d in %s:%s\n%s", set, ns.Name, b.String(), diff)
				continue
			}
			agreed++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(reasons)) {
		t.Logf("refused %4d: %s", reasons[k], k)
	}
	t.Logf("%d sets, %d with a mutator compiled (%d wholly); %d of %d mutators compiled; %d of %d cases agree", sets, compiledSets, fullSets, compiled, mutators, agreed, cases)
}

// TestAssignImageAgrees checks the image parts the policy reads and writes
// against the plugin's, on references that put a `:` or `@` in every place
// it may go.
func TestAssignImageAgrees(t *testing.T) {
	images := []string{"", "nginx", "nginx:1.27", "library/nginx", "docker.io/nginx", "localhost/x", "localhost:5000/x/y:1",
		"r.io:443/a/b@sha256:0123456789abcdef0123456789abcdef", "a:b/c", "a.b/c:d@e", "/x", "x/", "host.io/", "ü.io/p:t", "a@b:c"}
	parts := [][3]string{{"r.io", "", ""}, {"", "lib/app", ""}, {"", "", ":v2"}, {"localhost:5000", "x", "@sha256:0123456789abcdef0123456789abcdef"}, {"", "a/b", ":1"}}
	for _, p := range parts {
		doc := fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1alpha1
kind: AssignImage
metadata: {name: img}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.containers[name: *].image"
  parameters: {assignDomain: %q, assignPath: %q, assignTag: %q}
`, p[0], p[1], p[2])
		m, err := mutation.Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		c := compileCase(t, []*mutation.Mutator{m})
		if len(c.result.Compiled) != 1 {
			t.Fatalf("%v: refused: %v", p, c.result.Refused)
		}
		for _, img := range images {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: img}}}}
			if diff, ok := agree(t, c, podRequest(pod, namespaces[0])); !ok {
				t.Errorf("%v on %q: %s", p, img, diff)
			}
		}
	}
}

// TestUnenforcedMutatorsReport checks the policies of mutators in Warn and
// Audit mode: they change nothing, and their validation fails, with the
// plugin's warning, exactly where enforcing the mutator would change the
// object.
func TestUnenforcedMutatorsReport(t *testing.T) {
	ms := testdataMutators(t, "ten-pod-mutators.yaml")
	for _, mode := range []mutation.Mode{mutation.ModeWarn, mutation.ModeAudit} {
		doc := fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata:
  name: trial-pull
  annotations: {%q: %s}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {namespaces: [prod]}
  location: "spec.containers[name: *].imagePullPolicy"
  parameters: {assign: {value: Never}}
`, mutation.ModeAnnotation, mode)
		trial, err := mutation.Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		c := compileCase(t, append(slices.Clone(ms[1:]), trial)) // always-pull would fight it
		r := c.result
		if len(r.ValidatingPolicies) != 1 || len(r.ValidatingBindings) != 1 || len(r.Compiled) != len(ms) {
			t.Fatalf("%s: compiled %v, refused %v, %d validating policies", mode, r.Compiled, r.Refused, len(r.ValidatingPolicies))
		}
		wantActions := map[mutation.Mode][]admissionregistrationv1.ValidationAction{
			mutation.ModeWarn:  {admissionregistrationv1.Warn, admissionregistrationv1.Audit},
			mutation.ModeAudit: {admissionregistrationv1.Audit},
		}[mode]
		if got := r.ValidatingBindings[0].Spec.ValidationActions; !slices.Equal(got, wantActions) {
			t.Errorf("%s: actions %v, want %v", mode, got, wantActions)
		}
		v := r.ValidatingPolicies[0].Spec.Validations[0]
		wantMsg := fmt.Sprintf(`Assign "trial-pull" is in %s mode; enforced, it would %s`, mode, trial.Effect())
		if v.Message != wantMsg {
			t.Errorf("message %q, want %q", v.Message, wantMsg)
		}
		for _, tc := range []struct {
			ns     *corev1.Namespace
			policy corev1.PullPolicy
			report bool
		}{
			{namespaces[1], corev1.PullAlways, true},
			{namespaces[1], corev1.PullNever, false},
			{namespaces[0], corev1.PullAlways, false},
		} {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "x", ImagePullPolicy: tc.policy}}}}
			got, warnings, audit, err := c.runner.Admit(context.Background(), pod, admission.Create, tc.ns.Name)
			if err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			if p := got.(*corev1.Pod).Spec.Containers[0].ImagePullPolicy; p != tc.policy && p != corev1.PullAlways {
				t.Errorf("%s: the trial mutator changed the pull policy to %s", mode, p)
			}
			warned := slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, wantMsg) })
			// Audit actions record the failures as JSON.
			var failures []struct{ Message string }
			if v, ok := audit["validation.policy.admission.k8s.io/validation_failure"]; ok {
				if err := json.Unmarshal([]byte(v), &failures); err != nil {
					t.Fatal(err)
				}
			}
			audited := slices.ContainsFunc(failures, func(f struct{ Message string }) bool { return f.Message == wantMsg })
			if warned != (tc.report && mode == mutation.ModeWarn) || audited != tc.report {
				t.Errorf("%s: pod with %s in %s: warned %v, audited %v (warnings %q, audit %q)", mode, tc.policy, tc.ns.Name, warned, audited, warnings, audit)
			}
		}
	}
}

// edgeMutators are one mutator each for what the testdata and the
// generator seldom meet: escaped keys, whole elements holding lists,
// pruning, pathTests at every depth and every criterion of match.
var edgeMutators = []string{
	`kind: AssignMetadata
metadata: {name: escaped}
spec:
  location: 'metadata.annotations."example.com/a~b"'
  parameters: {assign: {value: "x"}}`,
	`kind: Assign
metadata: {name: whole-element}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.containers[name: sidecar]"
  parameters:
    assign:
      value: {name: sidecar, image: "r.io/s:1", args: ["-a", "-b"], env: [{name: A, value: "1"}], ports: [{containerPort: 80, protocol: TCP}]}`,
	`kind: ModifySet
metadata: {name: prune-args}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.containers[name: *].args"
  parameters: {operation: prune, values: {fromList: ["--v=2", "-x", "--v=2"]}}`,
	`kind: ModifySet
metadata: {name: merge-args}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {namespaceSelector: {matchExpressions: [{key: env, operator: In, values: [prod]}]}}
  location: "spec.initContainers[name: init].args"
  parameters: {values: {fromList: ["-y", "-y", "-z"]}}`,
	`kind: Assign
metadata: {name: must-exist}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {scope: Namespaced, name: "web*", labelSelector: {matchExpressions: [{key: app, operator: NotIn, values: [a2]}]}}
  location: "spec.containers[name: app].securityContext.runAsUser"
  parameters:
    pathTests: [{subPath: "spec.containers[name: app]", condition: MustExist}, {subPath: "spec.containers[name: app].securityContext.runAsUser", condition: MustNotExist}]
    assign: {value: 1000}`,
	`kind: Assign
metadata: {name: must-not-exist}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {namespaces: ["pro*"], excludedNamespaces: ["*-system"], kinds: [{apiGroups: [""], kinds: [Pod]}]}
  location: "spec.containers[name: proxy].ports[containerPort: 9901].name"
  parameters:
    pathTests: [{subPath: "spec.containers[name: proxy].ports", condition: MustNotExist}]
    assign: {value: admin}`,
	`kind: Assign
metadata: {name: from-name}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {labelSelector: {matchLabels: {app: a0}}}
  location: "spec.containers[name: *].env[name: POD].value"
  parameters: {assign: {fromMetadata: {field: name}}}`,
	`kind: Assign
metadata: {name: on-create}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod], operations: [CREATE]}]
  location: "spec.priorityClassName"
  parameters: {assign: {value: "low"}}`,
	`kind: AssignImage
metadata: {name: registry}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {name: "*eb*"}
  location: "spec.initContainers[name: *].image"
  parameters: {assignDomain: "mirror.io"}`,
}

func TestEdgeMutatorsAgree(t *testing.T) {
	var ms []*mutation.Mutator
	for _, doc := range edgeMutators {
		version := "v1"
		if strings.HasPrefix(doc, "kind: AssignImage") {
			version = "v1alpha1"
		}
		m, err := mutation.Decode([]byte("apiVersion: mutations.gatekeeper.sh/" + version + "\n" + doc))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	// Together, nearly all would need a second pass (the from-name glob
	// reads containers that three later ones create, which prune-args
	// then changes...) and are refused; each alone compiles.
	all := compileCase(t, ms)
	t.Logf("%d of %d compile together", len(all.result.Compiled), len(ms))
	sets := []compiledCase{all}
	for _, m := range ms {
		c := compileCase(t, []*mutation.Mutator{m})
		if len(c.result.Refused) > 0 {
			t.Fatalf("refused: %v %v", c.result.Refused[0].Source, c.result.Refused[0].Errs.ToAggregate())
		}
		sets = append(sets, c)
	}
	for _, c := range sets {
		for _, obj := range fuzzPods(20) {
			for _, ns := range namespaces {
				rq := podRequest(obj, ns)
				for _, update := range []bool{false, true} {
					rq.update = update
					if diff, ok := agree(t, c, rq); !ok {
						t.Fatalf("%v, %s in %s: %s", c.result.Compiled, rq.operation(), ns.Name, diff)
					}
				}
			}
		}

	}
}

// TestRefusalsNameTheField checks that each kind of refusal names the
// mutator and the field at fault.
func TestRefusalsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name, doc, field string
	}{{
		name: "external data",
		doc: `kind: Assign
metadata: {name: m}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.containers[name: *].image"
  parameters: {assign: {externalData: {provider: digests}}}`,
		field: "spec.parameters.assign.externalData",
	}, {
		name: "a custom resource, whose resource and schema are not known",
		doc: `kind: Assign
metadata: {name: m}
spec:
  applyTo: [{groups: [example.com], versions: [v1], kinds: [Widget]}]
  location: "spec.size"
  parameters: {assign: {value: 3}}`,
		field: "spec.applyTo",
	}, {
		name: "an AssignMetadata of an unknown kind",
		doc: `kind: AssignMetadata
metadata: {name: m}
spec:
  match: {kinds: [{apiGroups: ["*"], kinds: [Widget]}]}
  location: metadata.labels.x
  parameters: {assign: {value: "y"}}`,
		field: "spec.match.kinds[0].kinds[0]",
	}, {
		name: "a value the field cannot hold",
		doc: `kind: Assign
metadata: {name: m}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.terminationGracePeriodSeconds"
  parameters: {assign: {value: "30"}}`,
		field: "spec.parameters.assign.value",
	}, {
		name: "a location through a value that is not an object",
		doc: `kind: Assign
metadata: {name: m}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.hostname.x"
  parameters: {assign: {value: "y"}}`,
		field: "spec.location",
	}} {
		m, err := mutation.Decode([]byte("apiVersion: mutations.gatekeeper.sh/v1\n" + tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := compiler.Compile(compiler.Sources{Mutators: []*mutation.Mutator{m}})
		if len(r.Refused) != 1 || len(r.Compiled) != 0 {
			t.Fatalf("%s: compiled %v", tc.name, r.Compiled)
		}
		ref := r.Refused[0]
		if ref.Source != (compiler.Source{Kind: m.ID().Kind, Name: "m"}) || ref.Errs[0].Field != tc.field {
			t.Errorf("%s: refused %v at %s, want %s", tc.name, ref.Source, ref.Errs[0].Field, tc.field)
		}
	}
}

// FuzzCompileMutators compiles fuzzobjectstest's mutator sets (the
// generator aims them at real and wrong fields of pods and deployments):
// Compile must answer every set, compiled or refused by field, without a
// panic.
func FuzzCompileMutators(f *testing.F) {
	r := rand.New(rand.NewSource(3))
	for range 16 {
		b := make([]byte, 96)
		r.Read(b)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := fuzzobjectstest.NewSource(data)
		g := &fuzzobjectstest.Mutators{Source: s, Deployment: s.Next(2) == 0}
		var ms []*mutation.Mutator
		for i := s.Next(8); i >= 0; i-- {
			manifest, err := json.Marshal(g.Mutator(i))
			if err != nil {
				t.Fatal(err)
			}
			if m, errs := mutation.DecodeJSON(manifest); len(errs) == 0 {
				ms = append(ms, m)
			}
		}
		res := compiler.Compile(compiler.Sources{Mutators: ms})
		if len(res.Compiled)+len(res.Refused) != len(ms) {
			t.Fatalf("%d mutators, %d compiled and %d refused", len(ms), len(res.Compiled), len(res.Refused))
		}
		for _, ref := range res.Refused {
			if len(ref.Errs) == 0 || ref.Errs[0].Field == "" {
				t.Fatalf("%v refused without a field: %v", ref.Source, ref.Errs)
			}
		}
	})
}
