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
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
	settingsv1alpha1client "github.com/admitkit/admitkit/generated/clientset/versioned/typed/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/compiler"
)

// The plugins' view: the clients the webhook plugins list and watch their
// sources through, without what the policies carry. The plugins are not
// changed: they see a carried source as deleted and a source handed back
// as created, through their own informers.
//
// A list leaves out the carried sources; a watch leaves out their events.
// When what is carried changes, a watch keeps streaming and tells the
// informer itself what left its view (DELETED) and what joined it (ADDED),
// each object as the API last gave it, with its own resourceVersion (the
// PodPreset plugin writes presets' resourceVersions into pods), then a
// BOOKMARK at the stream's position: the reflector takes the resume point
// of its next watch from every event, older or not, and the bookmark
// moves it on from the objects' older resourceVersions to where the
// stream is (the reflector always asks for bookmarks). Ending the
// watch instead would make client-go's reflector list again only after
// its backoff (0.8 s, doubling up to 30 s), and until then the plugins
// watch nothing: a source handed back, created or edited meanwhile would
// reach no pod.
//
// To make those events the view remembers, per chain of a list and the
// watches that resume from it, every object the list and the events
// delivered, carried or not, whether the informer was shown it, and the
// stream's position (a record). An event of a carried object goes on as a
// bookmark, so that the informer's position stays the stream's. Where the
// events cannot be made, the watch ends as expired (the API server's
// answer to a resourceVersion too old), so that the informer lists again:
// a watch that resumes from no remembered position (its list was not
// remembered, or another list's record took its place), and, when what
// is carried changes, a watch whose client asked for no bookmarks.

// maxIdleRecords bounds the records remembered per chain that no watch is
// reading: one per informer that lists the same resource, which the
// plugins have one of, and a few to spare.
const maxIdleRecords = 4

// view filters the lists and watches of the resources of one client.
type view struct {
	carried *Carried

	mu sync.Mutex
	// lists counts the lists begun: a watch resumes from the record of
	// the latest list among those at its resourceVersion.
	lists uint64
	// idle are the records no watch is reading, by chain.
	idle map[string][]*chainRecord
	// paging is each chain's paginated list in progress.
	paging map[string]*chainRecord
}

func newView(c *Carried) *view {
	return &view{carried: c, idle: map[string][]*chainRecord{}, paging: map[string]*chainRecord{}}
}

// chainRecord is what the informer of one chain was given.
type chainRecord struct {
	list uint64
	// rv is the stream's position: the list's resourceVersion, then the
	// latest event's the informer was given (bookmarks included), which is
	// where it resumes from.
	rv string
	// initial: a streaming list's initial events are still coming, and
	// the stream has no position yet.
	initial bool
	// next is, while a list is paginated, its next page's continue token.
	next    string
	objects map[compiler.Source]seen
}

// seen is an object as the API last gave it, and whether the informer
// holds it: the informer calls its handlers' OnDelete for every DELETED,
// held or not, so the view sends one only for an object shown.
type seen struct {
	obj   runtime.Object
	shown bool
}

// newRecord begins the record of a list, or of a streaming list (initial).
func (v *view) newRecord(initial bool) *chainRecord {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.lists++
	return &chainRecord{list: v.lists, initial: initial, objects: map[compiler.Source]seen{}}
}

// beginList is the record a list page fills: a new one for a first page,
// the list's own for a next page, nil for a page of a list not followed.
func (v *view) beginList(chain string, opts metav1.ListOptions) *chainRecord {
	if opts.Continue == "" {
		rec := v.newRecord(false)
		v.mu.Lock()
		delete(v.paging, chain)
		v.mu.Unlock()
		return rec
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	rec := v.paging[chain]
	delete(v.paging, chain)
	if rec == nil || rec.next != opts.Continue {
		return nil
	}
	return rec
}

// endList keeps rec for the next page, or, after the last one, for the
// watch that follows the list.
func (v *view) endList(chain string, rec *chainRecord, list metav1.ListInterface) {
	if rec == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if rec.next = list.GetContinue(); rec.next != "" {
		v.paging[chain] = rec
		return
	}
	rec.rv = list.GetResourceVersion()
	v.putLocked(chain, rec)
}

// put keeps a record no watch reads any more, for the watch that resumes
// from its position.
func (v *view) put(chain string, rec *chainRecord) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.putLocked(chain, rec)
}

func (v *view) putLocked(chain string, rec *chainRecord) {
	recs := append(v.idle[chain], rec)
	if len(recs) > maxIdleRecords {
		oldest := 0
		for i, r := range recs {
			if r.list < recs[oldest].list {
				oldest = i
			}
		}
		recs = slices.Delete(recs, oldest, oldest+1)
	}
	v.idle[chain] = recs
}

// take hands a watch resuming from rv the record of the latest list at
// that position, or nil.
func (v *view) take(chain, rv string) *chainRecord {
	v.mu.Lock()
	defer v.mu.Unlock()
	recs := v.idle[chain]
	found := -1
	for i, r := range recs {
		if r.rv == rv && (found < 0 || r.list > recs[found].list) {
			found = i
		}
	}
	if found < 0 {
		return nil
	}
	rec := recs[found]
	v.idle[chain] = slices.Delete(recs, found, found+1)
	return rec
}

// resource is one resource the plugins read, with the kind its objects
// are named by among the compiled sources: one code path for the presets,
// the cluster presets and each mutator kind.
type resource struct {
	view *view
	kind string
	// path names the resource, and the namespace listed, in the view.
	path string
	// bookmark is an object of the resource's type holding only rv, as
	// the API server's bookmarks are.
	bookmark func(rv string) runtime.Object
}

// chain names what a list with opts and its watches show.
func (r resource) chainOf(opts metav1.ListOptions) string {
	return r.path + "?labels=" + opts.LabelSelector + "&fields=" + opts.FieldSelector
}

func (r resource) source(m metav1.Object) compiler.Source {
	return compiler.Source{Kind: r.kind, Namespace: m.GetNamespace(), Name: m.GetName()}
}

// uncarried keeps, in place, the items of a list page the policies do not
// carry, and remembers every item with whether it was kept.
func uncarried[T any, PT interface {
	*T
	metav1.Object
	runtime.Object
}](r resource, opts metav1.ListOptions, list metav1.ListInterface, items []T) []T {
	chain := r.chainOf(opts)
	rec := r.view.beginList(chain, opts)
	kept := items[:0]
	for i := range items {
		item := items[i] // a copy: keeping moves items over the carried ones
		src := r.source(PT(&item))
		shown := !r.view.carried.Has(src)
		if rec != nil {
			rec.objects[src] = seen{obj: PT(&item), shown: shown}
		}
		if shown {
			kept = append(kept, items[i])
		}
	}
	r.view.endList(chain, rec, list)
	return kept
}

// watch opens the filtered watch of opts, start opening the resource's.
func (r resource) watch(opts metav1.ListOptions, start func() (watch.Interface, error)) (watch.Interface, error) {
	chain := r.chainOf(opts)
	var rec *chainRecord
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		// A streaming list: the informer's state is what this watch
		// gives it.
		rec = r.view.newRecord(true)
	} else if rec = r.view.take(chain, opts.ResourceVersion); rec == nil {
		// Resuming from a position no record is at, the view cannot
		// tell what the informer holds: it lists again.
		s := newStream()
		go func() {
			defer close(s.out)
			s.sendExpired("the compiled policies' view has no record of this resourceVersion")
		}()
		return s, nil
	}
	in, err := start()
	if err != nil {
		if !rec.initial {
			r.view.put(chain, rec)
		}
		return nil, err
	}
	_, changed := r.view.carried.state()
	w := &filteredWatch{stream: newStream(), resource: r, chain: chain, rec: rec, bookmarks: opts.AllowWatchBookmarks}
	go w.run(in, changed)
	return w, nil
}

// stream is a watch this package feeds: out closes when its feeder ends,
// stop when its reader stops it.
type stream struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func newStream() *stream { return &stream{out: make(chan watch.Event), stop: make(chan struct{})} }

func (s *stream) Stop()                          { s.once.Do(func() { close(s.stop) }) }
func (s *stream) ResultChan() <-chan watch.Event { return s.out }

// send reports false when the reader stopped instead.
func (s *stream) send(ev watch.Event) bool {
	select {
	case s.out <- ev:
		return true
	case <-s.stop:
		return false
	}
}

// sendExpired ends the watch as the API server ends one whose
// resourceVersion is too old: the reflector lists again.
func (s *stream) sendExpired(why string) {
	s.send(watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: why}})
}

// filteredWatch is a watch without the carried objects, which follows
// what is carried with events of its own.
type filteredWatch struct {
	*stream
	resource
	chain string
	// rec is read and written by run alone, and kept in the view when it
	// ends.
	rec       *chainRecord
	bookmarks bool
}

func (w *filteredWatch) run(in watch.Interface, changed <-chan struct{}) {
	defer close(w.out)
	// Kept before the informer sees the end, so that the watch it
	// resumes with finds the record.
	defer w.release()
	defer in.Stop()
	// What is carried may have changed since the list.
	if !w.follow() {
		return
	}
	for {
		select {
		case <-w.stop:
			return
		case <-changed:
			_, changed = w.view.carried.state()
			if !w.follow() {
				return
			}
		case ev, ok := <-in.ResultChan():
			if !ok || !w.pass(ev) {
				return
			}
		}
	}
}

// release keeps the record for the watch that resumes from its position.
// A streaming list that ended before its initial events did has none.
func (w *filteredWatch) release() {
	if w.rec != nil && !w.rec.initial {
		w.view.put(w.chain, w.rec)
	}
	w.rec = nil
}

// pass gives the informer an event of the resource's watch, as the
// carried set makes it look; false when the watch is over.
func (w *filteredWatch) pass(ev watch.Event) bool {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
	case watch.Bookmark:
		if !w.send(ev) {
			return false
		}
		if m, err := meta.Accessor(ev.Object); err == nil {
			w.rec.rv = m.GetResourceVersion()
			if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				w.rec.initial = false
			}
		}
		return true
	case watch.Error:
		// The informer may watch again at once from its position.
		w.release()
		w.send(ev)
		return false
	default:
		return w.send(ev)
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		// Not an object: the reflector reports it, as it would unfiltered.
		return w.send(ev)
	}
	src := w.source(m)
	before := w.rec.objects[src]
	shown := ev.Type != watch.Deleted && !w.view.carried.Has(src)
	out := ev
	switch {
	case shown && !before.shown:
		out.Type = watch.Added
	case !shown && before.shown:
		out.Type = watch.Deleted
	case !shown && w.bookmarks && !w.rec.initial:
		out = watch.Event{Type: watch.Bookmark, Object: w.bookmark(m.GetResourceVersion())}
	case !shown:
		out = watch.Event{}
	}
	if out.Type != "" {
		if !w.send(out) {
			return false
		}
		w.rec.rv = m.GetResourceVersion()
	}
	if ev.Type == watch.Deleted {
		delete(w.rec.objects, src)
	} else {
		w.rec.objects[src] = seen{obj: ev.Object, shown: shown}
	}
	return true
}

// follow tells the informer which remembered objects left its view or
// joined it since it last was told, then where the stream is; false when
// the watch is over.
func (w *filteredWatch) follow() bool {
	var flipped []compiler.Source
	for src, s := range w.rec.objects {
		if s.shown == w.view.carried.Has(src) {
			flipped = append(flipped, src)
		}
	}
	if len(flipped) == 0 {
		return true
	}
	if !w.bookmarks {
		// Without a bookmark to follow them, the objects' own
		// resourceVersions would move the client's position back.
		w.sendExpired("what the compiled policies carry changed")
		return false
	}
	slices.SortFunc(flipped, func(a, b compiler.Source) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, src := range flipped {
		s := w.rec.objects[src]
		ev := watch.Event{Type: watch.Added, Object: s.obj}
		if s.shown {
			ev.Type = watch.Deleted
		}
		if !w.send(ev) {
			return false
		}
		s.shown = !s.shown
		w.rec.objects[src] = s
	}
	// Within a streaming list's initial events the bookmark that ends
	// them sets the position.
	return w.rec.initial || w.send(watch.Event{Type: watch.Bookmark, Object: w.bookmark(w.rec.rv)})
}

// FilterSettings is client for the webhook plugins: PodPresets and
// ClusterPodPresets the policies carry are left out of its lists and
// watches. Everything else goes to client.
func FilterSettings(client settingsclient.Interface, c *Carried) settingsclient.Interface {
	return filteredSettings{Interface: client, view: newView(c)}
}

type filteredSettings struct {
	settingsclient.Interface
	view *view
}

// watchListUnsupported is how a client tells the reflector it cannot
// stream lists (client-go's fakes); the filtered clients say what the
// client they wrap says.
type watchListUnsupported interface{ IsWatchListSemanticsUnSupported() bool }

func unsupported(client any) bool {
	u, ok := client.(watchListUnsupported)
	return ok && u.IsWatchListSemanticsUnSupported()
}

// IsWatchListSemanticsUnSupported is the wrapped client's answer.
func (s filteredSettings) IsWatchListSemanticsUnSupported() bool { return unsupported(s.Interface) }

func (s filteredSettings) SettingsV1alpha1() settingsv1alpha1client.SettingsV1alpha1Interface {
	return filteredSettingsV1alpha1{SettingsV1alpha1Interface: s.Interface.SettingsV1alpha1(), view: s.view}
}

type filteredSettingsV1alpha1 struct {
	settingsv1alpha1client.SettingsV1alpha1Interface
	view *view
}

func (s filteredSettingsV1alpha1) PodPresets(namespace string) settingsv1alpha1client.PodPresetInterface {
	return filteredPodPresets{PodPresetInterface: s.SettingsV1alpha1Interface.PodPresets(namespace), resource: resource{
		view: s.view, kind: podPresetKind, path: "podpresets/" + namespace,
		bookmark: func(rv string) runtime.Object {
			return &settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
		},
	}}
}

func (s filteredSettingsV1alpha1) ClusterPodPresets() settingsv1alpha1client.ClusterPodPresetInterface {
	return filteredClusterPodPresets{ClusterPodPresetInterface: s.SettingsV1alpha1Interface.ClusterPodPresets(), resource: resource{
		view: s.view, kind: clusterPodPresetKind, path: "clusterpodpresets",
		bookmark: func(rv string) runtime.Object {
			return &settingsv1alpha1.ClusterPodPreset{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
		},
	}}
}

type filteredPodPresets struct {
	settingsv1alpha1client.PodPresetInterface
	resource resource
}

func (p filteredPodPresets) List(ctx context.Context, opts metav1.ListOptions) (*settingsv1alpha1.PodPresetList, error) {
	list, err := p.PodPresetInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list.Items = uncarried(p.resource, opts, list, list.Items)
	return list, nil
}

func (p filteredPodPresets) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return p.resource.watch(opts, func() (watch.Interface, error) { return p.PodPresetInterface.Watch(ctx, opts) })
}

type filteredClusterPodPresets struct {
	settingsv1alpha1client.ClusterPodPresetInterface
	resource resource
}

func (p filteredClusterPodPresets) List(ctx context.Context, opts metav1.ListOptions) (*settingsv1alpha1.ClusterPodPresetList, error) {
	list, err := p.ClusterPodPresetInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list.Items = uncarried(p.resource, opts, list, list.Items)
	return list, nil
}

func (p filteredClusterPodPresets) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return p.resource.watch(opts, func() (watch.Interface, error) { return p.ClusterPodPresetInterface.Watch(ctx, opts) })
}

// FilterDynamic is client for the webhook plugins: the Gatekeeper mutators
// the policies carry are left out of its lists and watches of the
// mutations.gatekeeper.sh resources. Everything else goes to client.
func FilterDynamic(client dynamic.Interface, c *Carried) dynamic.Interface {
	return filteredDynamic{Interface: client, view: newView(c)}
}

type filteredDynamic struct {
	dynamic.Interface
	view *view
}

// IsWatchListSemanticsUnSupported is the wrapped client's answer.
func (d filteredDynamic) IsWatchListSemanticsUnSupported() bool { return unsupported(d.Interface) }

func (d filteredDynamic) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	r := d.Interface.Resource(gvr)
	k, ok := mutatorKinds[gvr.GroupResource()]
	if !ok {
		return r
	}
	return filteredMutators{NamespaceableResourceInterface: r, resource: resource{
		view: d.view, kind: k.Name, path: gvr.String(),
		bookmark: func(rv string) runtime.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvr.GroupVersion().WithKind(k.Name))
			u.SetResourceVersion(rv)
			return u
		},
	}}
}

type filteredMutators struct {
	dynamic.NamespaceableResourceInterface
	resource resource
}

func (m filteredMutators) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	list, err := m.NamespaceableResourceInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list.Items = uncarried(m.resource, opts, list, list.Items)
	return list, nil
}

func (m filteredMutators) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return m.resource.watch(opts, func() (watch.Interface, error) { return m.NamespaceableResourceInterface.Watch(ctx, opts) })
}
