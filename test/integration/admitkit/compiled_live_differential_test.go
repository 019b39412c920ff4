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
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/plugin/webhook/offline"
	"github.com/admitkit/admitkit/plugin/webhook/policysync"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// TestCompiledLiveIsThePlugins is TestCompiledIsThePlugins run against the
// webhook server's live mode (admitkit webhook --compile-policies) beside
// upstream's kube-apiserver: the server compiles what it can of the
// presets, cluster presets and mutators applied to the API, leaves the
// rest to its webhooks, and the pods must come out as the plugins alone
// make them, or be refused as the plugins refuse them.
//
// The cases are TestCompiledIsThePlugins' generated ones (each a namespace
// of its own, its presets and mutators scoped to it, a pod and a
// Deployment), with more pods of the same generators, and only those that
// mix objects that compile with objects that do not: compiled alone, the
// case's objects give at least one compiled source and one the compiler
// refuses (a preset in a mode or shape it refuses, beside presets it would
// compile and must then keep with the webhook; a mutator it refuses, beside
// mutators whose order with it decides whether they compile). Each case
// runs alone on the server, its sources created as a user applies them and
// deleted after it, so that what the server compiles is the case's own
// mix.
//
// The plugins' side is the offline host holding the case's objects (all
// of them, compiled or not), its pods then created with dry run on the same
// server before any source is applied, so that both sides go through the
// same kube-apiserver and webhook configuration and differ only in the
// plugins against the live mode. The live side waits until the server has
// settled (settleLive): every source annotated as the compiler decides for
// the objects stored, the policies carrying exactly the compiled ones at
// their stored resourceVersions, the webhook handing those over and its
// plugins holding the rest; and until kube-apiserver enforces the policies
// (the probe of policyServer.apply).
//
// ADMITKIT_COMPILED_SEED sets the seed (1 unless set) and
// ADMITKIT_COMPILED_LIVE_CASES the number of mixed cases.
func TestCompiledLiveIsThePlugins(t *testing.T) {
	seed := envNumber(t, "ADMITKIT_COMPILED_SEED", 1)
	n := int(envNumber(t, "ADMITKIT_COMPILED_LIVE_CASES", 8))
	t.Logf("seed %d (ADMITKIT_COMPILED_SEED=%d reruns these cases), %d mixed cases", seed, seed, n)
	start := time.Now()
	live, w := startLiveServer(t)
	cases, scanned := liveCases(t, live, seed, n)
	var rounds []*liveRound
	for first := 0; first < len(cases); first += liveCasesPerRound {
		// Every other round has a preset the compiler refuses beside the
		// ones it compiles.
		sized := len(rounds)%2 == 1
		rounds = append(rounds, newLiveRound(t, live, cases[first:min(first+liveCasesPerRound, len(cases))], sized))
	}
	t.Logf("%d of the first %d generated cases mix compiled and refused sources; the plugins' side done %s after the start",
		len(cases), scanned, time.Since(start).Round(time.Millisecond))
	var tally liveTally
	for _, r := range rounds {
		t.Run(r.name, func(t *testing.T) { runLiveRound(t, live, w, r, &tally) })
	}
	t.Logf("generated: %s", tally)
	t.Logf("%s in all", time.Since(start).Round(time.Millisecond))
	// The proof needs both sides of the mode at work, and pods they
	// changed.
	if tally.Compiled == 0 || tally.Held == 0 || tally.Changed == 0 {
		t.Errorf("no source compiled, none was held, or no pod changed: %s", tally)
	}
}

// liveCasesPerRound is how many cases the server holds at once. Each round
// costs the webhook plugins' informers two lists again (what the policies
// carry changes when the round's sources compile, and when they go), which
// client-go's reflector spaces out with a backoff that doubles while the
// lists come within two minutes of each other: a few rounds of several
// cases settle in seconds, where a round per case would take minutes.
const liveCasesPerRound = 4

// livePodsPerCase is how many generated pods each case creates beside its
// own pod and Deployment.
const livePodsPerCase = 4

// liveCandidates bounds the generated cases scanned for each mixed one.
const liveCandidates = 20

// liveAdmissionConfig is the live webhook server's plugin configuration:
// the LocationMutator takes its mutators from the API alone, so that every
// mutator is one the server may compile (the configuration's own run on
// the webhook whatever compiles, and TestCompiledLive covers them).
var liveAdmissionConfig = framework.AdmissionConfiguration(
	framework.NodeRestrictionConfiguration("    lookups: Requests\n"+nodeRestrictionFields),
	framework.LocationMutatorConfiguration("    watchMutators: true\n"))

// startLiveServer starts upstream's kube-apiserver and admitkit's webhook
// server beside it in its compiled-policies mode, installed as
// TestCompiledLive installs it, with a short handover: the probe, not the
// delay, tells when kube-apiserver enforces the policies.
func startLiveServer(t *testing.T) (*policyServer, *framework.Webhook) {
	t.Helper()
	start := time.Now()
	cfg := serverConfig()
	cfg.AdmissionConfig, cfg.Files, cfg.Args = "", nil, nil
	srv, err := framework.StartStock(cfg)
	if err != nil {
		t.Fatalf("starting upstream's kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Cleanup(); err != nil {
			t.Errorf("stopping upstream's kube-apiserver: %v", err)
		}
	})
	wcfg := webhookConfig("compiled-live-differential")
	wcfg.AdmissionConfig, wcfg.Files = liveAdmissionConfig, nil
	wcfg.Args = []string{"--compile-policies", "--compiled-handover-delay=1s"}
	w, err := framework.StartWebhookHost(srv, wcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Kill)
	t.Logf("upstream's kube-apiserver and the webhook server ready in %s", time.Since(start).Round(time.Millisecond))
	return newPolicyServer(t, srv), w
}

// liveCases are the first n generated cases whose objects, as the server
// stores them and compiled alone, give at least one compiled source and one
// refused, with a preset among them (the server refuses many generated
// presets, and a case of mutators alone leaves the presets' side of the
// mode unexercised); with the state the server stores of each; and how
// many were scanned to find them.
func liveCases(t *testing.T, live *policyServer, seed uint64, n int) ([]compiledCase, int) {
	t.Helper()
	var out []compiledCase
	i := 0
	for ; len(out) < n; i++ {
		if i >= liveCandidates*n {
			t.Fatalf("only %d of the first %d generated cases mix compiled and refused sources, want %d", len(out), i, n)
		}
		c := generatedCase(seed, i)
		c.objects = append(c.objects, livePods(seed, i, c.name)...)
		a, state := storedState(t, live, c.state)
		a.Close()
		r := compiler.Compile(compilerSources(t, state))
		if len(r.Compiled) == 0 || len(r.Refused) == 0 || len(state.Presets)+len(state.ClusterPresets) == 0 {
			continue
		}
		c.state = state
		out = append(out, c)
	}
	return out, i
}

// liveRound is cases the server holds at once: the state it stores of all
// of them, the plugins holding it, and what the server made of each object
// as the plugins admitted it and as sent.
type liveRound struct {
	name            string
	cases           []compiledCase
	state           offline.Inputs
	admitter        *offline.Admitter
	plugins, asSent [][]compiledOutcome
}

// newLiveRound puts the cases' states together, as the server stores them
// (storedState: a mutator of one case may be in a schema conflict with
// another's), with a sized preset (withSizedPreset) when sized is true, and
// creates each object as the plugins admit it and as sent, with dry run,
// while the server holds no source (so neither a policy nor the webhook
// plugins change them).
func newLiveRound(t *testing.T, live *policyServer, cases []compiledCase, sized bool) *liveRound {
	t.Helper()
	r := &liveRound{name: cases[0].name + "-" + cases[len(cases)-1].name, cases: cases}
	var all offline.Inputs
	for _, c := range cases {
		all.Presets = append(all.Presets, c.state.Presets...)
		all.ClusterPresets = append(all.ClusterPresets, c.state.ClusterPresets...)
		all.Namespaces = append(all.Namespaces, c.state.Namespaces...)
		all.Mutators = append(all.Mutators, c.state.Mutators...)
	}
	if sized {
		all = withSizedPreset(t, all)
	}
	r.admitter, r.state = storedState(t, live, all)
	t.Cleanup(r.admitter.Close)
	r.plugins, r.asSent = make([][]compiledOutcome, len(cases)), make([][]compiledOutcome, len(cases))
	for i, c := range cases {
		for _, obj := range c.objects {
			r.plugins[i] = append(r.plugins[i], throughPlugins(t, live, r.admitter, obj))
			r.asSent[i] = append(r.asSent[i], createOnStock(t, live, obj))
		}
	}
	return r
}

// withSizedPreset adds to in a copy of its first preset, enforced, with a
// volume the compiler refuses (an emptyDir's sizeLimit is a quantity, which
// the plugin compares by value and CEL could only by text): the copy
// selects the pods the original selects, and the plugin applies a pod's
// presets all or none, so the compiler must leave on the webhook every
// preset it can meet there, the ones it compiles otherwise too.
func withSizedPreset(t *testing.T, in offline.Inputs) offline.Inputs {
	t.Helper()
	sized := corev1.Volume{Name: "sized", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptrTo(resource.MustParse("1Gi"))}}}
	switch {
	case len(in.Presets) > 0:
		p := in.Presets[0].DeepCopy()
		p.Name += "-sized"
		p.Spec.Mode, p.Spec.Volumes = "", append(p.Spec.Volumes, sized)
		in.Presets = append(slices.Clone(in.Presets), p)
		t.Logf("PodPreset %s/%s is %s with a sized volume", p.Namespace, p.Name, in.Presets[0].Name)
	case len(in.ClusterPresets) > 0:
		p := in.ClusterPresets[0].DeepCopy()
		p.Name += "-sized"
		p.Spec.Mode, p.Spec.Volumes = "", append(p.Spec.Volumes, sized)
		in.ClusterPresets = append(slices.Clone(in.ClusterPresets), p)
		t.Logf("ClusterPodPreset %s is %s with a sized volume", p.Name, in.ClusterPresets[0].Name)
	}
	return in
}

// livePods are more pods for case i in namespace ns, from the generators
// of the case's own: PodPresets.Pod, whose labels and container names the
// presets select, and TypedPod, whose names, images and fields the
// mutators' locations name. Their streams are apart from every case's.
func livePods(seed uint64, i int, ns string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for k := range livePodsPerCase {
		rng := rand.New(rand.NewPCG(seed, 1<<32|uint64(i)<<8|uint64(k)))
		data := make([]byte, 400)
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		s := fuzzobjectstest.NewSource(data)
		var pod *corev1.Pod
		if k%2 == 0 {
			pod = (&fuzzobjectstest.PodPresets{Source: s, Namespace: ns}).Pod()
		} else {
			pod = fuzzobjectstest.TypedPod(s)
		}
		pod.Namespace = ns
		runnable(pod)
		validPorts(pod)
		out = append(out, toUnstructured(podManifest(pod)))
	}
	return out
}

// storedState is what of in the server stores and its plugins hold: the
// presets and mutators the server refuses to create (its validation, which
// checks a preset's pod fields with kube-apiserver's pod validation where
// the offline host has admitkit's own rules) leave, as do the mutators the
// LocationMutator's decoder refuses; then each preset or mutator the
// offline host names as one the server would refuse (a schema conflict
// with another mutator of the case), as compiledState does; but what the
// compiler refuses stays. It returns the offline host holding the state.
func storedState(t *testing.T, live *policyServer, in offline.Inputs) (*offline.Admitter, offline.Inputs) {
	t.Helper()
	for _, ns := range in.Namespaces {
		framework.CreateNamespace(t, live.server.AdminConfig(), ns.Name, withoutNameLabel(ns.Labels))
	}
	in.Mutators = slices.DeleteFunc(slices.Clone(in.Mutators), func(m *unstructured.Unstructured) bool {
		_, errs := decodeMutator(t, m)
		return len(errs) > 0
	})
	in = serverTakes(t, live, in)
	for {
		a, err := offline.New(context.Background(), offlineOptions(t, in))
		if err == nil {
			return a, in
		}
		var inputErr *offline.InputError
		if !errors.As(err, &inputErr) {
			t.Fatal(err)
		}
		var dropped bool
		if in, dropped = withoutSource(in, inputErr.Object); !dropped {
			t.Fatalf("the offline host refused the state for what is not a preset or mutator: %v", err)
		}
	}
}

// serverTakes is in without the presets and mutators the server refuses
// to create, each asked with dry run while it holds no source.
func serverTakes(t *testing.T, live *policyServer, in offline.Inputs) offline.Inputs {
	t.Helper()
	ctx := context.Background()
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	settings := framework.SettingsClient(t, live.server.AdminConfig()).SettingsV1alpha1()
	dyn := framework.DynamicClient(t, live.server.AdminConfig())
	takes := func(what string, err error) bool {
		t.Helper()
		switch {
		case err == nil:
			return true
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err):
			t.Logf("the server refuses %s: %v", what, err)
			return false
		}
		t.Fatalf("creating %s with dry run: %v", what, err)
		return false
	}
	in.Presets = slices.DeleteFunc(slices.Clone(in.Presets), func(p *settingsv1alpha1.PodPreset) bool {
		_, err := settings.PodPresets(p.Namespace).Create(ctx, p.DeepCopy(), dryRun)
		return !takes("PodPreset "+p.Namespace+"/"+p.Name, err)
	})
	in.ClusterPresets = slices.DeleteFunc(slices.Clone(in.ClusterPresets), func(p *settingsv1alpha1.ClusterPodPreset) bool {
		_, err := settings.ClusterPodPresets().Create(ctx, p.DeepCopy(), dryRun)
		return !takes("ClusterPodPreset "+p.Name, err)
	})
	in.Mutators = slices.DeleteFunc(slices.Clone(in.Mutators), func(m *unstructured.Unstructured) bool {
		_, err := dyn.Resource(mutatorResources[m.GetKind()]).Create(ctx, m.DeepCopy(), dryRun)
		return !takes(m.GetKind()+" "+m.GetName(), err)
	})
	return in
}

// liveTally are the figures of the run.
type liveTally struct {
	// Cases were run; Sources were stored, of which the server compiled
	// Compiled and held Held on the webhook.
	Cases, Sources, Compiled, Held int
	// Objects were compared: Agreeing came out as the plugins make them
	// (Changed of those changed by them, Refused refused by both);
	// ValidationFirst are refusals validationFirst explains.
	Objects, Agreeing, Changed, Refused, ValidationFirst int
	// Reasons counts why sources were held, by kind and field.
	Reasons map[string]int
}

func (l liveTally) String() string {
	var reasons []string
	for _, k := range slices.Sorted(maps.Keys(l.Reasons)) {
		reasons = append(reasons, fmt.Sprintf("%dx %s", l.Reasons[k], k))
	}
	return fmt.Sprintf("%d cases; %d sources stored, %d compiled, %d held on the webhook (%s); %d objects compared, %d agreeing (%d changed, %d refused by both), %d refused by validation first",
		l.Cases, l.Sources, l.Compiled, l.Held, strings.Join(reasons, ", "), l.Objects, l.Agreeing, l.Changed, l.Refused, l.ValidationFirst)
}

// runLiveRound applies the round's sources, waits until the server has
// settled on them and enforces the policies, creates every object and
// compares it with the plugins' outcome.
func runLiveRound(t *testing.T, live *policyServer, w *framework.Webhook, r *liveRound, tally *liveTally) {
	start := time.Now()
	t.Cleanup(func() {
		// The next round starts on a server that holds nothing: no source,
		// no policy, and nothing in the webhook plugins (whose checks of a
		// new mutator see the ones they hold).
		deleteSources(t, live, r.state)
		settleLive(t, live, w)
	})
	createSources(t, live, r.state)
	settled := settleLive(t, live, w)
	remove := live.apply(t, compiler.Result{})
	defer remove()
	t.Logf("enforced %s after the sources' creation: compiled %v; held %v", time.Since(start).Round(time.Millisecond), settled.compiled, settled.held)
	tally.Cases += len(r.cases)
	tally.Sources += len(settled.compiled) + len(settled.held)
	tally.Compiled += len(settled.compiled)
	tally.Held += len(settled.held)
	if tally.Reasons == nil {
		tally.Reasons = map[string]int{}
	}
	for _, reason := range settled.reasons {
		tally.Reasons[reason]++
	}
	for i, c := range r.cases {
		agreed := true
		for j, obj := range c.objects {
			tally.Objects++
			got := createOnStock(t, live, obj)
			if validationFirst(r.plugins[i][j], got, r.asSent[i][j]) {
				tally.ValidationFirst++
				continue
			}
			if d := cmp.Diff(r.plugins[i][j], got); d != "" {
				agreed = false
				// cmp shortens long strings; warnings are read whole.
				t.Errorf("case %s, %s: the live mode (compiled policies and webhook) and the plugins disagree (-plugins +live):\n%s\nwarnings of the plugins: %q\nwarnings of the live mode: %q",
					c.name, describeCreate(obj), d, r.plugins[i][j].Warnings, got.Warnings)
				continue
			}
			tally.Agreeing++
			if got.Refusal != nil {
				tally.Refused++
			} else if !cmp.Equal(got.Object, r.asSent[i][j].Object) {
				tally.Changed++
			}
		}
		if !agreed {
			t.Logf("case %s as stored:\n%s", c.name, describeCase(c))
		}
	}
}

// createSources creates the state's presets, cluster presets and mutators.
// The server must store each: serverTakes asked it.
func createSources(t *testing.T, live *policyServer, in offline.Inputs) {
	t.Helper()
	ctx := context.Background()
	settings := framework.SettingsClient(t, live.server.AdminConfig()).SettingsV1alpha1()
	dyn := framework.DynamicClient(t, live.server.AdminConfig())
	refused := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("the server refused %s, which it took with dry run: %v", what, err)
		}
	}
	for _, p := range in.Presets {
		_, err := settings.PodPresets(p.Namespace).Create(ctx, p.DeepCopy(), metav1.CreateOptions{})
		refused("PodPreset "+p.Namespace+"/"+p.Name, err)
	}
	for _, p := range in.ClusterPresets {
		_, err := settings.ClusterPodPresets().Create(ctx, p.DeepCopy(), metav1.CreateOptions{})
		refused("ClusterPodPreset "+p.Name, err)
	}
	for _, m := range in.Mutators {
		_, err := dyn.Resource(mutatorResources[m.GetKind()]).Create(ctx, m.DeepCopy(), metav1.CreateOptions{})
		refused(m.GetKind()+" "+m.GetName(), err)
	}
}

// deleteSources deletes what createSources created, and what of it is
// left when createSources stopped half-way.
func deleteSources(t *testing.T, live *policyServer, in offline.Inputs) {
	t.Helper()
	ctx := context.Background()
	settings := framework.SettingsClient(t, live.server.AdminConfig()).SettingsV1alpha1()
	dyn := framework.DynamicClient(t, live.server.AdminConfig())
	deleted := func(what string, err error) {
		t.Helper()
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", what, err)
		}
	}
	for _, p := range in.Presets {
		deleted("PodPreset "+p.Namespace+"/"+p.Name, settings.PodPresets(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}))
	}
	for _, p := range in.ClusterPresets {
		deleted("ClusterPodPreset "+p.Name, settings.ClusterPodPresets().Delete(ctx, p.Name, metav1.DeleteOptions{}))
	}
	for _, m := range in.Mutators {
		deleted(m.GetKind()+" "+m.GetName(), dyn.Resource(mutatorResources[m.GetKind()]).Delete(ctx, m.GetName(), metav1.DeleteOptions{}))
	}
}

// liveSettled is what the server settled on: the sources compiled and
// those held on the webhook, and why each was held.
type liveSettled struct {
	compiled, held []string
	reasons        []string
}

// settleLive waits until the server is in step with the sources stored
// (liveState), and logs what it waited for, each step with the time it was
// first seen.
func settleLive(t *testing.T, live *policyServer, w *framework.Webhook) liveSettled {
	t.Helper()
	var (
		why     string
		settled liveSettled
		steps   []string
	)
	start := time.Now()
	// Two minutes: the webhook plugins' informers list again each time
	// what the policies carry changes, after client-go's reflector backoff,
	// which grows to between 30 and 60 seconds while the changes come
	// within two minutes of each other (more cases than CI's).
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		was := why
		why, settled = liveState(t, live, w)
		if why != was && why != "" {
			steps = append(steps, fmt.Sprintf("%s: %s", time.Since(start).Round(time.Millisecond), why))
		}
		return why == "", nil
	})
	if err != nil {
		t.Fatalf("the server did not settle on the sources stored: %s (waited for: %s)", why, strings.Join(steps, "; "))
	}
	t.Logf("settled in %s; waited for: %s", time.Since(start).Round(time.Millisecond), strings.Join(steps, "; "))
	return settled
}

// liveState compiles the sources stored as the controller reads them and
// tells what of the server is not yet in step with the result, or "" when
// all of it is: each source's CompiledAnnotation says whether it compiled;
// the mode's policies and bindings are one whole set that carries exactly
// the compiled sources at the resourceVersions stored (none when nothing
// compiled); the webhook hands those over, and its plugins hold every
// other.
func liveState(t *testing.T, live *policyServer, w *framework.Webhook) (string, liveSettled) {
	t.Helper()
	ctx := context.Background()
	settings := framework.SettingsClient(t, live.server.AdminConfig()).SettingsV1alpha1()
	dyn := framework.DynamicClient(t, live.server.AdminConfig())
	var src compiler.Sources
	stored := map[compiler.Source]metav1.Object{}
	presets, err := settings.PodPresets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range presets.Items {
		p := &presets.Items[i]
		src.PodPresets = append(src.PodPresets, *p)
		stored[compiler.Source{Kind: "PodPreset", Namespace: p.Namespace, Name: p.Name}] = p
	}
	clusterPresets, err := settings.ClusterPodPresets().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range clusterPresets.Items {
		p := &clusterPresets.Items[i]
		src.ClusterPodPresets = append(src.ClusterPodPresets, *p)
		stored[compiler.Source{Kind: "ClusterPodPreset", Name: p.Name}] = p
	}
	for _, k := range mutation.Kinds {
		list, err := dyn.Resource(k.GVR()).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			m, errs := decodeMutator(t, u)
			if len(errs) > 0 {
				t.Fatalf("the server stored %s %s, which the LocationMutator's decoder refuses: %v", k.Name, u.GetName(), errs.ToAggregate())
			}
			src.Mutators = append(src.Mutators, m)
			stored[compiler.Source{Kind: k.Name, Name: u.GetName()}] = u
		}
	}
	r := compiler.Compile(src)
	compiled := map[compiler.Source]bool{}
	for _, s := range r.Compiled {
		compiled[s] = true
	}
	reasons := map[compiler.Source]string{}
	for _, ref := range r.Refused {
		delete(compiled, ref.Source)
		reasons[ref.Source] = ref.Errs.ToAggregate().Error()
	}

	var settled liveSettled
	var carried []string
	held := map[string]int{}
	for _, id := range slices.SortedFunc(maps.Keys(stored), func(a, b compiler.Source) int { return strings.Compare(a.String(), b.String()) }) {
		obj := stored[id]
		want := strconv.FormatBool(compiled[id])
		if got := obj.GetAnnotations()[policysync.CompiledAnnotation]; got != want {
			return fmt.Sprintf("%s is annotated %s=%q, the compiler says %q", id, policysync.CompiledAnnotation, got, want), settled
		}
		if compiled[id] {
			settled.compiled = append(settled.compiled, id.String())
			carried = append(carried, id.String()+"@"+obj.GetResourceVersion())
			continue
		}
		settled.held = append(settled.held, id.String())
		settled.reasons = append(settled.reasons, id.Kind+": "+heldFor(reasons[id]))
		if id.Kind == "PodPreset" || id.Kind == "ClusterPodPreset" {
			held[id.Kind]++
		} else {
			held["mutator"]++
		}
	}
	slices.Sort(carried)
	if why := policiesCarry(t, live, strings.Join(carried, "\n")); why != "" {
		return why, settled
	}

	if got := webhookSample(t, w, "admitkit_policysync_carried_sources"); got != float64(len(carried)) {
		return fmt.Sprintf("the webhook hands %v sources over to the policies, want %d", got, len(carried)), settled
	}
	for _, kind := range []string{"PodPreset", "ClusterPodPreset"} {
		if got := webhookSample(t, w, `apiserver_admission_podpreset_presets{kind="`+kind+`"}`); got != float64(held[kind]) {
			return fmt.Sprintf("the webhook's PodPreset holds %v %ss, want %d", got, kind, held[kind]), settled
		}
	}
	var mutators float64
	for _, state := range []string{"enforced", "error", "conflict"} {
		mutators += webhookSample(t, w, `apiserver_admission_locationmutator_mutators{source="api",state="`+state+`"}`)
	}
	if mutators != float64(held["mutator"]) {
		return fmt.Sprintf("the webhook's LocationMutator holds %v mutators, want %d", mutators, held["mutator"]), settled
	}
	return "", settled
}

// policiesCarry tells what of the mode's policies and bindings is not one
// whole set carrying sources (SourcesAnnotation's value), or "" when they
// are; with no source, that none is left.
func policiesCarry(t *testing.T, live *policyServer, sources string) string {
	t.Helper()
	ctx := context.Background()
	api := live.client.AdmissionregistrationV1()
	opts := metav1.ListOptions{LabelSelector: policysync.SetLabel}
	var objs []metav1.Object
	mutating, err := api.MutatingAdmissionPolicies().List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range mutating.Items {
		objs = append(objs, &mutating.Items[i])
	}
	mapBindings, err := api.MutatingAdmissionPolicyBindings().List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range mapBindings.Items {
		objs = append(objs, &mapBindings.Items[i])
	}
	vaps, err := api.ValidatingAdmissionPolicies().List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range vaps.Items {
		objs = append(objs, &vaps.Items[i])
	}
	vapBindings, err := api.ValidatingAdmissionPolicyBindings().List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range vapBindings.Items {
		objs = append(objs, &vapBindings.Items[i])
	}
	if sources == "" {
		if len(objs) > 0 {
			return fmt.Sprintf("nothing compiled, and %d of the mode's policies and bindings are left", len(objs))
		}
		return ""
	}
	if len(objs) == 0 {
		return "no policy carries the compiled sources yet"
	}
	hash := objs[0].GetLabels()[policysync.SetLabel]
	for _, o := range objs {
		a := o.GetAnnotations()
		switch {
		case o.GetLabels()[policysync.SetLabel] != hash:
			return fmt.Sprintf("%s is of set %s, another of set %s", o.GetName(), o.GetLabels()[policysync.SetLabel], hash)
		case a[policysync.ObjectsAnnotation] != strconv.Itoa(len(objs)):
			return fmt.Sprintf("%s says its set has %s objects, %d are stored", o.GetName(), a[policysync.ObjectsAnnotation], len(objs))
		case a[policysync.SourcesAnnotation] != sources:
			return fmt.Sprintf("%s carries %q, want %q", o.GetName(), a[policysync.SourcesAnnotation], sources)
		}
	}
	return ""
}

// heldFor is a refusal's reason without what names the one source (its
// values, its name, another source's name), so that alike reasons count
// together: the field and the kind of reason.
func heldFor(reason string) string {
	field, rest, ok := strings.Cut(reason, ": ")
	if !ok {
		return reason
	}
	kind, _, _ := strings.Cut(rest, ":")
	return field + ": " + kind
}
