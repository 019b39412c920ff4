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
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsfake "github.com/admitkit/admitkit/generated/clientset/versioned/fake"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

func presetAt(name, rv string) *settingsv1alpha1.PodPreset {
	p := preset("team", name)
	p.ResourceVersion = rv
	return p
}

// presetServer is a settings fake whose preset list answers at
// resourceVersion "10" and whose watches the test feeds, one event at a
// time, as an API server's.
type presetServer struct {
	settings *settingsfake.Clientset
	lists    atomic.Int32
	// watches are the watches opened, with the resourceVersion each
	// resumes from.
	watches chan openedWatch
}

type openedWatch struct {
	rv string
	w  *watch.RaceFreeFakeWatcher
}

func newPresetServer(items ...*settingsv1alpha1.PodPreset) *presetServer {
	s := &presetServer{settings: settingsfake.NewClientset(), watches: make(chan openedWatch, 10)}
	s.settings.PrependReactor("list", "podpresets", func(clienttesting.Action) (bool, runtime.Object, error) {
		s.lists.Add(1)
		list := &settingsv1alpha1.PodPresetList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
		for _, p := range items {
			list.Items = append(list.Items, *p.DeepCopy())
		}
		return true, list, nil
	})
	s.settings.PrependWatchReactor("podpresets", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w := watch.NewRaceFreeFake()
		s.watches <- openedWatch{rv: a.(clienttesting.WatchAction).GetWatchRestrictions().ResourceVersion, w: w}
		return true, w, nil
	})
	return s
}

func (s *presetServer) opened(t *testing.T) openedWatch {
	t.Helper()
	select {
	case o := <-s.watches:
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("no watch was opened")
		return openedWatch{}
	}
}

// pluginInformer is the plugins' preset informer over the filtered client,
// as the settings.k8s.io informer factory builds it, with what its
// handlers were told, in order.
type pluginInformer struct {
	cache.SharedIndexInformer
	mu   sync.Mutex
	told []string
}

func startPluginInformer(t *testing.T, ctx context.Context, lw cache.ListerWatcher, example runtime.Object) *pluginInformer {
	t.Helper()
	inf := &pluginInformer{SharedIndexInformer: cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})}
	tell := func(verb string, obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		m := obj.(metav1.Object)
		inf.mu.Lock()
		inf.told = append(inf.told, fmt.Sprintf("%s %s@%s", verb, m.GetName(), m.GetResourceVersion()))
		inf.mu.Unlock()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { tell("add", obj) },
		UpdateFunc: func(_, obj any) { tell("update", obj) },
		DeleteFunc: func(obj any) { tell("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	go inf.Run(ctx.Done())
	return inf
}

// holds waits until the store holds exactly want, each "name@resourceVersion",
// and the informer resumes from rv.
func (inf *pluginInformer) holds(t *testing.T, ctx context.Context, rv string, want ...string) {
	t.Helper()
	got := func() []string {
		var out []string
		for _, obj := range inf.GetStore().List() {
			m := obj.(metav1.Object)
			out = append(out, m.GetName()+"@"+m.GetResourceVersion())
		}
		slices.Sort(out)
		return out
	}
	err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return slices.Equal(got(), want) && inf.LastSyncResourceVersion() == rv, nil
	})
	if err != nil {
		t.Fatalf("the plugins' informer holds %v resuming from %q, want %v from %q", got(), inf.LastSyncResourceVersion(), want, rv)
	}
}

// toldLast waits until what the handlers were told last is want: they
// are told after the store changed.
func (inf *pluginInformer) toldLast(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	last := func() string {
		inf.mu.Lock()
		defer inf.mu.Unlock()
		if len(inf.told) == 0 {
			return ""
		}
		return inf.told[len(inf.told)-1]
	}
	err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return last() == want, nil
	})
	if err != nil {
		t.Fatalf("the handlers were told %q last, want %q", last(), want)
	}
}

// setBinding creates or deletes the binding of policySet("h1", 2, sources, "p").
func setBinding(t *testing.T, ctx context.Context, kube *kubefake.Clientset, sources string, present bool) {
	t.Helper()
	bindings := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	var err error
	if present {
		_, err = bindings.Create(ctx, policySet("h1", 2, sources, "p")[1].(*admissionregistrationv1.MutatingAdmissionPolicyBinding), metav1.CreateOptions{})
	} else {
		err = bindings.Delete(ctx, "p", metav1.DeleteOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestWatchFollowsCarried: when what the policies carry changes, the
// plugins' informer is told on the watch it has: the preset handed back
// arrives with the resourceVersion the API last gave it, the preset taken
// over leaves, and the informer resumes from the stream's position, not
// from those presets' older resourceVersions. It lists once, watches
// once, and, when the watch is restarted, resumes from that position with
// what it holds still followed.
func TestWatchFollowsCarried(t *testing.T) {
	kube := kubefake.NewClientset(policySet("h1", 2, "PodPreset team/a@5", "p")...)
	c, ctx := startCarried(t, kube, 0)
	server := newPresetServer(presetAt("a", "5"), presetAt("b", "6"))
	filtered := FilterSettings(server.settings, c).SettingsV1alpha1().PodPresets("")
	inf := startPluginInformer(t, ctx, cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return filtered.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return filtered.Watch(ctx, o)
		},
	}, server.settings), &settingsv1alpha1.PodPreset{})

	first := server.opened(t)
	if first.rv != "10" {
		t.Fatalf("the first watch resumes from %q, want the list's 10", first.rv)
	}
	inf.holds(t, ctx, "10", "b@6")
	// The carried preset's edit moves the position on, and nothing else.
	first.w.Modify(presetAt("b", "11"))
	first.w.Add(presetAt("c", "12"))
	first.w.Modify(presetAt("a", "13"))
	first.w.Action(watch.Bookmark, &settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "20"}})
	inf.holds(t, ctx, "20", "b@11", "c@12")

	// Handed back: a, as last edited, and the position stays.
	setBinding(t, ctx, kube, "PodPreset team/a@5", false)
	inf.holds(t, ctx, "20", "a@13", "b@11", "c@12")
	inf.toldLast(t, ctx, "add a@13")
	// Taken over again: a leaves.
	setBinding(t, ctx, kube, "PodPreset team/a@5", true)
	inf.holds(t, ctx, "20", "b@11", "c@12")
	inf.toldLast(t, ctx, "delete a@13")
	if n := server.lists.Load(); n != 1 {
		t.Errorf("the informer listed %d times, want once", n)
	}
	if n := len(server.watches); n != 0 {
		t.Errorf("the informer opened %d more watches, want none", n)
	}

	// The API server ends the watch: the informer resumes from the
	// position, and the view still knows a.
	first.w.Stop()
	second := server.opened(t)
	if second.rv != "20" {
		t.Errorf("the next watch resumes from %q, want the stream's 20", second.rv)
	}
	setBinding(t, ctx, kube, "PodPreset team/a@5", false)
	inf.holds(t, ctx, "20", "a@13", "b@11", "c@12")
	second.w.Delete(presetAt("a", "21"))
	inf.holds(t, ctx, "21", "b@11", "c@12")
	if n := server.lists.Load(); n != 1 {
		t.Errorf("the informer listed %d times, want once", n)
	}
	select {
	case o := <-server.watches:
		t.Errorf("a watch from %q was opened, want two in all", o.rv)
	default:
	}
}

// next is the filtered watch's next event.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
		return watch.Event{}
	}
}

func describe(ev watch.Event) string {
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return fmt.Sprintf("%s %v", ev.Type, ev.Object)
	}
	if ev.Type == watch.Bookmark {
		return fmt.Sprintf("%s @%s", ev.Type, m.GetResourceVersion())
	}
	return fmt.Sprintf("%s %s@%s", ev.Type, m.GetName(), m.GetResourceVersion())
}

// TestStreamingListFollowsCarried: in a streaming list, the events of a
// change of what is carried come among the initial events, with no
// position of their own (the bookmark that ends the initial events sets
// it); after it, a change ends with a bookmark at the stream's position.
// Stop stops the API server's watch and ends the filtered one.
func TestStreamingListFollowsCarried(t *testing.T) {
	kube := kubefake.NewClientset(policySet("h1", 2, "PodPreset team/a@5", "p")...)
	c, ctx := startCarried(t, kube, 0)
	server := newPresetServer()
	w, err := FilterSettings(server.settings, c).SettingsV1alpha1().PodPresets("").Watch(ctx,
		metav1.ListOptions{SendInitialEvents: new(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	in := server.opened(t).w
	in.Add(presetAt("a", "5"))
	in.Add(presetAt("b", "6"))
	if got := describe(next(t, w)); got != "ADDED b@6" {
		t.Fatalf("first event %q, want ADDED b@6 (a is carried)", got)
	}
	setBinding(t, ctx, kube, "PodPreset team/a@5", false)
	if got := describe(next(t, w)); got != "ADDED a@5" {
		t.Fatalf("after the handover back %q, want ADDED a@5", got)
	}
	end := &settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	in.Action(watch.Bookmark, end)
	if got := describe(next(t, w)); got != "BOOKMARK @9" {
		t.Fatalf("the initial events end with %q, want BOOKMARK @9", got)
	}
	setBinding(t, ctx, kube, "PodPreset team/a@5", true)
	for _, want := range []string{"DELETED a@5", "BOOKMARK @9"} {
		if got := describe(next(t, w)); got != want {
			t.Fatalf("after the handover %q, want %q", got, want)
		}
	}
	// An event of a carried preset goes on as a bookmark.
	in.Modify(presetAt("a", "12"))
	if got := describe(next(t, w)); got != "BOOKMARK @12" {
		t.Fatalf("a carried preset's edit is %q, want BOOKMARK @12", got)
	}
	w.Stop()
	if _, ok := <-w.ResultChan(); ok {
		t.Error("an event after Stop")
	}
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return in.IsStopped(), nil
	}); err != nil {
		t.Error("the API server's watch was not stopped")
	}
}

// TestWatchExpiresWhereItCannotFollow: a watch resuming from a position
// the view has no record of, and a watch whose client asked for no
// bookmarks when what is carried changes, end as expired, so that the
// informer lists again.
func TestWatchExpiresWhereItCannotFollow(t *testing.T) {
	kube := kubefake.NewClientset(policySet("h1", 2, "PodPreset team/a@5", "p")...)
	c, ctx := startCarried(t, kube, 0)
	server := newPresetServer(presetAt("a", "5"), presetAt("b", "6"))
	presets := FilterSettings(server.settings, c).SettingsV1alpha1().PodPresets("")
	expired := func(w watch.Interface) {
		t.Helper()
		ev := next(t, w)
		if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
			t.Fatalf("got %s %v, want an expired error", ev.Type, ev.Object)
		}
		if _, ok := <-w.ResultChan(); ok {
			t.Fatal("the watch goes on after it expired")
		}
	}

	w, err := presets.Watch(ctx, metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	expired(w)

	list, err := presets.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "b" {
		t.Fatalf("listed %v, want b alone", list.Items)
	}
	w, err = presets.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	in := server.opened(t).w
	in.Modify(presetAt("b", "11"))
	if got := describe(next(t, w)); got != "MODIFIED b@11" {
		t.Fatalf("got %q, want MODIFIED b@11", got)
	}
	setBinding(t, ctx, kube, "PodPreset team/a@5", false)
	expired(w)
}

// TestWatchFollowsCarriedMutators: the same path for the mutators, through
// the dynamic client, as the LocationMutator's informers read them.
func TestWatchFollowsCarriedMutators(t *testing.T) {
	kube := kubefake.NewClientset(policySet("h1", 2, "Assign carried@3", "p")...)
	c, ctx := startCarried(t, kube, 0)
	gvr := mutation.Kinds[0].GVR()
	fake := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), mutatorListKinds)
	for _, name := range []string{"carried", "kept"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(gvr.GroupVersion().String())
		u.SetKind(mutation.Kinds[0].Name)
		u.SetName(name)
		u.SetResourceVersion("3")
		if _, err := fake.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dyn := FilterDynamic(fake, c)
	resource := dyn.Resource(gvr)
	inf := startPluginInformer(t, ctx, cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return resource.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return resource.Watch(ctx, o)
		},
	}, dyn), &unstructured.Unstructured{})
	listed, err := fake.Tracker().List(gvr, gvr.GroupVersion().WithKind(mutation.Kinds[0].Name), "")
	if err != nil {
		t.Fatal(err)
	}
	rv := listed.(*unstructured.UnstructuredList).GetResourceVersion()
	inf.holds(t, ctx, rv, "kept@3")
	setBinding(t, ctx, kube, "Assign carried@3", false)
	inf.holds(t, ctx, rv, "carried@3", "kept@3")
	setBinding(t, ctx, kube, "Assign carried@3", true)
	inf.holds(t, ctx, rv, "kept@3")
	verbs := map[string]int{}
	for _, a := range fake.Actions() {
		verbs[a.GetVerb()]++
	}
	if verbs["list"] != 1 || verbs["watch"] != 1 {
		t.Errorf("the informer made %v requests, want one list and one watch", verbs)
	}
	if !c.Has(compiler.Source{Kind: mutation.Kinds[0].Name, Name: "carried"}) {
		t.Error("the set is not whole again")
	}
}

// TestPaginatedListIsRemembered: every page of a paginated list is
// remembered, so that a preset handed back after it arrives on the watch,
// whichever page listed it.
func TestPaginatedListIsRemembered(t *testing.T) {
	const sources = "PodPreset team/a@5\nPodPreset team/b@6"
	kube := kubefake.NewClientset(policySet("h1", 2, sources, "p")...)
	c, ctx := startCarried(t, kube, 0)
	server := newPresetServer()
	server.settings.PrependReactor("list", "podpresets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		list := &settingsv1alpha1.PodPresetList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
		if a.(clienttesting.ListActionImpl).GetListOptions().Continue == "" {
			list.Continue = "page-2"
			list.Items = []settingsv1alpha1.PodPreset{*presetAt("a", "5")}
		} else {
			list.Items = []settingsv1alpha1.PodPreset{*presetAt("b", "6")}
		}
		return true, list, nil
	})
	presets := FilterSettings(server.settings, c).SettingsV1alpha1().PodPresets("")
	page, err := presets.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 {
		t.Fatalf("the first page lists %v, want nothing", page.Items)
	}
	if page, err = presets.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue}); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 || page.Continue != "" {
		t.Fatalf("the last page lists %v (continue %q), want nothing", page.Items, page.Continue)
	}
	w, err := presets.Watch(ctx, metav1.ListOptions{ResourceVersion: page.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// An event through first: the watch has begun following.
	server.opened(t).w.Add(presetAt("c", "11"))
	if got := describe(next(t, w)); got != "ADDED c@11" {
		t.Fatalf("got %q, want ADDED c@11", got)
	}
	setBinding(t, ctx, kube, sources, false)
	for _, want := range []string{"ADDED a@5", "ADDED b@6", "BOOKMARK @11"} {
		if got := describe(next(t, w)); got != want {
			t.Fatalf("after the handover back %q, want %q", got, want)
		}
	}
}
