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

package locationmutator

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/component-base/metrics/testutil"

	"github.com/admitkit/admitkit/plugin/internal/warnlimit"
	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// inMode puts the mode annotation on a manifest whose metadata is written
// `metadata: {name: ...}`.
func inMode(manifest string, mode mutation.Mode) string {
	i := strings.Index(manifest, "metadata: {")
	if i < 0 {
		return "the manifest has no inline metadata"
	}
	i += len("metadata: {")
	return manifest[:i] + "annotations: {" + mutation.ModeAnnotation + ": " + string(mode) + "}, " + manifest[i:]
}

func unenforcedValues(t *testing.T) map[string]float64 {
	t.Helper()
	values := map[string]float64{}
	for _, mode := range []mutation.Mode{mutation.ModeWarn, mutation.ModeAudit} {
		v, err := testutil.GetCounterMetricValue(unenforcedChanges.WithLabelValues(string(mode)))
		if err != nil {
			t.Fatal(err)
		}
		values[string(mode)] = v
	}
	return values
}

const (
	// stringPort writes a string key into an integer field: the object
	// no longer decodes, which refuses it.
	stringPort = `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: string-port}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: 'spec.containers[name: proxy].ports[containerPort: "9090"].protocol'
  parameters: {assign: {value: TCP}}`
	// pullForOwned selects the label ownerLabel adds.
	pullForOwned = `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: pull-owned}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {labelSelector: {matchLabels: {owner: platform}}}
  location: "spec.containers[name:*].imagePullPolicy"
  parameters: {assign: {value: Never}}`
)

// stringPortRefusal is how stringPort refuses threeContainerPod.
const stringPortRefusal = `pods "web" is forbidden: LocationMutator: Pod prod/web: Assign/string-port "spec.containers[name: proxy].ports[containerPort: \"9090\"].protocol": spec.containers[name: proxy].ports[containerPort: "9090"] cannot be created: key containerPort: "9090" does not fit in a field of type int32`

const wantPullWarning = `Assign "always-pull" is in Warn mode; enforced, it would set spec.containers[name: *].imagePullPolicy to "Always" in Pod prod/web`

func TestUnenforcedMutators(t *testing.T) {
	owned := func(pod *corev1.Pod) { pod.Labels["owner"] = "platform" }
	pullAll := func(policy corev1.PullPolicy) func(*corev1.Pod) {
		return func(pod *corev1.Pod) {
			for i := range pod.Spec.Containers {
				pod.Spec.Containers[i].ImagePullPolicy = policy
			}
		}
	}
	cases := []unenforcedCase{
		{name: "warn", mutators: []string{inMode(pullAlways, mutation.ModeWarn)},
			wantWarnings: []string{wantPullWarning},
			wantAudit:    `Assign/always-pull (Warn) would set spec.containers[name: *].imagePullPolicy to "Always"`,
			wantCounts:   map[string]float64{"Warn": 1}},
		{name: "warn, unstructured", mutators: []string{inMode(pullAlways, mutation.ModeWarn)},
			obj:          func(tb testing.TB, pod *corev1.Pod) runtime.Object { return asUnstructured(tb, pod) },
			wantWarnings: []string{wantPullWarning},
			wantAudit:    `Assign/always-pull (Warn) would set spec.containers[name: *].imagePullPolicy to "Always"`,
			wantCounts:   map[string]float64{"Warn": 1}},
		{name: "audit", mutators: []string{inMode(pullAlways, mutation.ModeAudit)},
			wantAudit:  `Assign/always-pull (Audit) would set spec.containers[name: *].imagePullPolicy to "Always"`,
			wantCounts: map[string]float64{"Audit": 1}},
		{name: "Enforce is the mode without the annotation", mutators: []string{inMode(pullAlways, mutation.ModeEnforce)},
			want: pullAll(corev1.PullAlways), wantApplied: "Assign/always-pull"},
		{name: "enforced ones still apply", mutators: []string{ownerLabel, inMode(pullAlways, mutation.ModeWarn)},
			want: owned, wantApplied: "AssignMetadata/owner",
			wantWarnings: []string{wantPullWarning},
			wantAudit:    `Assign/always-pull (Warn) would set spec.containers[name: *].imagePullPolicy to "Always"`,
			wantCounts:   map[string]float64{"Warn": 1}},
		{name: "no change is not reported", mutators: []string{pullAlways, inMode(strings.Replace(pullAlways, "always-pull", "pull-again", 1), mutation.ModeWarn)},
			want: pullAll(corev1.PullAlways), wantApplied: "Assign/always-pull"},
		{name: "not matching", mutators: []string{inMode(pullAlways, mutation.ModeWarn)}, namespace: "kube-system"},
		{name: "matching only what the enforced ones made", mutators: []string{ownerLabel, inMode(pullForOwned, mutation.ModeAudit)},
			want: owned, wantApplied: "AssignMetadata/owner",
			wantAudit:  `Assign/pull-owned (Audit) would set spec.containers[name: *].imagePullPolicy to "Never"`,
			wantCounts: map[string]float64{"Audit": 1}},
		{name: "a trial's refusal is reported, not made", mutators: []string{ownerLabel, inMode(stringPort, mutation.ModeWarn)},
			want: owned, wantApplied: "AssignMetadata/owner",
			wantWarnings: []string{`Assign "string-port" is in Warn mode; enforced, it would refuse Pod prod/web: ` + stringPortRefusal},
			wantAudit:    `Assign/string-port (Warn) would refuse it: ` + stringPortRefusal,
			wantCounts:   map[string]float64{"Warn": 1}},
		{name: "the enforced ones' refusal is the request's", mutators: []string{stringPort, inMode(pullAlways, mutation.ModeWarn)},
			wantErr: stringPortRefusal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runUnenforcedCase(t, tc) })
	}
}

// unenforcedCase is a case of TestUnenforcedMutators.
type unenforcedCase struct {
	name      string
	mutators  []string
	obj       func(testing.TB, *corev1.Pod) runtime.Object // the pod as sent
	namespace string
	// want changes the pod as sent into the admitted one.
	want         func(*corev1.Pod)
	wantErr      string
	wantWarnings []string
	wantAudit    string
	wantApplied  string
	wantCounts   map[string]float64
}

// runUnenforcedCase admits threeContainerPod with tc's mutators, through
// the reinvocation tester, which runs the plugin again on the same request:
// it must report nothing more.
func runUnenforcedCase(t *testing.T, tc unenforcedCase) {
	p := newTestPlugin(t, config(tc.mutators...))
	p.mutationAnnotations = true
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	sent := threeContainerPod()
	if tc.namespace != "" {
		sent.Namespace = tc.namespace
	}
	var obj runtime.Object = sent.DeepCopy()
	if tc.obj != nil {
		obj = tc.obj(t, sent.DeepCopy())
	}
	a := record(attrs(obj, podGVK, podGVR, sent.Namespace, sent.Name, admission.Create, ""))
	warnings := &warningRecorder{}
	ctx := warning.WithWarningRecorder(context.Background(), warnings)
	before := unenforcedValues(t)
	err := admissiontesting.WithReinvocationTesting(t, p).Admit(ctx, a, o)
	if tc.wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Fatalf("Admit: %v, want an error containing %q", err, tc.wantErr)
		}
		if len(warnings.seen) != 0 || a.annotations[UnenforcedAnnotationKey] != "" {
			t.Errorf("a refused request reported %v, %q", warnings.seen, a.annotations[UnenforcedAnnotationKey])
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}

	checkUnenforcedOutcome(t, tc, sent, obj, a, warnings.seen, before)
}

// checkUnenforcedOutcome compares the admitted obj with the pod as sent
// changed by tc.want, and the annotations, warnings and counts with tc's.
func checkUnenforcedOutcome(t *testing.T, tc unenforcedCase, sent *corev1.Pod, obj runtime.Object, a *recorder, warnings []string, before map[string]float64) {
	t.Helper()
	got, typed := obj.(*corev1.Pod)
	if !typed {
		got = asPod(t, obj)
	}
	want := sent.DeepCopy()
	if tc.want != nil {
		tc.want(want)
	}
	delete(got.Annotations, MutationIDAnnotation)
	if applied := got.Annotations[MutationsAnnotation]; (applied != "") != (tc.wantApplied != "") {
		t.Errorf("%s = %q, want it only on a pod an enforced mutator changed", MutationsAnnotation, applied)
	}
	delete(got.Annotations, MutationsAnnotation)
	if len(got.Annotations) == 0 {
		got.Annotations = nil
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("admitted pod (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := a.annotations[AnnotationKey]; got != tc.wantApplied {
		t.Errorf("%s = %q, want %q", AnnotationKey, got, tc.wantApplied)
	}
	if got := a.annotations[UnenforcedAnnotationKey]; got != tc.wantAudit {
		t.Errorf("%s = %q, want %q", UnenforcedAnnotationKey, got, tc.wantAudit)
	}
	if diff := cmp.Diff(tc.wantWarnings, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	wantCounts := tc.wantCounts
	if wantCounts == nil {
		wantCounts = map[string]float64{}
	}
	if diff := cmp.Diff(wantCounts, delta(before, unenforcedValues(t))); diff != "" {
		t.Errorf("%s changes (-want +got):\n%s", "unenforced_changes_total", diff)
	}
}

// TestUnenforcedBounds: a client gets at most five warnings per object,
// then one pointing at the audit log, which has every mutator.
func TestUnenforcedBounds(t *testing.T) {
	var mutators []string
	var wantAudit []string
	for i := range 7 {
		name := fmt.Sprintf("label-%d", i)
		mutators = append(mutators, inMode(strings.NewReplacer("{name: owner}", "{name: "+name+"}", "labels.owner", "labels."+name).Replace(ownerLabel), mutation.ModeWarn))
		wantAudit = append(wantAudit, fmt.Sprintf(`AssignMetadata/%s (Warn) would set metadata.labels.%s to "platform"`, name, name))
	}
	mutators = append(mutators, inMode(strings.Replace(pullAlways, `{value: Always}`, `{value: "`+strings.Repeat("x", 500)+`"}`, 1), mutation.ModeWarn))
	p := newTestPlugin(t, config(mutators...))
	pod := threeContainerPod()
	a := record(attrs(pod, podGVK, podGVR, pod.Namespace, pod.Name, admission.Create, ""))
	warnings := &warningRecorder{}
	if err := p.Admit(warning.WithWarningRecorder(context.Background(), warnings), a, admission.NewObjectInterfacesFromScheme(testScheme(t))); err != nil {
		t.Fatal(err)
	}
	if len(warnings.seen) != warnlimit.Max+1 || warnings.seen[warnlimit.Max] != "more mutators in Warn mode would change Pod prod/web: the audit log lists them" {
		t.Fatalf("warnings %q, want %d and one pointing at the audit log", warnings.seen, warnlimit.Max)
	}
	for _, w := range warnings.seen {
		if len(w) > 300 {
			t.Errorf("a warning of %d bytes: %q", len(w), w)
		}
	}
	audit := strings.Split(a.annotations[UnenforcedAnnotationKey], "; ")
	if len(audit) != 8 || !strings.HasPrefix(audit[0], `Assign/always-pull (Warn) would set spec.containers[name: *].imagePullPolicy to "xxx`) || !strings.HasSuffix(audit[0], `xxx...`) {
		t.Fatalf("audit annotation %q, want every mutator, the long value cut", audit)
	}
	if diff := cmp.Diff(wantAudit, audit[1:]); diff != "" {
		t.Errorf("audit annotation (-want +got):\n%s", diff)
	}
}

// TestUnenforcedReportedOnce: the first invocation that finds something to
// report is the only one that reports, however often kube-apiserver
// reinvokes the plugin.
func TestUnenforcedReportedOnce(t *testing.T) {
	p := newTestPlugin(t, config(pullAlways, inMode(pullForOwned, mutation.ModeWarn)))
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	pod := threeContainerPod()
	a := record(attrs(pod, podGVK, podGVR, pod.Namespace, pod.Name, admission.Create, ""))
	warnings := &warningRecorder{}
	ctx := warning.WithWarningRecorder(context.Background(), warnings)
	before := unenforcedValues(t)
	if err := p.Admit(ctx, a, o); err != nil {
		t.Fatal(err)
	}
	if len(warnings.seen) != 0 {
		t.Fatalf("warned %q before anything matched", warnings.seen)
	}
	// A policy adds the label pull-owned selects; kube-apiserver runs the
	// plugin again, and again.
	pod.Labels["owner"] = "platform"
	for range 2 {
		a.GetReinvocationContext().SetIsReinvoke()
		if err := p.Admit(ctx, a, o); err != nil {
			t.Fatal(err)
		}
	}
	if len(warnings.seen) != 1 || !strings.Contains(warnings.seen[0], `Assign "pull-owned" is in Warn mode`) {
		t.Errorf("warnings %q, want one for pull-owned", warnings.seen)
	}
	if diff := cmp.Diff(map[string]float64{"Warn": 1}, delta(before, unenforcedValues(t))); diff != "" {
		t.Errorf("unenforced_changes_total changes (-want +got):\n%s", diff)
	}
	if pullPolicy(pod) != corev1.PullAlways {
		t.Errorf("pull policy %q, want the enforced Always", pullPolicy(pod))
	}
}

// TestUnenforcedConfig: a bad mode stops start-up naming the annotation.
func TestUnenforcedConfig(t *testing.T) {
	_, err := systemFromConfig(strings.NewReader(config(inMode(pullAlways, "DryRun"))))
	if err == nil || !strings.Contains(err.Error(), `Assign "always-pull": metadata.annotations[locationmutator.admission.admitkit.io/mode]: Unsupported value: "DryRun"`) {
		t.Fatalf("systemFromConfig: %v, want the mode annotation named", err)
	}
	// A Warn mutator still takes part in the conflict check.
	asMap := strings.Replace(strings.Replace(pullAlways, "always-pull", "as-map", 1), "spec.containers[name:*].imagePullPolicy", "spec.containers.app.imagePullPolicy", 1)
	_, err = systemFromConfig(strings.NewReader(config(inMode(pullAlways, mutation.ModeWarn), inMode(asMap, mutation.ModeAudit))))
	if err == nil || !strings.Contains(err.Error(), "as-map") {
		t.Fatalf("systemFromConfig of two conflicting unenforced mutators: %v, want the conflict", err)
	}
}

// TestLiveMode: a mutator from the API in Warn mode is not enforced and its
// status says so; switching the annotation (which leaves the generation
// as it is) to Enforce enforces it; a bad mode is invalid.
func TestLiveMode(t *testing.T) {
	f := newLiveFixture(t, nil)
	f.waitSynced()
	u := f.object(inMode(pullAlways, mutation.ModeWarn), time.Now())
	f.create(u)
	f.eventually("the Warn mutator's status entry", func() bool {
		e, ok := f.entry(mutationsv1.KindAssign, "always-pull")
		return ok && len(e.Errors) == 1
	})
	e, _ := f.entry(mutationsv1.KindAssign, "always-pull")
	want := []mutationsv1.MutatorError{{Type: "Mode", Message: "mode Warn: not enforced, changes are reported only, in admission warnings and the audit log"}}
	if e.Enforced || !cmp.Equal(e.Errors, want) || e.ObservedGeneration != 1 {
		t.Fatalf("status entry %+v, want enforced false and %+v", e, want)
	}
	if pod, err := f.admitPod(); err != nil || pullPolicy(pod) != "" {
		t.Fatalf("a Warn mutator changed the pull policy to %q (error %v)", pullPolicy(pod), err)
	}

	u = f.get(mutationsv1.KindAssign, "always-pull")
	u.SetAnnotations(map[string]string{mutation.ModeAnnotation: string(mutation.ModeEnforce)})
	if _, err := f.client.Resource(gvrOf(mutationsv1.KindAssign)).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the mutator switched to Enforce applies", func() bool { pod, _ := f.admitPod(); return pullPolicy(pod) == corev1.PullAlways })
	f.eventually("its status entry says enforced", func() bool {
		e, ok := f.entry(mutationsv1.KindAssign, "always-pull")
		return ok && e.Enforced && len(e.Errors) == 0
	})

	u = f.get(mutationsv1.KindAssign, "always-pull")
	u.SetAnnotations(map[string]string{mutation.ModeAnnotation: "warn"})
	if _, err := f.client.Resource(gvrOf(mutationsv1.KindAssign)).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the bad mode's status entry", func() bool {
		e, ok := f.entry(mutationsv1.KindAssign, "always-pull")
		return ok && !e.Enforced && len(e.Errors) == 1 && e.Errors[0].Type == errorTypeInvalid &&
			strings.Contains(e.Errors[0].Message, `metadata.annotations[locationmutator.admission.admitkit.io/mode]: Unsupported value: "warn"`)
	})
	if pod, err := f.admitPod(); err != nil || pullPolicy(pod) != "" {
		t.Fatalf("an invalid mutator changed the pull policy to %q (error %v)", pullPolicy(pod), err)
	}

	// Apply-time validation refuses the bad mode, and a mutator conflicting
	// with one in Warn mode.
	for _, tc := range []struct{ manifest, wantField string }{
		{inMode(ownerLabel, "Dry"), "metadata.annotations[locationmutator.admission.admitkit.io/mode]"},
		{strings.Replace(strings.Replace(pullAlways, "always-pull", "as-map", 1), "spec.containers[name:*].imagePullPolicy", "spec.containers.app.imagePullPolicy", 1), "conflicts with Assign/warn-pull"},
	} {
		if tc.wantField != "" && strings.Contains(tc.wantField, "warn-pull") {
			f.create(f.object(inMode(strings.Replace(pullAlways, "always-pull", "warn-pull", 1), mutation.ModeWarn), time.Now()))
			f.eventually("the Warn mutator is in the system", func() bool {
				e, ok := f.entry(mutationsv1.KindAssign, "warn-pull")
				return ok && len(e.Errors) == 1 && e.Errors[0].Type == "Mode"
			})
		}
		obj := f.object(tc.manifest, time.Now())
		gvk := schema.GroupVersionKind{Group: mutationsv1.Group, Version: "v1", Kind: obj.GetKind()}
		err := f.plugin.Validate(context.Background(), attrs(obj, gvk, gvrOf(obj.GetKind()), "", obj.GetName(), admission.Create, ""), f.objects)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantField) {
			t.Errorf("Validate: %v, want 422 Invalid naming %s", err, tc.wantField)
		}
	}
}

// TestUnenforcedCostsNothingOtherwise: a system without mutators in Warn or
// Audit mode runs the candidates as it always did.
func TestUnenforcedCostsNothingOtherwise(t *testing.T) {
	p := newTestPlugin(t, config(pullAlways))
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	pod := threeContainerPod()
	a := attrs(pod, podGVK, podGVR, pod.Namespace, pod.Name, admission.Create, "")
	if p.current.Load().HasUnenforced() {
		t.Fatal("a system of enforced mutators says it has unenforced ones")
	}
	withWarn := newTestPlugin(t, config(pullAlways, inMode(strings.Replace(ownerLabel, "kinds: [Pod]", "kinds: [Service]", 1), mutation.ModeWarn)))
	allocs, allocsWithWarn := admitAllocations(t, p, a, o), admitAllocations(t, withWarn, a, o)
	// The AssignMetadata binds to every kind: it is a candidate, tried
	// only when it matches, which a Service selector never does for a pod.
	if allocsWithWarn > allocs+2 {
		t.Errorf("a Warn mutator that does not match costs %v allocations per request, against %v without it", allocsWithWarn, allocs)
	}
}

// admitAllocations is what p.Admit allocates for a: averaged over many
// requests, or, under the race detector, whose sync.Pool drops a scratch
// now and then (checkAllocations), the least of many single requests:
// one whose scratch came from the pool, as every request's does without
// the race detector.
func admitAllocations(t *testing.T, p *Plugin, a admission.Attributes, o admission.ObjectInterfaces) float64 {
	t.Helper()
	pod := a.GetObject().(*corev1.Pod)
	run := func(int) error {
		pod.Spec.Containers[0].ImagePullPolicy = ""
		return p.Admit(context.Background(), a, o)
	}
	if err := run(0); err != nil {
		t.Fatal(err)
	}
	if raceDetector {
		least := math.Inf(1)
		for range 50 {
			least = min(least, testing.AllocsPerRun(1, func() { _ = run(0) }))
		}
		return least
	}
	return testing.AllocsPerRun(100, func() { _ = run(0) })
}

// TestUnenforcedInternalObject: kube-apiserver's internal pod is tried on
// copies and left as the enforced mutators made it.
func TestUnenforcedInternalObject(t *testing.T) {
	p := newTestPlugin(t, config(ownerLabel, inMode(pullAlways, mutation.ModeAudit)))
	var counts conversions
	o := admission.NewObjectInterfacesFromScheme(internalScheme(t, &counts))
	pod := &internalPod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"},
		Containers: []internalContainer{{Name: "app", Image: "nginx:1"}},
	}
	a := record(attrs(pod, podGVK, podGVR, "prod", "web", admission.Create, ""))
	if err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), a, o); err != nil {
		t.Fatal(err)
	}
	got := a.GetObject().(*internalPod)
	if got.Containers[0].PullPolicy != "" || got.Labels["owner"] != "platform" {
		t.Errorf("admitted %+v, want the owner label and no pull policy", got)
	}
	if want := `Assign/always-pull (Audit) would set spec.containers[name: *].imagePullPolicy to "Always"`; a.annotations[UnenforcedAnnotationKey] != want {
		t.Errorf("%s = %q, want %q", UnenforcedAnnotationKey, a.annotations[UnenforcedAnnotationKey], want)
	}
}

// BenchmarkAdmitUnenforced is the price of a trial: a pod the enforced
// always-pull changes, with a Warn mutator that matches it (a trial per
// request) and one that does not (none).
func BenchmarkAdmitUnenforced(b *testing.B) {
	o := admission.NewObjectInterfacesFromScheme(testScheme(b))
	for _, bc := range []struct {
		name     string
		mutators []string
	}{
		{"enforced only", []string{pullAlways}},
		{"a Warn mutator matching", []string{pullAlways, inMode(ownerLabel, mutation.ModeWarn)}},
		{"a Warn mutator not matching", []string{pullAlways, inMode(strings.Replace(ownerLabel, "kinds: [Pod]", "kinds: [Service]", 1), mutation.ModeWarn)}},
	} {
		p := newTestPlugin(b, config(bc.mutators...))
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pod := threeContainerPod()
				if err := p.Admit(context.Background(), attrs(pod, podGVK, podGVR, "prod", "web", admission.Create, ""), o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fuzzMutators are the mutators FuzzUnenforcedChangesNothing puts in
// random modes: one that adds a label others select, one selecting it,
// one that refuses the pod, and one of every other kind.
var fuzzMutators = []string{
	pullAlways,
	ownerLabel,
	pullForOwned,
	stringPort,
	`apiVersion: mutations.gatekeeper.sh/v1
kind: ModifySet
metadata: {name: verbose}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.containers[name:*].args"
  parameters: {values: {fromList: ["-v=4"]}}`,
	`apiVersion: mutations.gatekeeper.sh/v1alpha1
kind: AssignImage
metadata: {name: mirror}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.containers[name:*].image"
  parameters: {assignDomain: mirror.example.com}`,
}

// FuzzUnenforcedChangesNothing checks that mutators in Warn or Audit mode
// never change what admission does: a plugin with them admits the same
// object, or refuses it with the same error, as one with the enforced
// mutators alone.
func FuzzUnenforcedChangesNothing(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0}, true, false)
	f.Add([]byte{1, 0, 2, 0, 1, 2}, false, false)
	f.Add([]byte{0, 0, 1, 1, 0, 0}, true, true)
	f.Add([]byte{2, 1, 1, 0, 1, 1}, false, true)
	modes := []mutation.Mode{mutation.ModeEnforce, mutation.ModeWarn, mutation.ModeAudit, ""}
	o := admission.NewObjectInterfacesFromScheme(testScheme(f))
	f.Fuzz(func(t *testing.T, choice []byte, withProxy, unstructured bool) {
		var all, enforcedOnly []string
		for i, m := range fuzzMutators {
			var c byte
			if i < len(choice) {
				c = choice[i]
			}
			switch mode := modes[int(c)%len(modes)]; mode {
			case "": // left out
			case mutation.ModeEnforce:
				all = append(all, m)
				enforcedOnly = append(enforcedOnly, m)
			default:
				all = append(all, inMode(m, mode))
			}
		}
		admit := func(mutators []string) (runtime.Object, error) {
			pod := threeContainerPod()
			if !withProxy {
				pod.Spec.Containers = pod.Spec.Containers[:1]
			}
			var obj runtime.Object = pod
			if unstructured {
				obj = asUnstructured(t, pod)
			}
			p := newTestPlugin(t, config(mutators...))
			err := p.Admit(context.Background(), attrs(obj, podGVK, podGVR, "prod", "web", admission.Create, ""), o)
			return obj, err
		}
		if len(all) == 0 {
			return
		}
		got, gotErr := admit(all)
		want, wantErr := admit(enforcedOnly)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("with unenforced mutators: error %v, with the enforced ones alone: %v", gotErr, wantErr)
		}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("with unenforced mutators the object differs (-enforced only +with them):\n%s", cmp.Diff(want, got))
		}
	})
}
