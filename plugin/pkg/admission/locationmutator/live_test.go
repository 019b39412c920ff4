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
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

const testIdentity = "apiserver-test"

// liveFixture is a plugin with watchMutators on, over a fake dynamic client.
type liveFixture struct {
	t       testing.TB
	plugin  *Plugin
	client  *dynamicfake.FakeDynamicClient
	stop    chan struct{}
	scheme  *runtime.Scheme
	objects admission.ObjectInterfaces
	uids    atomic.Int64
}

func gvrOf(kind string) schema.GroupVersionResource {
	for _, k := range watchedKinds {
		if k.kind == kind {
			return k.gvr
		}
	}
	panic("unknown kind " + kind)
}

// newLiveFixture starts a plugin whose configuration is cfg plus
// watchMutators; reactors run before the fake client's own.
func newLiveFixture(t testing.TB, staticMutators []string, reactors ...func(*dynamicfake.FakeDynamicClient)) *liveFixture {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{}
	for _, k := range append(slices.Clone(watchedKinds), providerKind) {
		listKinds[k.gvr] = k.kind + "List"
	}
	f := &liveFixture{
		t:      t,
		client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds),
		stop:   make(chan struct{}),
		scheme: testScheme(t),
	}
	f.objects = admission.NewObjectInterfacesFromScheme(f.scheme)
	for _, r := range reactors {
		r(f.client)
	}
	t.Cleanup(func() { close(f.stop) })

	plugins := admission.NewPlugins()
	Register(plugins)
	cfg := config(staticMutators...) + "watchMutators: true\n"
	if len(staticMutators) == 0 {
		cfg = "apiVersion: locationmutator.admission.admitkit.io/v1alpha1\nkind: Configuration\nwatchMutators: true\n"
	}
	kube := kubefake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	_, err := plugins.NewFromPlugins([]string{PluginName}, configProvider{PluginName: cfg}, admission.PluginInitializers{initializerFunc(func(p admission.Interface) {
		lm := p.(*Plugin)
		f.plugin = lm
		lm.SetExternalKubeInformerFactory(factory)
		lm.SetExternalKubeClientSet(kube)
		lm.SetDynamicClient(f.client)
		lm.SetDrainedNotification(f.stop)
		lm.SetServerIdentity(testIdentity)
	})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(f.stop)
	return f
}

type initializerFunc func(admission.Interface)

func (f initializerFunc) Initialize(p admission.Interface) { f(p) }

// object builds a mutator object from a manifest, as the API server would
// hold it: with a uid, a generation and a creation time.
func (f *liveFixture) object(manifest string, created time.Time) *unstructured.Unstructured {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		f.t.Fatal(err)
	}
	u.SetUID(types.UID(fmt.Sprintf("uid-%d", f.uids.Add(1))))
	u.SetGeneration(1)
	u.SetCreationTimestamp(metav1.NewTime(created))
	return u
}

func (f *liveFixture) create(u *unstructured.Unstructured) {
	f.t.Helper()
	if _, err := f.client.Resource(gvrOf(u.GetKind())).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *liveFixture) get(kind, name string) *unstructured.Unstructured {
	f.t.Helper()
	u, err := f.client.Resource(gvrOf(kind)).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

// admitPod creates a fresh pod through the plugin.
func (f *liveFixture) admitPod() (*corev1.Pod, error) {
	pod := threeContainerPod()
	err := f.plugin.Admit(context.Background(), attrs(pod, podGVK, podGVR, pod.Namespace, pod.Name, admission.Create, ""), f.objects)
	return pod, err
}

// eventually polls cond until it holds.
func (f *liveFixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		f.t.Fatalf("timed out waiting until %s", what)
	}
}

func (f *liveFixture) waitSynced() {
	f.t.Helper()
	f.eventually("the live mutators are read", func() bool { return f.plugin.current.Load() != nil })
}

// entry returns this server's status entry on a mutator object.
func (f *liveFixture) entry(kind, name string) (mutationsv1.MutatorPodStatus, bool) {
	u := f.get(kind, name)
	var status mutationsv1.MutatorStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, e := range status.ByPod {
		if e.ID == testIdentity {
			return e, true
		}
	}
	return mutationsv1.MutatorPodStatus{}, false
}

func pullPolicy(pod *corev1.Pod) corev1.PullPolicy { return pod.Spec.Containers[0].ImagePullPolicy }

func TestLiveMutatorsFollowTheAPI(t *testing.T) {
	f := newLiveFixture(t, nil)
	f.waitSynced()
	if pod, err := f.admitPod(); err != nil || pullPolicy(pod) != "" {
		t.Fatalf("no mutator yet: pull policy %q, error %v", pullPolicy(pod), err)
	}

	// Created: the next pods get it.
	f.create(f.object(pullAlways, time.Now()))
	f.eventually("the new Assign is enforced", func() bool { pod, _ := f.admitPod(); return pullPolicy(pod) == corev1.PullAlways })
	f.eventually("its status entry says enforced", func() bool {
		e, ok := f.entry(mutationsv1.KindAssign, "always-pull")
		return ok && e.Enforced && e.ObservedGeneration == 1 && e.MutatorUID != "" && len(e.Errors) == 0
	})

	// Changed: the next pods follow.
	u := f.get(mutationsv1.KindAssign, "always-pull")
	if err := unstructured.SetNestedField(u.Object, "Never", "spec", "parameters", "assign", "value"); err != nil {
		t.Fatal(err)
	}
	u.SetGeneration(2)
	if _, err := f.client.Resource(gvrOf(mutationsv1.KindAssign)).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the changed Assign is enforced", func() bool { pod, _ := f.admitPod(); return pullPolicy(pod) == corev1.PullNever })
	f.eventually("the status entry observes generation 2", func() bool {
		e, ok := f.entry(mutationsv1.KindAssign, "always-pull")
		return ok && e.Enforced && e.ObservedGeneration == 2
	})

	// Deleted: gone.
	if err := f.client.Resource(gvrOf(mutationsv1.KindAssign)).Delete(context.Background(), "always-pull", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the deleted Assign is gone", func() bool { pod, _ := f.admitPod(); return pullPolicy(pod) == "" })
}

func TestLiveNotSyncedRefusesRetriably(t *testing.T) {
	// Lists hang until released, so the plugin stays unsynced.
	release := make(chan struct{})
	f := newLiveFixture(t, nil, func(c *dynamicfake.FakeDynamicClient) {
		c.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
			<-release
			return false, nil, nil
		})
	})
	defer close(release)
	_, err := f.admitPod()
	var status apierrors.APIStatus
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("before the first list: %v, want 503", err)
	}
	if ok := asStatus(err, &status); !ok || status.Status().Details == nil || status.Status().Details.RetryAfterSeconds < 1 {
		t.Fatalf("no Retry-After in %#v", err)
	}
	if status.Status().Code != http.StatusServiceUnavailable {
		t.Fatalf("code %d", status.Status().Code)
	}
	// A write of a mutator object is never delayed or refused for that.
	u := f.object(pullAlways, time.Now())
	a := attrs(u, schema.GroupVersionKind{Group: mutationsv1.Group, Version: "v1", Kind: mutationsv1.KindAssign}, gvrOf(mutationsv1.KindAssign), "", u.GetName(), admission.Create, "")
	if err := f.plugin.Admit(context.Background(), a, f.objects); err != nil {
		t.Fatalf("Admit of a mutator object: %v", err)
	}
	if err := f.plugin.Validate(context.Background(), a, f.objects); err != nil {
		t.Fatalf("Validate of a mutator object: %v", err)
	}
}

func asStatus(err error, out *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	*out = s
	return ok
}

func TestLiveMissingResourceIsNoOutage(t *testing.T) {
	// AssignImage's CRD is not installed: its lists answer NotFound.
	var lists atomic.Int64
	f := newLiveFixture(t, nil, func(c *dynamicfake.FakeDynamicClient) {
		c.PrependReactor("list", "assignimage", func(clienttesting.Action) (bool, runtime.Object, error) {
			lists.Add(1)
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: mutationsv1.Group, Resource: "assignimage"}, "")
		})
	})
	f.waitSynced()
	f.create(f.object(pullAlways, time.Now()))
	f.eventually("the Assign is enforced without AssignImage", func() bool { pod, _ := f.admitPod(); return pullPolicy(pod) == corev1.PullAlways })
	if lists.Load() < 1 {
		t.Fatal("AssignImage was never listed")
	}
}

func TestLiveNotEnforced(t *testing.T) {
	const (
		neverPull = `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: never-pull}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.containers[name:*].imagePullPolicy"
  parameters: {assign: {value: Never}}`
		// Treats containers as a map where always-pull keys it as a list.
		containersAsMap = `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: containers-map}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.containers.app.imagePullPolicy"
  parameters: {assign: {value: Never}}`
		broken = `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: broken}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: "spec.containers[name:*"
  parameters: {assign: {value: Never}}`
	)
	static := strings.Replace(pullAlways, "always-pull", "static-pull", 1)
	f := newLiveFixture(t, []string{static})
	f.waitSynced()
	events := &recordedEvents{}
	f.plugin.live.events = events.record

	now := time.Now()
	f.create(f.object(strings.Replace(pullAlways, "always-pull", "static-pull", 1), now))
	f.create(f.object(pullAlways, now.Add(time.Second)))
	f.create(f.object(containersAsMap, now.Add(2*time.Second)))
	f.create(f.object(broken, now.Add(3*time.Second)))
	f.create(f.object(neverPull, now.Add(4*time.Second)))

	cases := []struct {
		name, wantType, wantMessage string
		enforced                    bool
	}{
		{"static-pull", errorTypeOverridden, "admission configuration has a Assign named \"static-pull\"", false},
		{"always-pull", "", "", true},
		{"containers-map", errorTypeConflict, "Assign/static-pull", false},
		{"broken", errorTypeInvalid, "spec.location", false},
		{"never-pull", "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.eventually("the status entry of "+tc.name, func() bool {
				e, ok := f.entry(mutationsv1.KindAssign, tc.name)
				return ok && e.Enforced == tc.enforced
			})
			e, _ := f.entry(mutationsv1.KindAssign, tc.name)
			if tc.enforced {
				if len(e.Errors) != 0 {
					t.Fatalf("errors %v", e.Errors)
				}
				return
			}
			if len(e.Errors) != 1 || e.Errors[0].Type != tc.wantType || !strings.Contains(e.Errors[0].Message, tc.wantMessage) {
				t.Fatalf("errors %+v, want %s containing %q", e.Errors, tc.wantType, tc.wantMessage)
			}
			f.eventually("a Warning Event on "+tc.name, func() bool { return events.has(tc.name, "MutatorNotEnforced") })
		})
	}
	if got := f.plugin.current.Load().Len(); got != 3 {
		t.Fatalf("system runs %d mutators, want static-pull, always-pull and never-pull", got)
	}
}

type recordedEvents struct {
	mu   sync.Mutex
	seen []string
}

func (r *recordedEvents) record(obj runtime.Object, reason, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := obj.(*unstructured.Unstructured)
	r.seen = append(r.seen, u.GetName()+"/"+reason)
}

func (r *recordedEvents) has(name, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.seen {
		if s == name+"/"+reason {
			return true
		}
	}
	return false
}

func TestLiveStatusKeepsOtherServersEntries(t *testing.T) {
	f := newLiveFixture(t, nil)
	f.waitSynced()
	u := f.object(pullAlways, time.Now())
	u.Object["status"] = map[string]any{"byPod": []any{map[string]any{"id": "apiserver-other", "enforced": true, "observedGeneration": int64(1)}}}
	f.create(u)
	f.eventually("our entry is added", func() bool { _, ok := f.entry(mutationsv1.KindAssign, "always-pull"); return ok })
	got := f.get(mutationsv1.KindAssign, "always-pull")
	byPod, _, _ := unstructured.NestedSlice(got.Object, "status", "byPod")
	if len(byPod) != 2 || byPod[0].(map[string]any)["id"] != "apiserver-other" {
		t.Fatalf("byPod %v, want the other server's entry kept first", byPod)
	}
}

func TestLiveStatusWrittenOnlyOnChange(t *testing.T) {
	var writes atomic.Int64
	f := newLiveFixture(t, nil, func(c *dynamicfake.FakeDynamicClient) {
		c.PrependReactor("update", "assign", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() == "status" {
				writes.Add(1)
			}
			return false, nil, nil
		})
	})
	f.waitSynced()
	f.create(f.object(pullAlways, time.Now()))
	f.eventually("the status is written", func() bool { _, ok := f.entry(mutationsv1.KindAssign, "always-pull"); return ok })
	// Further rebuilds (another mutator arriving) leave it alone.
	f.create(f.object(ownerLabel, time.Now()))
	f.eventually("the second mutator's status", func() bool { _, ok := f.entry(mutationsv1.KindAssignMetadata, "owner"); return ok })
	time.Sleep(100 * time.Millisecond)
	if n := writes.Load(); n != 1 {
		t.Fatalf("%d status writes on the Assign, want 1", n)
	}
}

func TestLiveStatusRetriesConflicts(t *testing.T) {
	var conflicts atomic.Int64
	f := newLiveFixture(t, nil, func(c *dynamicfake.FakeDynamicClient) {
		c.PrependReactor("update", "assign", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() == "status" && conflicts.Add(1) <= 2 {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Group: mutationsv1.Group, Resource: "assign"}, "always-pull", fmt.Errorf("changed"))
			}
			return false, nil, nil
		})
	})
	f.waitSynced()
	f.create(f.object(pullAlways, time.Now()))
	f.eventually("the status is written after two conflicts", func() bool { _, ok := f.entry(mutationsv1.KindAssign, "always-pull"); return ok })
}

func TestValidateMutatorObjects(t *testing.T) {
	f := newLiveFixture(t, []string{pullAlways})
	f.waitSynced()
	cases := []struct {
		name, manifest string
		wantField      string // "" when it is admitted
		wantWarning    string
	}{
		{name: "valid", manifest: ownerLabel},
		{name: "bad location", manifest: strings.Replace(pullAlways, "name:*]", "name:*", 1), wantField: "spec.location"},
		{name: "bad selector", manifest: strings.Replace(ownerLabel, "match: {", "match: {labelSelector: {matchExpressions: [{key: a, operator: Bogus}]}, ", 1), wantField: "spec.match.labelSelector"},
		{name: "bad value", manifest: strings.Replace(ownerLabel, "{value: platform}", "{value: {a: b}}", 1), wantField: "spec.parameters.assign.value"},
		{name: "unknown field", manifest: strings.Replace(ownerLabel, "location:", "locaton: x\n  location:", 1), wantField: "spec"},
		{name: "schema conflict", manifest: strings.Replace(strings.Replace(pullAlways, "always-pull", "as-map", 1), "spec.containers[name:*].imagePullPolicy", "spec.containers.app.imagePullPolicy", 1), wantField: "spec.location"},
		{name: "odd scope", manifest: strings.Replace(ownerLabel, "match: {", "match: {scope: cluster, ", 1), wantWarning: `spec.match.scope: "cluster"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := f.object(tc.manifest, time.Now())
			gvk := schema.GroupVersionKind{Group: mutationsv1.Group, Version: "v1", Kind: u.GetKind()}
			warnings := &warningRecorder{}
			ctx := warning.WithWarningRecorder(context.Background(), warnings)
			err := f.plugin.Validate(ctx, attrs(u, gvk, gvrOf(u.GetKind()), "", u.GetName(), admission.Create, ""), f.objects)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else {
				if !apierrors.IsInvalid(err) {
					t.Fatalf("error %v, want 422 Invalid", err)
				}
				if !strings.Contains(err.Error(), tc.wantField) || !strings.Contains(err.Error(), u.GetName()) {
					t.Fatalf("error %v does not name %s and the object", err, tc.wantField)
				}
			}
			if tc.wantWarning != "" && !warnings.has(tc.wantWarning) {
				t.Fatalf("warnings %v, want one with %q", warnings.seen, tc.wantWarning)
			}
			// A delete is never checked.
			if f.plugin.Handles(admission.Delete) {
				t.Fatal("the plugin must not see deletes")
			}
		})
	}
}

type warningRecorder struct{ seen []string }

func (w *warningRecorder) AddWarning(_, text string) { w.seen = append(w.seen, text) }
func (w *warningRecorder) has(s string) bool {
	for _, x := range w.seen {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// TestSnapshotIsWhole publishes systems whose ten mutators all write the
// same generation while requests run: a pod must carry one generation in
// all ten places.
func TestSnapshotIsWhole(t *testing.T) {
	f := newLiveFixture(t, nil)
	f.waitSynced()
	build := func(gen int) *mutation.System {
		var ms []*mutation.Mutator
		for i := range 10 {
			m, err := mutation.Decode([]byte(fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: gen-%d}
spec:
  location: metadata.annotations.gen-%d
  parameters: {assign: {value: "g%d"}}`, i, i, gen)))
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
		s, err := mutation.NewSystem(ms)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	systems := []*mutation.System{build(0), build(1), build(2)}
	done := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
				f.plugin.current.Store(systems[i%len(systems)])
			}
		}
	}()
	defer close(done)
	for range 2000 {
		pod, err := f.admitPod()
		if err != nil {
			t.Fatal(err)
		}
		first := pod.Annotations["gen-0"]
		for i := range 10 {
			if got := pod.Annotations[fmt.Sprintf("gen-%d", i)]; got != first {
				t.Fatalf("pod mixes generations: %v", pod.Annotations)
			}
		}
	}
}

// TestLiveResourceServedLater installs the Assign CRD after start-up: its
// mutators are picked up without a restart.
func TestLiveResourceServedLater(t *testing.T) {
	var served atomic.Bool
	f := newLiveFixture(t, nil, func(c *dynamicfake.FakeDynamicClient) {
		c.PrependReactor("list", "assign", func(clienttesting.Action) (bool, runtime.Object, error) {
			if served.Load() {
				return false, nil, nil
			}
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: mutationsv1.Group, Resource: "assign"}, "")
		})
	})
	f.waitSynced()
	f.create(f.object(pullAlways, time.Now()))
	if pod, _ := f.admitPod(); pullPolicy(pod) != "" {
		t.Fatal("a mutator of a kind that is not served ran")
	}
	served.Store(true)
	f.eventually("the Assign is enforced once its resource is served", func() bool { pod, _ := f.admitPod(); return pullPolicy(pod) == corev1.PullAlways })
}
