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

package policysync

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsfake "github.com/admitkit/admitkit/generated/clientset/versioned/fake"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// fakeCompile stands in for compiler.Compile, so that these tests hold
// whatever the compiler's halves compile: a PodPreset named ok-* compiles
// into one policy that records its resourceVersion, as a compiled preset
// records it on the pods it changes; every other object is refused.
func fakeCompile(src compiler.Sources) compiler.Result {
	var r compiler.Result
	var exprs []string
	for _, p := range src.PodPresets {
		s := compiler.Source{Kind: podPresetKind, Namespace: p.Namespace, Name: p.Name}
		if !strings.HasPrefix(p.Name, "ok") {
			r.Refused = append(r.Refused, compiler.Refusal{Source: s, Errs: field.ErrorList{field.Invalid(field.NewPath("spec", "env"), "x", "cannot be said in CEL")}})
			continue
		}
		r.Compiled = append(r.Compiled, s)
		exprs = append(exprs, fmt.Sprintf("%q", p.Namespace+"/"+p.Name+"@"+p.ResourceVersion))
	}
	for _, m := range src.Mutators {
		r.Refused = append(r.Refused, compiler.Refusal{Source: compiler.Source{Kind: m.ID().Kind, Name: m.ID().Name}, Errs: field.ErrorList{field.Forbidden(field.NewPath("spec"), "not in this test")}})
	}
	if len(exprs) > 0 {
		r.MutatingPolicies = []admissionregistrationv1.MutatingAdmissionPolicy{{
			ObjectMeta: metav1.ObjectMeta{Name: "admitkit-podpresets"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				MatchConstraints:   &admissionregistrationv1.MatchResources{},
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "[" + strings.Join(exprs, ",") + "]"}}},
			},
		}}
		r.MutatingBindings = []admissionregistrationv1.MutatingAdmissionPolicyBinding{{
			ObjectMeta: metav1.ObjectMeta{Name: "admitkit-podpresets"},
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "admitkit-podpresets"},
		}}
	}
	return r
}

func preset(ns, name string) *settingsv1alpha1.PodPreset {
	return &settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", UID: types.UID("uid-" + ns + "-" + name)}}
}

var mutatorListKinds = func() map[schema.GroupVersionResource]string {
	out := map[schema.GroupVersionResource]string{}
	for _, k := range mutation.Kinds {
		out[k.GVR()] = k.Name + "List"
	}
	return out
}()

type fixture struct {
	kube     *kubefake.Clientset
	settings *settingsfake.Clientset
	dynamic  *dynamicfake.FakeDynamicClient
	policies informers.SharedInformerFactory
	ctrl     *Controller
	rv       atomic.Int64
}

// newFixture builds a controller over fakes holding objs; a merge patch of
// a preset's annotations bumps its resourceVersion, as the API server does.
func newFixture(t *testing.T, mutators []runtime.Object, presets ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{
		kube:     kubefake.NewClientset(),
		settings: settingsfake.NewClientset(presets...),
		dynamic:  dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), mutatorListKinds, mutators...),
	}
	f.rv.Store(100)
	f.settings.PrependReactor("patch", "podpresets", f.patchPreset)
	f.policies = NewPolicyInformers(f.kube)
	var err error
	f.ctrl, err = New(Options{Kube: f.kube, Settings: f.settings, Dynamic: f.dynamic, Policies: f.policies, Compile: fakeCompile, Debounce: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) patchPreset(action clienttesting.Action) (bool, runtime.Object, error) {
	pa := action.(clienttesting.PatchAction)
	gvr := settingsv1alpha1.SchemeGroupVersion.WithResource("podpresets")
	obj, err := f.settings.Tracker().Get(gvr, pa.GetNamespace(), pa.GetName())
	if err != nil {
		return true, nil, err
	}
	p := obj.(*settingsv1alpha1.PodPreset).DeepCopy()
	var patch struct {
		Metadata struct {
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(pa.GetPatch(), &patch); err != nil {
		return true, nil, err
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	for k, v := range patch.Metadata.Annotations {
		if v == nil {
			delete(p.Annotations, k)
		} else {
			p.Annotations[k] = *v
		}
	}
	p.ResourceVersion = strconv.FormatInt(f.rv.Add(1), 10)
	return true, p, f.settings.Tracker().Update(gvr, p, p.Namespace)
}

func (f *fixture) start(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.ctrl.start(ctx.Done())
	f.policies.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), f.ctrl.synced...) {
		t.Fatal("caches never synced")
	}
	return ctx
}

// writes counts the requests that changed something.
func (f *fixture) writes() int {
	n := 0
	for _, a := range append(f.kube.Actions(), f.settings.Actions()...) {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			if a.GetResource().Resource != "events" {
				n++
			}
		}
	}
	return n
}

// caughtUp waits until the controller's caches hold what the fakes hold.
func (f *fixture) caughtUp(t *testing.T, ctx context.Context) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		presets, err := f.settings.Tracker().List(settingsv1alpha1.SchemeGroupVersion.WithResource("podpresets"),
			settingsv1alpha1.SchemeGroupVersion.WithKind("PodPreset"), "")
		if err != nil {
			return false, err
		}
		cachedAll, err := f.ctrl.podPresets.List(labels.Everything())
		if err != nil || len(cachedAll) != len(presets.(*settingsv1alpha1.PodPresetList).Items) {
			return false, err
		}
		for _, p := range presets.(*settingsv1alpha1.PodPresetList).Items {
			cached, err := f.ctrl.podPresets.PodPresets(p.Namespace).Get(p.Name)
			if err != nil || cached.ResourceVersion != p.ResourceVersion {
				return false, nil
			}
		}
		// Every kind's informer, in policyInformers' order: a binding
		// the cache has not seen yet would be applied again.
		v1 := f.kube.AdmissionregistrationV1()
		opts := metav1.ListOptions{LabelSelector: SetLabel}
		lists := []func() (runtime.Object, error){
			func() (runtime.Object, error) { return v1.MutatingAdmissionPolicyBindings().List(ctx, opts) },
			func() (runtime.Object, error) { return v1.ValidatingAdmissionPolicyBindings().List(ctx, opts) },
			func() (runtime.Object, error) { return v1.MutatingAdmissionPolicies().List(ctx, opts) },
			func() (runtime.Object, error) { return v1.ValidatingAdmissionPolicies().List(ctx, opts) },
		}
		for i, list := range lists {
			listed, err := list()
			if err != nil {
				return false, err
			}
			items, err := meta.ExtractList(listed)
			if err != nil {
				return false, err
			}
			store := f.ctrl.policies[i].GetStore()
			if len(store.List()) != len(items) {
				return false, nil
			}
			for _, item := range items {
				want := item.(metav1.Object)
				cached, ok, _ := store.GetByKey(want.GetName())
				if !ok || cached.(metav1.Object).GetResourceVersion() != want.GetResourceVersion() ||
					!maps.Equal(cached.(metav1.Object).GetAnnotations(), want.GetAnnotations()) {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the caches did not catch up: %v", err)
	}
}

// TestSyncConverges: a pass annotates the sources and stops, the next
// applies the policies compiled from the sources as annotated, and the
// one after writes nothing, although the annotations changed the
// resourceVersion the policy records.
func TestSyncConverges(t *testing.T) {
	f := newFixture(t, nil, preset("team", "ok-env"), preset("team", "refused"))
	ctx := f.start(t)

	var perPass []int
	for range 4 {
		before := f.writes()
		if err := f.ctrl.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		perPass = append(perPass, f.writes()-before)
		f.caughtUp(t, ctx)
	}
	// Two annotations; a policy and its binding; nothing; nothing.
	if want := []int{2, 2, 0, 0}; !slices.Equal(perPass, want) {
		t.Fatalf("writes per pass = %v, want %v", perPass, want)
	}

	ok, err := f.settings.SettingsV1alpha1().PodPresets("team").Get(ctx, "ok-env", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok.Annotations[CompiledAnnotation] != "true" || ok.Annotations[NotCompiledAnnotation] != "" {
		t.Errorf("ok-env's annotations = %v, want compiled", ok.Annotations)
	}
	refused, err := f.settings.SettingsV1alpha1().PodPresets("team").Get(ctx, "refused", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refused.Annotations[CompiledAnnotation] != "false" || !strings.Contains(refused.Annotations[NotCompiledAnnotation], "spec.env") {
		t.Errorf("refused's annotations = %v, want not compiled with the field", refused.Annotations)
	}

	policy, err := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, "admitkit-podpresets", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := policy.Spec.Mutations[0].ApplyConfiguration.Expression, fmt.Sprintf("[%q]", "team/ok-env@"+ok.ResourceVersion); got != want {
		t.Errorf("the policy compiles %s, want the preset as annotated, %s", got, want)
	}
	if got, want := policy.Annotations[SourcesAnnotation], "PodPreset team/ok-env@"+ok.ResourceVersion; got != want {
		t.Errorf("%s = %q, want %q", SourcesAnnotation, got, want)
	}
	binding, err := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Get(ctx, "admitkit-podpresets", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []metav1.Object{policy, binding} {
		if m.GetLabels()[SetLabel] == "" || m.GetLabels()[SetLabel] != policy.Labels[SetLabel] || m.GetAnnotations()[ObjectsAnnotation] != "2" {
			t.Errorf("%s: labels %v, annotations %v: want one set of 2", m.GetName(), m.GetLabels(), m.GetAnnotations())
		}
		if !slices.ContainsFunc(m.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
			return e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationApply
		}) {
			t.Errorf("%s was not server-side-applied by %q: %v", m.GetName(), FieldManager, m.GetManagedFields())
		}
	}

	events, err := f.kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err == nil && len(events.Items) == 0 {
		// The recorder writes in the background.
		err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			events, err = f.kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
			return err == nil && len(events.Items) >= 2, err
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, e := range events.Items {
		reasons[e.InvolvedObject.Name] = e.Type + " " + e.Reason + ": " + e.Message
	}
	if !strings.HasPrefix(reasons["ok-env"], corev1.EventTypeNormal+" Compiled") || !strings.HasPrefix(reasons["refused"], corev1.EventTypeWarning+" NotCompiled") ||
		!strings.Contains(reasons["refused"], "spec.env") {
		t.Errorf("Events = %v", reasons)
	}
}

// TestSyncFollowsEditsAndDeletes: an edit recompiles, a preset that stops
// compiling leaves the set, and when nothing compiles the mode's objects
// go, but never an object without its label.
func TestSyncFollowsEditsAndDeletes(t *testing.T) {
	someoneElses := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Labels: map[string]string{ManagedByLabel: "admitkit"}}}
	f := newFixture(t, nil, preset("team", "ok-a"), preset("team", "ok-b"))
	if _, err := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(context.Background(), someoneElses, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx := f.start(t)
	settle := func() {
		t.Helper()
		for range 3 {
			if err := f.ctrl.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			f.caughtUp(t, ctx)
		}
	}
	settle()
	sources := func() string {
		p, err := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, "admitkit-podpresets", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		parsed, err := parseSources(p.Annotations[SourcesAnnotation])
		if err != nil {
			return err.Error()
		}
		var names []string
		for _, s := range parsed {
			names = append(names, s.Name)
		}
		return strings.Join(names, ",")
	}
	if got := sources(); got != "ok-a,ok-b" {
		t.Fatalf("carried %q, want ok-a,ok-b", got)
	}

	// ok-b is deleted: the set carries ok-a alone.
	if err := f.settings.SettingsV1alpha1().PodPresets("team").Delete(ctx, "ok-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.caughtUp(t, ctx)
	settle()
	if got := sources(); got != "ok-a" {
		t.Fatalf("after ok-b's delete, carried %q, want ok-a", got)
	}

	// ok-a is deleted: nothing compiles, and the mode's objects go.
	if err := f.settings.SettingsV1alpha1().PodPresets("team").Delete(ctx, "ok-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.caughtUp(t, ctx)
	settle()
	maps, err := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(maps.Items) != 1 || maps.Items[0].Name != "theirs" {
		t.Errorf("policies left: %v, want only theirs", maps.Items)
	}
	bindings, err := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(bindings.Items) != 0 {
		t.Errorf("bindings left: %v", bindings.Items)
	}
}

// TestSyncMutators: a mutator its decoder refuses is annotated with the
// decoder's reason, and one the compiler refuses with the compiler's.
func TestSyncMutators(t *testing.T) {
	valid := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "mutations.gatekeeper.sh/v1", "kind": "Assign",
		"metadata": map[string]any{"name": "valid", "resourceVersion": "1"},
		"spec": map[string]any{
			"applyTo":    []any{map[string]any{"groups": []any{""}, "versions": []any{"v1"}, "kinds": []any{"Pod"}}},
			"location":   "spec.priority",
			"parameters": map[string]any{"assign": map[string]any{"value": int64(1)}},
		},
	}}
	invalid := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "mutations.gatekeeper.sh/v1", "kind": "Assign",
		"metadata": map[string]any{"name": "invalid", "resourceVersion": "1"},
		"spec":     map[string]any{"location": ""},
	}}
	f := newFixture(t, nil)
	gvr := mutation.Kinds[0].GVR()
	for _, u := range []*unstructured.Unstructured{valid, invalid} {
		if _, err := f.dynamic.Resource(gvr).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := f.start(t)
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"valid": "not in this test", "invalid": "spec.location"} {
		u, err := f.dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a := u.GetAnnotations(); a[CompiledAnnotation] != "false" || !strings.Contains(a[NotCompiledAnnotation], want) {
			t.Errorf("Assign %s: annotations %v, want not compiled: %s", name, a, want)
		}
	}
}

// policySet is a set's objects as the controller writes them.
func policySet(hash string, objects int, sources string, names ...string) []runtime.Object {
	var out []runtime.Object
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Labels: map[string]string{SetLabel: hash},
			Annotations: map[string]string{ObjectsAnnotation: strconv.Itoa(objects), SourcesAnnotation: sources}}
	}
	for _, n := range names {
		out = append(out, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: meta(n)},
			&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: meta(n)})
	}
	return out
}

// startCarried returns once Carried has seen the policies and watches
// them: the fake drops a deletion made before a watch is registered,
// which a test made right after the sync would lose.
func startCarried(t *testing.T, kube *kubefake.Clientset, handover time.Duration) (*Carried, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	policies := NewPolicyInformers(kube)
	// The reactor runs under the fake's lock: it must not block.
	watching := make(chan struct{}, len(policyInformers(policies)))
	kube.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := kube.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.(clienttesting.WatchActionImpl).ListOptions)
		if err != nil {
			return true, nil, err
		}
		select {
		case watching <- struct{}{}:
		default: // a watch opened again later
		}
		return true, w, nil
	})
	c, err := NewCarried(policies, handover)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(ctx.Done())
	for typ, ok := range c.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v never synced", typ)
		}
	}
	for range policyInformers(policies) {
		select {
		case <-watching:
		case <-time.After(30 * time.Second):
			t.Fatal("Carried's informers never watched")
		}
	}
	return c, ctx
}

var (
	presetA = compiler.Source{Kind: podPresetKind, Namespace: "team", Name: "a"}
	presetB = compiler.Source{Kind: podPresetKind, Namespace: "team", Name: "b"}
)

func TestCarriedOnlyWholeSets(t *testing.T) {
	for name, tc := range map[string]struct {
		objs []runtime.Object
		want bool
	}{
		"whole": {policySet("h1", 2, "PodPreset team/a@7", "p"), true},
		// The binding is not there yet.
		"policy alone": {policySet("h1", 2, "PodPreset team/a@7", "p")[:1], false},
		// Being replaced: one object at the new hash.
		"mixed":      {append(policySet("h1", 4, "PodPreset team/a@7", "p", "q")[:3], policySet("h2", 4, "PodPreset team/a@8", "p", "q")[3:]...), false},
		"unparsable": {policySet("h1", 2, "PodPreset", "p"), false},
		"no count":   {policySet("h1", 0, "PodPreset team/a@7", "p"), false},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := startCarried(t, kubefake.NewClientset(tc.objs...), 0)
			if got := c.Has(presetA); got != tc.want {
				t.Errorf("Has(a) = %v, want %v", got, tc.want)
			}
			if c.Has(presetB) {
				t.Error("Has(b), which no set names")
			}
		})
	}
}

func TestCarriedHandover(t *testing.T) {
	kube := kubefake.NewClientset()
	c, ctx := startCarried(t, kube, 2*time.Second)
	for _, obj := range policySet("h1", 2, "PodPreset team/a@7", "p") {
		var err error
		switch o := obj.(type) {
		case *admissionregistrationv1.MutatingAdmissionPolicy:
			_, err = kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
		case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
			_, err = kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	_, changed := c.state()
	if c.Has(presetA) {
		t.Fatal("handed over before the delay")
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("never handed over")
	}
	if !c.Has(presetA) {
		t.Fatal("the change was not the handover")
	}
	// Taken back at once when the set goes.
	_, changed = c.state()
	if err := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	<-changed
	if c.Has(presetA) {
		t.Fatal("still carried without its binding")
	}
}

// TestFilterSettings: the plugins' informers see the presets the policies
// do not carry, and see a preset come and go as the policies do.
func TestFilterSettings(t *testing.T) {
	kube := kubefake.NewClientset(policySet("h1", 2, "PodPreset team/a@7", "p")...)
	c, ctx := startCarried(t, kube, 0)
	settings := settingsfake.NewClientset(preset("team", "a"), preset("team", "b"))
	// The plugins' informer, as the settings.k8s.io informer factory
	// builds it over the client.
	filtered := FilterSettings(settings, c)
	informer := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return filtered.SettingsV1alpha1().PodPresets("").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return filtered.SettingsV1alpha1().PodPresets("").Watch(ctx, o)
		},
	}, filtered), &settingsv1alpha1.PodPreset{}, 0, cache.Indexers{})
	go informer.Run(ctx.Done())
	keys := func(want ...string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got := informer.GetStore().ListKeys()
			slices.Sort(got)
			return slices.Equal(got, want), nil
		})
		if err != nil {
			t.Fatalf("the plugins' view is %v, want %v", informer.GetStore().ListKeys(), want)
		}
	}
	keys("team/b")
	// An event of a carried preset is dropped; of another, kept.
	a, _ := settings.SettingsV1alpha1().PodPresets("team").Get(ctx, "a", metav1.GetOptions{})
	a.Labels = map[string]string{"edited": "yes"}
	// (Through the tracker: the fake's apply schema lacks settings.k8s.io.)
	gvr := settingsv1alpha1.SchemeGroupVersion.WithResource("podpresets")
	if err := settings.Tracker().Update(gvr, a, "team"); err != nil {
		t.Fatal(err)
	}
	if err := settings.Tracker().Add(preset("team", "c")); err != nil {
		t.Fatal(err)
	}
	keys("team/b", "team/c")
	// The policies go: a comes back.
	if err := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	keys("team/a", "team/b", "team/c")
	// They come back: a goes again.
	if _, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, policySet("h1", 2, "PodPreset team/a@7", "p")[1].(*admissionregistrationv1.MutatingAdmissionPolicyBinding), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	keys("team/b", "team/c")
}

// TestFilterDynamic: the same for the mutators, and nothing else is
// filtered.
func TestFilterDynamic(t *testing.T) {
	kube := kubefake.NewClientset(policySet("h1", 2, "Assign carried@3", "p")...)
	c, ctx := startCarried(t, kube, 0)
	assign := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "mutations.gatekeeper.sh/v1", "kind": "Assign", "metadata": map[string]any{"name": name}}}
	}
	fake := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), mutatorListKinds)
	for _, name := range []string{"carried", "kept"} {
		if _, err := fake.Resource(mutation.Kinds[0].GVR()).Create(ctx, assign(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dyn := FilterDynamic(fake, c)
	list, err := dyn.Resource(mutation.Kinds[0].GVR()).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].GetName() != "kept" {
		t.Errorf("listed %v, want kept alone", list.Items)
	}
	if _, ok := dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).(filteredMutators); ok {
		t.Error("namespaces are filtered")
	}
	if !c.Has(compiler.Source{Kind: "Assign", Name: "carried"}) || c.Has(compiler.Source{Kind: "Assign", Name: "kept"}) {
		t.Error("Has does not follow the set")
	}
}

// TestTwoReplicas: two controllers over the same API, as two replicas run,
// pass in turn; once in step, neither writes, and the second's first pass
// after the first one's writes nothing at all.
func TestTwoReplicas(t *testing.T) {
	f := newFixture(t, nil, preset("team", "ok-env"), preset("team", "refused"))
	ctx := f.start(t)
	other, err := New(Options{Kube: f.kube, Settings: f.settings, Dynamic: f.dynamic, Policies: NewPolicyInformers(f.kube), Compile: fakeCompile})
	if err != nil {
		t.Fatal(err)
	}
	other.start(ctx.Done())
	for _, inf := range other.policies {
		go inf.Run(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), other.synced...) {
		t.Fatal("the second replica's caches never synced")
	}
	otherCaughtUp := func() {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			for _, c := range []*Controller{f.ctrl, other} {
				for i, inf := range c.policies {
					if len(inf.GetStore().List()) != len(f.ctrl.policies[i].GetStore().List()) {
						return false, nil
					}
				}
				p, err := c.podPresets.PodPresets("team").Get("ok-env")
				if err != nil {
					return false, nil
				}
				want, err := f.settings.Tracker().Get(settingsv1alpha1.SchemeGroupVersion.WithResource("podpresets"), "team", "ok-env")
				if err != nil || p.ResourceVersion != want.(metav1.Object).GetResourceVersion() {
					return false, err
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("the replicas' caches did not catch up: %v", err)
		}
	}
	// The first replica brings everything in step.
	for range 3 {
		if err := f.ctrl.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		f.caughtUp(t, ctx)
	}
	otherCaughtUp()
	before := f.writes()
	for range 3 {
		for _, c := range []*Controller{other, f.ctrl} {
			if err := c.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if wrote := f.writes() - before; wrote != 0 {
		t.Errorf("the replicas wrote %d times once in step, want none", wrote)
	}
}
