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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction"
	"github.com/admitkit/admitkit/plugin/webhook/offline"
	"github.com/admitkit/admitkit/plugin/webhook/offline/defaults"
	settingsadmission "github.com/admitkit/admitkit/registry/settings/admission"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// TestCompiledIsThePlugins is the proof that the policies package
// plugin/compiler makes do what the plugins do, on upstream's
// kube-apiserver with no admitkit code in or beside it: for random
// namespaces, presets, mutators and pods (package fuzzobjectstest's
// generators, as TestOfflineIsTheServer draws them) and for every mutator
// and preset sample of the repository (the LocationMutator's testdata and
// the README's hack/examples), each pod is created once through the
// compiled policies and once through the plugins, and the server must
// store the same pod, or refuse both with the same status.
//
// The plugins' side is the offline host (package plugin/webhook/offline,
// proven equal to the server by TestOfflineIsTheServer): the pod the
// plugins admit is then created, with server-side dry run, on the same
// upstream server while no policy is applied, so that both sides go
// through the same kube-apiserver's own plugins, defaults, validation and
// pod strategy, and differ only in the plugins against the policies.
//
// A case is one cluster's objects (a namespace of its own, the presets and
// mutators scoped to it), compiled alone with compiler.Compile as a user
// compiles all of theirs. What the compiler refuses leaves both sides, so
// that each holds exactly what compiled; a case counts as compiled when
// nothing of it was refused, and every case is compared. A round applies
// several cases' policies at once, renamed apart, to share the waits for
// kube-apiserver's informers. ADMITKIT_COMPILED_SEED sets the seed (1
// unless set, so that every run compares the same cases) and
// ADMITKIT_COMPILED_CASES the number of generated cases.
func TestCompiledIsThePlugins(t *testing.T) {
	seed := envNumber(t, "ADMITKIT_COMPILED_SEED", 1)
	cases := int(envNumber(t, "ADMITKIT_COMPILED_CASES", 48))
	t.Logf("seed %d (ADMITKIT_COMPILED_SEED=%d reruns these cases), %d generated cases", seed, seed, cases)
	start := time.Now()
	stock := startPolicyServer(t)
	var tally compiledTally
	for first := 0; first < cases; first += casesPerRound {
		var round []compiledCase
		for i := first; i < min(first+casesPerRound, cases); i++ {
			round = append(round, generatedCase(seed, i))
		}
		t.Run(fmt.Sprintf("generated-%d-%d", first, first+len(round)-1), func(t *testing.T) {
			runRound(t, stock, round, &tally.generated)
		})
	}
	for _, s := range compiledSamples {
		t.Run("sample/"+s.name, func(t *testing.T) {
			runRound(t, stock, []compiledCase{sampleCase(t, s, seed)}, &tally.samples)
		})
	}
	t.Logf("generated: %s", tally.generated)
	t.Logf("samples: %s", tally.samples)
	for _, line := range tally.refusalSummary() {
		t.Logf("refused by the compiler: %s", line)
	}
	t.Logf("%s in all", time.Since(start).Round(time.Millisecond))
	// Nothing compiled proves nothing: the proof needs pods the compiled
	// policies changed.
	if tally.generated.Compiled == 0 || tally.generated.Changed == 0 {
		t.Errorf("no generated case compiled, or none changed a pod: %s", tally.generated)
	}
}

// casesPerRound is how many generated cases share a round: a round costs
// the policies' creation and two waits for kube-apiserver's informers,
// pods cost a dry-run create each.
const casesPerRound = 16

// compiledCase is one namespace's sources and the objects created in it.
type compiledCase struct {
	name    string
	state   offline.Inputs
	objects []*unstructured.Unstructured
}

// generatedCase is case i of seed, as TestOfflineIsTheServer draws it: a
// namespace of its own, presets and mutators scoped to it, and a pod; and
// a Deployment of that pod, since the generated mutators apply to
// Deployments too.
func generatedCase(seed uint64, i int) compiledCase {
	c := newOfflineCase(seed, i)
	validPorts(c.pod)
	out := compiledCase{name: c.namespace.Name, objects: []*unstructured.Unstructured{toUnstructured(podManifest(c.pod)), toUnstructured(deploymentOf(c.pod))}}
	ns := c.namespace.DeepCopy()
	ns.Labels[corev1.LabelMetadataName] = ns.Name
	out.state.Namespaces = []*corev1.Namespace{ns}
	for _, p := range c.presets {
		switch p := p.(type) {
		case *settingsv1alpha1.PodPreset:
			out.state.Presets = append(out.state.Presets, p)
		case *settingsv1alpha1.ClusterPodPreset:
			// latestPresets renames ClusterPodPresets after the case as it
			// goes, so two of one name can both stay; a server keeps the
			// later, as after an update.
			out.state.ClusterPresets = slices.DeleteFunc(out.state.ClusterPresets, func(q *settingsv1alpha1.ClusterPodPreset) bool { return q.Name == p.Name })
			out.state.ClusterPresets = append(out.state.ClusterPresets, p)
		}
	}
	out.state.Mutators = c.mutators
	return out
}

// deploymentOf is a Deployment of one replica of pod, selecting it by a
// label of its own.
func deploymentOf(pod *corev1.Pod) *appsv1.Deployment {
	template := corev1.PodTemplateSpec{ObjectMeta: *pod.ObjectMeta.DeepCopy(), Spec: *pod.Spec.DeepCopy()}
	template.Name, template.GenerateName, template.Namespace = "", "", ""
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	template.Labels["compiled-deployment"] = "yes"
	return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Namespace: pod.Namespace},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"compiled-deployment": "yes"}}, Template: template}}
}

func toUnstructured(obj any) *unstructured.Unstructured {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err) // the API types always marshal
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		panic(err)
	}
	return u
}

// compiledSample is a set of the repository's sample files, applied as one
// cluster's state, and the pods created against it.
type compiledSample struct {
	name      string
	namespace string
	// state are files of presets, namespaces and mutators; admissionConfig
	// a LocationMutator configuration whose inline mutators join them.
	state           []string
	admissionConfig string
	// deploymentOnly formats deployment-only-assign.yaml.fmt into the state.
	deploymentOnly bool
}

const (
	examples = "../../../hack/examples/"
	lmdata   = "../../../plugin/pkg/admission/locationmutator/testdata/"
)

// compiledSamples are every preset and mutator sample: the README's and
// the LocationMutator's testdata, each file in a round of its own (the
// README's objects together, as its walkthrough applies them), in the
// namespace their matches name.
var compiledSamples = []compiledSample{
	{name: "README", namespace: "shop", state: []string{examples + "namespace.yaml", examples + "podpreset.yaml", examples + "clusterpodpreset.yaml",
		examples + "podpreset-warn.yaml", examples + "mutators.yaml", examples + "live-assign.yaml"}, admissionConfig: examples + "admission-config.yaml"},
	{name: "tag-to-digest", namespace: "shop", state: []string{examples + "namespace.yaml", examples + "tag-to-digest.yaml"}},
	{name: "gatekeeper-shapes", namespace: "shop", state: []string{examples + "namespace.yaml", lmdata + "gatekeeper-shapes.yaml"}},
	{name: "mutators", namespace: "shop", state: []string{examples + "namespace.yaml", lmdata + "mutators.yaml"}, admissionConfig: lmdata + "admission-config.yaml"},
	{name: "pull-always", namespace: "shop", state: []string{examples + "namespace.yaml", lmdata + "pull-always.yaml"}},
	{name: "ten-pod-mutators", namespace: "prod", state: []string{lmdata + "ten-pod-mutators.yaml"}},
	{name: "deployment-only-assign", namespace: "shop", state: []string{examples + "namespace.yaml"}, deploymentOnly: true},
}

// samplePods is how many generated pods each sample round creates beside
// the README's two.
const samplePods = 8

// sampleCase reads a sample's state; its objects are the README's pods and
// generated ones (fuzzobjectstest.TypedPod: names web and web-*, which the
// samples' matches name, containers app and proxy, images with and without
// registries), all in the sample's namespace, plus a ConfigMap and a
// Namespace for the mutators of those kinds.
func sampleCase(t *testing.T, s compiledSample, seed uint64) compiledCase {
	t.Helper()
	docs, err := offline.ReadObjects(s.state, nil)
	if err != nil {
		t.Fatal(err)
	}
	state, err := offline.ReadState(docs, s.namespace)
	if err != nil {
		t.Fatal(err)
	}
	c := compiledCase{name: s.name, state: state.Inputs}
	if s.admissionConfig != "" {
		c.state.Mutators = append(c.state.Mutators, inlineMutators(t, s.admissionConfig)...)
	}
	if s.deploymentOnly {
		u := &unstructured.Unstructured{}
		if err := yamlToObject(fmt.Sprintf(mustRead(t, lmdata+"deployment-only-assign.yaml.fmt"), 1), &u.Object); err != nil {
			t.Fatal(err)
		}
		c.state.Mutators = append(c.state.Mutators, u)
	}
	if !slices.ContainsFunc(c.state.Namespaces, func(ns *corev1.Namespace) bool { return ns.Name == s.namespace }) {
		c.state.Namespaces = append(c.state.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace,
			Labels: map[string]string{corev1.LabelMetadataName: s.namespace}}})
	}
	for _, file := range []string{examples + "pod.yaml", examples + "conflicting-pod.yaml"} {
		pod := &corev1.Pod{}
		if err := yamlToObject(mustRead(t, file), pod); err != nil {
			t.Fatal(err)
		}
		c.objects = append(c.objects, samplePod(pod, s.namespace))
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(s.name))))
	for range samplePods {
		data := make([]byte, 200)
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		c.objects = append(c.objects, samplePod(fuzzobjectstest.TypedPod(fuzzobjectstest.NewSource(data)), s.namespace))
	}
	configMap := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: s.namespace, Labels: map[string]string{"example.com/mutate": "yes"}}}
	namespace := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "created-" + s.namespace}}
	c.objects = append(c.objects, toUnstructured(configMap), toUnstructured(namespace))
	return c
}

func samplePod(pod *corev1.Pod, namespace string) *unstructured.Unstructured {
	pod.Namespace = namespace
	runnable(pod)
	validPorts(pod)
	return toUnstructured(podManifest(pod))
}

// validPorts drops the generators' ports that kube-apiserver's validation
// refuses (port 0, a port name used twice in the pod), so that the pods
// are stored and the plugins' changes compared, rather than both sides
// refusing them for what neither the plugins nor the policies did.
func validPorts(pod *corev1.Pod) {
	names := map[string]bool{}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			c := &containers[i]
			c.Ports = slices.DeleteFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == 0 })
			for j := range c.Ports {
				if names[c.Ports[j].Name] {
					c.Ports[j].Name = ""
				}
				if c.Ports[j].Name != "" {
					names[c.Ports[j].Name] = true
				}
			}
		}
	}
}

func yamlToObject(doc string, into any) error { return yaml.Unmarshal([]byte(doc), into) }

// inlineMutators are the mutators an AdmissionConfiguration's
// LocationMutator entry lists inline (its mutatorFiles are other samples).
func inlineMutators(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	var cfg struct {
		Plugins []struct {
			Name          string
			Configuration struct{ Mutators []map[string]any }
		}
	}
	if err := yamlToObject(mustRead(t, file), &cfg); err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, p := range cfg.Plugins {
		for _, m := range p.Configuration.Mutators {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no mutator inline", file)
	}
	return out
}

// compiledCounts are the figures of one kind of case.
type compiledCounts struct {
	// Cases were run; Compiled had every source compile, Partly some;
	// Agreeing are the compiled ones whose every object agreed.
	Cases, Compiled, Partly, Agreeing int
	// Objects were compared (of every case), Changed the ones the plugins
	// changed, Refused the ones both sides refused.
	Objects, Changed, Refused int
	// ValidationFirst are objects validationFirst explains.
	ValidationFirst int
	// Sources are the presets and mutators a server would store of the
	// ones compiled or refused; CompilerRefused of them left the case;
	// Invalid are the ones the plugins refused (the LocationMutator's
	// decoder, or the offline host's checks of what compiled).
	Sources, CompilerRefused, Invalid int
	refusals                          map[string]int
}

func (c compiledCounts) String() string {
	return fmt.Sprintf("%d cases, %d compiled (%d of them agreeing), %d partly; %d objects compared (%d changed, %d refused, %d refused by validation first); %d valid sources, %d refused by the compiler; %d invalid",
		c.Cases, c.Compiled, c.Agreeing, c.Partly, c.Objects, c.Changed, c.Refused, c.ValidationFirst, c.Sources, c.CompilerRefused, c.Invalid)
}

type compiledTally struct{ generated, samples compiledCounts }

// refusalSummary is each reason the compiler gave, with how often.
func (t *compiledTally) refusalSummary() []string {
	all := map[string]int{}
	for _, c := range []compiledCounts{t.generated, t.samples} {
		for k, n := range c.refusals {
			all[k] += n
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		out = append(out, fmt.Sprintf("%dx %s", all[k], k))
	}
	return out
}

// sourcesOf names the presets and mutators as compiler.Source does.
func sourcesOf(in offline.Inputs) map[compiler.Source]bool {
	out := map[compiler.Source]bool{}
	for _, p := range in.Presets {
		out[compiler.Source{Kind: "PodPreset", Namespace: p.Namespace, Name: p.Name}] = true
	}
	for _, p := range in.ClusterPresets {
		out[compiler.Source{Kind: "ClusterPodPreset", Name: p.Name}] = true
	}
	for _, m := range in.Mutators {
		out[compiler.Source{Kind: m.GetKind(), Name: m.GetName()}] = true
	}
	return out
}

// runRound compiles each case on its own, as one cluster's objects, and
// applies every case's policies together, each case's renamed apart; puts
// each case's state in an offline host of its own; then creates every
// object on both sides and compares.
func runRound(t *testing.T, stock *policyServer, cases []compiledCase, counts *compiledCounts) {
	start := time.Now()
	var all compiler.Result
	admitters := make([]*offline.Admitter, len(cases))
	partly := make([]bool, len(cases))
	for i := range cases {
		c := &cases[i]
		var result compiler.Result
		var refused []compiler.Refusal
		var invalid []string
		admitters[i], c.state, result, refused, invalid = compiledState(t, c.state)
		counts.Invalid += len(invalid)
		counts.Sources += len(sourcesOf(c.state)) + len(refused)
		counts.CompilerRefused += len(refused)
		partly[i] = len(refused) > 0
		for _, r := range refused {
			if counts.refusals == nil {
				counts.refusals = map[string]int{}
			}
			counts.refusals[r.Source.Kind+": "+r.Errs.ToAggregate().Error()]++
			t.Logf("case %s: the compiler refused %s %s: %v", c.name, r.Source.Kind, sourceName(r.Source), r.Errs.ToAggregate())
		}
		addRenamed(&all, result, fmt.Sprintf("-%d", i))
		for _, ns := range c.state.Namespaces {
			framework.CreateNamespace(t, stock.server.AdminConfig(), ns.Name, withoutNameLabel(ns.Labels))
		}
	}
	// The plugins' side first, while no policy is applied: what the
	// server stores of the object the plugins admitted; and of the object
	// as sent, which tells whether the plugins changed it.
	plugins, asSent := make([][]compiledOutcome, len(cases)), make([][]compiledOutcome, len(cases))
	for i, c := range cases {
		for _, obj := range c.objects {
			plugins[i] = append(plugins[i], throughPlugins(t, stock, admitters[i], obj))
			asSent[i] = append(asSent[i], createOnStock(t, stock, obj))
		}
	}
	t.Logf("%d cases checked, compiled and admitted by the plugins in %s", len(cases), time.Since(start).Round(time.Millisecond))
	remove := stock.apply(t, all)
	defer remove()
	for i, c := range cases {
		counts.Cases++
		if partly[i] {
			counts.Partly++
		} else {
			counts.Compiled++
		}
		agreed := true
		for j, obj := range c.objects {
			counts.Objects++
			compiled := createOnStock(t, stock, obj)
			if validationFirst(plugins[i][j], compiled, asSent[i][j]) {
				counts.ValidationFirst++
				t.Logf("case %s, %s: kube-apiserver's validation refuses it before any policy decides: %s", c.name, describeCreate(obj), compiled.Refusal.Message)
				continue
			}
			if d := cmp.Diff(plugins[i][j], compiled); d != "" {
				agreed = false
				t.Errorf("case %s, %s: the compiled policies and the plugins disagree (-plugins +compiled):\n%s", c.name, describeCreate(obj), d)
				continue
			}
			if compiled.Refusal != nil {
				counts.Refused++
			} else if !cmp.Equal(compiled.Object, asSent[i][j].Object) {
				counts.Changed++
			}
		}
		if !agreed {
			t.Logf("case %s, as compiled:\n%s", c.name, describeCase(c))
		} else if !partly[i] {
			counts.Agreeing++
		}
	}
}

// validationFirst reports the one difference plugin/compiler/README.md
// names: the plugins refuse an object, or warn that presets conflict, in
// the mutating phase, but ValidatingAdmissionPolicies decide after
// kube-apiserver's validation, so on an object that validation refuses
// anyway its 422 stands, with no preset's refusal or warning. It holds only
// when the object as sent meets that same refusal with no policy, which
// says the policies changed nothing of it.
func validationFirst(plugins, compiled, asSent compiledOutcome) bool {
	return plugins.Refusal != nil && compiled.Refusal != nil && compiled.Refusal.Code == http.StatusUnprocessableEntity &&
		cmp.Equal(compiled.Refusal, asSent.Refusal)
}

// addRenamed adds r's policies and bindings to all, suffix added to every
// name and to each binding's policyName: the compiler names its policies
// alike for every set of objects, and the cases of a round are sets of
// their own. Nothing in a policy reads its own name, and a common suffix
// keeps the order of a case's policy names.
func addRenamed(all *compiler.Result, r compiler.Result, suffix string) {
	for _, p := range r.MutatingPolicies {
		p.Name += suffix
		all.MutatingPolicies = append(all.MutatingPolicies, p)
	}
	for _, b := range r.MutatingBindings {
		b.Name += suffix
		b.Spec.PolicyName += suffix
		all.MutatingBindings = append(all.MutatingBindings, b)
	}
	for _, p := range r.ValidatingPolicies {
		p.Name += suffix
		all.ValidatingPolicies = append(all.ValidatingPolicies, p)
	}
	for _, b := range r.ValidatingBindings {
		b.Name += suffix
		b.Spec.PolicyName += suffix
		all.ValidatingBindings = append(all.ValidatingBindings, b)
	}
}

// describeCreate names an object created: its kind, namespace and name
// (or generateName).
func describeCreate(obj *unstructured.Unstructured) string {
	name := obj.GetName()
	if name == "" {
		name = obj.GetGenerateName() + "*"
	}
	if obj.GetNamespace() != "" {
		name = obj.GetNamespace() + "/" + name
	}
	return obj.GetKind() + " " + name
}

func sourceName(s compiler.Source) string {
	if s.Namespace != "" {
		return s.Namespace + "/" + s.Name
	}
	return s.Name
}

// withoutNameLabel drops the label kube-apiserver gives every namespace.
func withoutNameLabel(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	delete(out, corev1.LabelMetadataName)
	return out
}

func describeCase(c compiledCase) string {
	var objs []any
	for _, p := range c.state.Presets {
		objs = append(objs, p)
	}
	for _, p := range c.state.ClusterPresets {
		objs = append(objs, p)
	}
	for _, m := range c.state.Mutators {
		objs = append(objs, m.Object)
	}
	for _, o := range c.objects {
		objs = append(objs, o.Object)
	}
	var b strings.Builder
	for _, o := range objs {
		data, _ := json.Marshal(o)
		fmt.Fprintf(&b, "%s\n", data)
	}
	return b.String()
}

// offlineOptions are the webhook server's registry and feature gates, and
// kube-apiserver's defaults, as `admitkit admit` runs them.
func offlineOptions(t *testing.T, in offline.Inputs) offline.Options {
	t.Helper()
	registry := admission.NewPlugins()
	plugin.RegisterAllAdmissionPlugins(registry)
	settingsadmission.Register(registry, nil)
	gate := featuregate.NewFeatureGate()
	if err := noderestriction.AddFeatureGates(gate); err != nil {
		t.Fatal(err)
	}
	return offline.Options{Inputs: in, Plugins: registry, FeatureGates: gate,
		EffectiveVersion: utilcompatibility.DefaultBuildEffectiveVersion(), Defaulter: defaults.NewScheme()}
}

// compiledState is what of in both sides hold: the presets and mutators
// that compile and that the plugins take. The mutators the LocationMutator's
// decoder refuses, as a server refuses to store them, leave first; the rest
// is compiled (compiledSet); the offline host then takes what compiled, or
// names the first it refuses (a mutator whose schema conflicts with
// another's, a preset the registry's validation refuses), which leaves the
// state before compiling again. It returns the offline host holding the
// state, the compiler's result and refusals, and what the plugins refused.
func compiledState(t *testing.T, in offline.Inputs) (*offline.Admitter, offline.Inputs, compiler.Result, []compiler.Refusal, []string) {
	t.Helper()
	var invalid []string
	in.Mutators = slices.DeleteFunc(slices.Clone(in.Mutators), func(m *unstructured.Unstructured) bool {
		if _, errs := decodeMutator(t, m); len(errs) > 0 {
			invalid = append(invalid, m.GetKind()+" "+m.GetName())
			return true
		}
		return false
	})
	for {
		compiled, result, refused := compiledSet(t, in)
		a, err := offline.New(context.Background(), offlineOptions(t, compiled))
		if err == nil {
			t.Cleanup(a.Close)
			return a, compiled, result, refused, invalid
		}
		var inputErr *offline.InputError
		if !errors.As(err, &inputErr) {
			t.Fatal(err)
		}
		var dropped bool
		in, dropped = withoutSource(in, inputErr.Object)
		if !dropped {
			t.Fatalf("the offline host refused the state for what is not a preset or mutator: %v", err)
		}
		invalid = append(invalid, inputErr.Object)
	}
}

// withoutSource is in without the preset or mutator described as the
// offline host names inputs ("PodPreset ns/name", "Assign name").
func withoutSource(in offline.Inputs, described string) (offline.Inputs, bool) {
	n := len(in.Presets) + len(in.ClusterPresets) + len(in.Mutators)
	in.Presets = slices.DeleteFunc(slices.Clone(in.Presets), func(p *settingsv1alpha1.PodPreset) bool {
		return described == "PodPreset "+p.Namespace+"/"+p.Name
	})
	in.ClusterPresets = slices.DeleteFunc(slices.Clone(in.ClusterPresets), func(p *settingsv1alpha1.ClusterPodPreset) bool {
		return described == "ClusterPodPreset "+p.Name
	})
	in.Mutators = slices.DeleteFunc(slices.Clone(in.Mutators), func(m *unstructured.Unstructured) bool {
		return described == m.GetKind()+" "+m.GetName()
	})
	return in, len(in.Presets)+len(in.ClusterPresets)+len(in.Mutators) < n
}

// compiledSet compiles in; while the compiler refuses something, that
// leaves the state and the rest is compiled again, so that what both sides
// get is exactly what compiled.
func compiledSet(t *testing.T, in offline.Inputs) (offline.Inputs, compiler.Result, []compiler.Refusal) {
	t.Helper()
	var refused []compiler.Refusal
	for {
		r := compiler.Compile(compilerSources(t, in))
		given := sourcesOf(in)
		if len(r.Refused) == 0 {
			for s := range given {
				if !slices.Contains(r.Compiled, s) {
					t.Errorf("the compiler neither compiled nor refused %+v", s)
				}
			}
			return in, r, refused
		}
		left := maps.Clone(given)
		for _, ref := range r.Refused {
			if !given[ref.Source] {
				t.Fatalf("the compiler refused %+v, which it was not given", ref.Source)
			}
			// One refusal a source, with every reason given for it.
			if i := slices.IndexFunc(refused, func(r compiler.Refusal) bool { return r.Source == ref.Source }); i >= 0 {
				refused[i].Errs = append(refused[i].Errs, ref.Errs...)
			} else {
				refused = append(refused, ref)
			}
			delete(left, ref.Source)
		}
		in.Presets = slices.DeleteFunc(slices.Clone(in.Presets), func(p *settingsv1alpha1.PodPreset) bool {
			return !left[compiler.Source{Kind: "PodPreset", Namespace: p.Namespace, Name: p.Name}]
		})
		in.ClusterPresets = slices.DeleteFunc(slices.Clone(in.ClusterPresets), func(p *settingsv1alpha1.ClusterPodPreset) bool {
			return !left[compiler.Source{Kind: "ClusterPodPreset", Name: p.Name}]
		})
		in.Mutators = slices.DeleteFunc(slices.Clone(in.Mutators), func(m *unstructured.Unstructured) bool {
			return !left[compiler.Source{Kind: m.GetKind(), Name: m.GetName()}]
		})
	}
}

// compilerSources are the state's presets as a server stores them (the
// registry's defaults, which SettingsDefaults gives) and its mutators as
// the LocationMutator decodes them.
func compilerSources(t *testing.T, in offline.Inputs) compiler.Sources {
	t.Helper()
	var src compiler.Sources
	for _, p := range in.Presets {
		p := p.DeepCopy()
		if p.Namespace == "" {
			p.Namespace = metav1.NamespaceDefault
		}
		settingsv1alpha1.SetObjectDefaults_PodPreset(p)
		src.PodPresets = append(src.PodPresets, *p)
	}
	for _, p := range in.ClusterPresets {
		p := p.DeepCopy()
		settingsv1alpha1.SetObjectDefaults_ClusterPodPreset(p)
		src.ClusterPodPresets = append(src.ClusterPodPresets, *p)
	}
	for _, u := range in.Mutators {
		m, errs := decodeMutator(t, u)
		if len(errs) > 0 {
			t.Fatalf("%s %s, which the plugin took, does not decode: %v", u.GetKind(), u.GetName(), errs.ToAggregate())
		}
		src.Mutators = append(src.Mutators, m)
	}
	return src
}

func decodeMutator(t *testing.T, u *unstructured.Unstructured) (*mutation.Mutator, field.ErrorList) {
	t.Helper()
	data, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return mutation.DecodeJSON(data)
}

// compiledOutcome is what the server made of a create, with what differs
// between two creates of one object for reasons other than admission taken
// out (normalizeCreated).
type compiledOutcome struct {
	Object   map[string]any
	Warnings []string
	Refusal  *diffRefusal
}

// throughPlugins admits obj with the plugins, then creates what they
// admitted on the stock server, with dry run, while no policy applies.
func throughPlugins(t *testing.T, stock *policyServer, a *offline.Admitter, obj *unstructured.Unstructured) compiledOutcome {
	t.Helper()
	r, err := a.Admit(context.Background(), obj.DeepCopy(), nil)
	if err != nil {
		t.Fatalf("%s: %v", describeCreate(obj), err)
	}
	if r.Refusal != nil {
		out := compiledOutcome{Warnings: sortedWarnings(r.Warnings), Refusal: &diffRefusal{Code: r.Refusal.Code, Reason: r.Refusal.Reason, Message: r.Refusal.Message}}
		if r.Refusal.Details != nil {
			out.Refusal.Causes = r.Refusal.Details.Causes
		}
		return out
	}
	out := createOnStock(t, stock, r.Object)
	out.Warnings = sortedWarnings(append(out.Warnings, r.Warnings...))
	return out
}

// createOnStock creates obj on the stock server with dry run.
func createOnStock(t *testing.T, stock *policyServer, obj *unstructured.Unstructured) compiledOutcome {
	t.Helper()
	warnings := &warningLog{}
	cfg := rest.CopyConfig(stock.server.AdminConfig())
	cfg.WarningHandler = warnings
	created, err := resourceFor(t, cfg, obj).Create(context.Background(), obj.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	out := compiledOutcome{Warnings: sortedWarnings(warnings.take())}
	if err != nil {
		out.Refusal = refusalOf(t, describeCreate(obj), err)
		out.Refusal.Message = policyDenial.ReplaceAllString(out.Refusal.Message, "")
		if generate := obj.GetGenerateName(); generate != "" {
			// The name the server generated, which differs on every create.
			out.Refusal.Message = regexp.MustCompile(`"`+regexp.QuoteMeta(generate)+`[a-z0-9]{5}"`).ReplaceAllString(out.Refusal.Message, `"`+generate+`*"`)
		}
		return out
	}
	out.Object = normalizeCreated(created.Object)
	return out
}

// compiledKinds are the resources of the kinds the rounds create.
var compiledKinds = map[schema.GroupVersionKind]schema.GroupVersionResource{
	corev1.SchemeGroupVersion.WithKind("Pod"):        corev1.SchemeGroupVersion.WithResource("pods"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):  corev1.SchemeGroupVersion.WithResource("configmaps"),
	corev1.SchemeGroupVersion.WithKind("Namespace"):  corev1.SchemeGroupVersion.WithResource("namespaces"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"): appsv1.SchemeGroupVersion.WithResource("deployments"),
}

func resourceFor(t *testing.T, cfg *rest.Config, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvr, ok := compiledKinds[obj.GroupVersionKind()]
	if !ok {
		t.Fatalf("no resource for %v", obj.GroupVersionKind())
	}
	client := framework.DynamicClient(t, cfg).Resource(gvr)
	if obj.GetNamespace() == "" {
		return client
	}
	return client.Namespace(obj.GetNamespace())
}

// policyDenial and policyWarning are how kube-apiserver words a
// ValidatingAdmissionPolicy's refusal and warning before the policy's own
// message; the plugins' messages are compared without them.
var (
	policyDenial  = regexp.MustCompile(`^ValidatingAdmissionPolicy '[^']+' with binding '[^']+' denied request: `)
	policyWarning = regexp.MustCompile(`^Validation failed for ValidatingAdmissionPolicy '[^']+' with binding '[^']+': `)
)

// sortedWarnings: the plugins' warnings come from one plugin after the
// other, the policies' from one policy after the other, in an order
// kube-apiserver does not specify among policies.
func sortedWarnings(warnings []string) []string {
	var out []string
	for _, w := range warnings {
		out = append(out, policyWarning.ReplaceAllString(w, ""))
	}
	sort.Strings(out)
	return out
}

// normalizeCreated takes out of what a dry-run create returned what two
// creates of one object differ in, whatever admission did:
//   - uid and creationTimestamp are new on every create, and
//     managedFields carry the time; resourceVersion is storage's;
//   - a generateName object's name gets a random suffix;
//   - the value of a PodPreset annotation is the preset's resourceVersion,
//     which storage assigns: the offline host, which stores nothing,
//     writes "" (README of plugin/webhook/offline), and a compiled policy
//     writes the resourceVersion of the preset it was compiled from.
func normalizeCreated(obj map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(obj)
	for _, f := range []string{"uid", "creationTimestamp", "managedFields", "resourceVersion"} {
		unstructured.RemoveNestedField(out, "metadata", f)
	}
	if generate, _, _ := unstructured.NestedString(out, "metadata", "generateName"); generate != "" {
		unstructured.RemoveNestedField(out, "metadata", "name")
	}
	annotations, _, _ := unstructured.NestedStringMap(out, "metadata", "annotations")
	for k := range annotations {
		if strings.HasPrefix(k, presetAnnotationPrefix+"podpreset-") || strings.HasPrefix(k, presetAnnotationPrefix+"clusterpodpreset-") {
			annotations[k] = ""
		}
	}
	if len(annotations) > 0 {
		_ = unstructured.SetNestedStringMap(out, annotations, "metadata", "annotations")
	}
	return out
}
