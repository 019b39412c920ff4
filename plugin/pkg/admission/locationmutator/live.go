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
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// watchedKind is a mutator kind served by Gatekeeper's CRDs, at the version
// the live source reads it (every served version holds the same object).
type watchedKind struct {
	kind string
	gvr  schema.GroupVersionResource
}

// watchedKinds are the kinds the live source watches. The resource names
// are Gatekeeper's CRDs' plurals, which are singular words.
var watchedKinds = []watchedKind{
	{mutationsv1.KindAssign, schema.GroupVersionResource{Group: mutationsv1.Group, Version: "v1", Resource: "assign"}},
	{mutationsv1.KindAssignImage, schema.GroupVersionResource{Group: mutationsv1.Group, Version: "v1alpha1", Resource: "assignimage"}},
	{mutationsv1.KindAssignMetadata, schema.GroupVersionResource{Group: mutationsv1.Group, Version: "v1", Resource: "assignmetadata"}},
	{mutationsv1.KindModifySet, schema.GroupVersionResource{Group: mutationsv1.Group, Version: "v1", Resource: "modifyset"}},
}

// unservedProbe is how often the live source asks whether the resource of
// a kind that was not served (its CRD not installed) is served now.
const unservedProbe = 2 * time.Second

// The types of the errors in a mutator's status entry.
const (
	errorTypeInvalid    = "Invalid"
	errorTypeConflict   = "Conflict"
	errorTypeOverridden = "OverriddenByConfiguration"
)

// outcome is what one server decided about one generation of a mutator
// object: enforced, or not and why.
type outcome struct {
	uid        types.UID
	generation int64
	enforced   bool
	errorType  string
	message    string
}

// liveMutator is a decoded mutator object; decoding is kept across rebuilds
// for as long as the object's generation stays the same.
type liveMutator struct {
	uid        types.UID
	generation int64
	created    time.Time
	id         mutation.ID
	mutator    *mutation.Mutator // nil when the object is invalid
	invalid    string
	took       time.Duration
}

// liveSource keeps a mutation system in step with the mutator objects in
// the API: the configuration's mutators plus every valid live one that
// conflicts with none of those before it. It publishes each system whole,
// so a request sees one system or the next, never a mix.
type liveSource struct {
	static   *mutation.System
	client   dynamic.Interface
	publish  func(*mutation.System)
	identity string
	events   eventSink

	kinds    []*kindWatch
	rebuilds chan struct{}
	status   *statusWriter

	// Owned by the rebuild loop.
	decoded     map[types.UID]*liveMutator
	lastWarning map[types.UID]outcome
	// built is the generation of every object the published system was
	// built from: a change of status or metadata alone (status writes of
	// every server among them) needs no rebuild.
	built map[types.UID]int64

	mu       sync.RWMutex
	outcomes map[types.UID]outcome
}

// eventSink records a Warning Event on a mutator object.
type eventSink func(obj runtime.Object, reason, message string)

type kindWatch struct {
	watchedKind
	informer cache.SharedIndexInformer

	mu     sync.Mutex
	served *bool // nil until the first list
}

func newLiveSource(static *mutation.System, client dynamic.Interface, identity string, events eventSink, publish func(*mutation.System)) *liveSource {
	s := &liveSource{
		static:      static,
		client:      client,
		publish:     publish,
		identity:    identity,
		events:      events,
		rebuilds:    make(chan struct{}, 1),
		decoded:     map[types.UID]*liveMutator{},
		lastWarning: map[types.UID]outcome{},
		outcomes:    map[types.UID]outcome{},
	}
	s.status = newStatusWriter(s)
	for _, k := range watchedKinds {
		kw := &kindWatch{watchedKind: k}
		kw.informer = cache.NewSharedIndexInformer(s.listWatch(kw), &unstructured.Unstructured{}, 0, cache.Indexers{})
		s.kinds = append(s.kinds, kw)
	}
	return s
}

// run watches until stop closes.
func (s *liveSource) run(stop <-chan struct{}) {
	for _, kw := range s.kinds {
		_, _ = kw.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.changed(kw, obj) },
			UpdateFunc: func(_, obj any) { s.changed(kw, obj) },
			DeleteFunc: func(obj any) { s.changed(kw, obj) },
		})
		go kw.informer.Run(stop)
	}
	go s.status.run(stop)
	go s.rebuildLoop(stop)
}

// changed asks for a rebuild and a status check of the object.
func (s *liveSource) changed(kw *kindWatch, obj any) {
	select {
	case s.rebuilds <- struct{}{}:
	default: // a rebuild is already due; it will see this change
	}
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		s.status.enqueue(kw, u.GetName())
	}
}

// listWatch lists and watches one kind. While its resource is not served
// (the CRD is not installed), it lists nothing, so that the kind counts as
// synced with no mutators, and its watch probes the resource until it is
// served, then ends as expired, which makes the reflector list again.
func (s *liveSource) listWatch(kw *kindWatch) cache.ListerWatcher {
	resource := s.client.Resource(kw.gvr)
	return listWatch{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			list, err := resource.List(ctx, options)
			if apierrors.IsNotFound(err) {
				kw.setServed(false)
				return &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": kw.gvr.GroupVersion().String(), "kind": kw.kind + "List"}}, nil
			}
			if err != nil {
				return nil, err
			}
			kw.setServed(true)
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			if !kw.isServed() {
				return newProbeWatch(ctx, unservedProbe, func(ctx context.Context) bool {
					_, err := resource.List(ctx, metav1.ListOptions{Limit: 1})
					return !apierrors.IsNotFound(err)
				}), nil
			}
			return resource.Watch(ctx, options)
		},
	}}
}

// listWatch lists with plain lists: a streaming list would go to the
// watch, which cannot tell "not served" from "nothing yet" the way the
// list above does. Mutator lists are small.
type listWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to list.
func (listWatch) IsWatchListSemanticsUnSupported() bool { return true }

// setServed logs when a kind's resource starts or stops being served.
func (kw *kindWatch) setServed(served bool) {
	kw.mu.Lock()
	defer kw.mu.Unlock()
	if kw.served != nil && *kw.served == served {
		return
	}
	if served {
		klog.InfoS("LocationMutator watches live mutators", "resource", kw.gvr.String())
	} else {
		klog.InfoS("LocationMutator found no served resource for a mutator kind; it runs no live mutators of that kind until it is served", "resource", kw.gvr.String(), "probe", unservedProbe)
	}
	kw.served = &served
}

func (kw *kindWatch) isServed() bool {
	kw.mu.Lock()
	defer kw.mu.Unlock()
	return kw.served != nil && *kw.served
}

// probeWatch stands in for the watch of a resource that is not served: it
// delivers nothing until served reports true, then an expired error, on
// which the reflector lists again. (A watch that simply closed would be
// opened again without a list.)
type probeWatch struct {
	ch   chan watch.Event
	stop chan struct{}
	once sync.Once
}

func newProbeWatch(ctx context.Context, every time.Duration, served func(context.Context) bool) *probeWatch {
	w := &probeWatch{ch: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.ch)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.stop:
				return
			case <-tick.C:
			}
			if !served(ctx) {
				continue
			}
			expired := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "the resource is served now"}
			select {
			case w.ch <- watch.Event{Type: watch.Error, Object: expired}:
			case <-ctx.Done():
			case <-w.stop:
			}
			return
		}
	}()
	return w
}

func (w *probeWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *probeWatch) ResultChan() <-chan watch.Event { return w.ch }

func (s *liveSource) synced() bool {
	for _, kw := range s.kinds {
		if !kw.informer.HasSynced() {
			return false
		}
	}
	return true
}

func (s *liveSource) rebuildLoop(stop <-chan struct{}) {
	// Informers report synced only after their first list has been
	// delivered; poll for that once, then rebuild on every change.
	if !cache.WaitForCacheSync(stop, s.synced) {
		return
	}
	s.rebuild()
	for {
		select {
		case <-stop:
			return
		case <-s.rebuilds:
			s.rebuild()
		}
	}
}

// rebuild builds and publishes the system from the objects the informers
// hold now, and records every object's outcome.
func (s *liveSource) rebuild() {
	var objects []*unstructured.Unstructured
	generations := map[types.UID]int64{}
	for _, kw := range s.kinds {
		for _, obj := range kw.informer.GetStore().List() {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				objects = append(objects, u)
				generations[u.GetUID()] = u.GetGeneration()
			}
		}
	}
	if s.built != nil && maps.Equal(generations, s.built) {
		return
	}
	s.built = generations
	live := s.decode(objects)
	system, outcomes := resolve(s.static, live)
	s.publish(system)
	reportLive(live, outcomes)

	s.mu.Lock()
	s.outcomes = outcomes
	s.mu.Unlock()
	s.warn(objects, outcomes)
	for _, kw := range s.kinds {
		for _, name := range kw.informer.GetStore().ListKeys() {
			s.status.enqueue(kw, name)
		}
	}
}

// decode returns the objects as mutators in precedence order: the older
// object first, ties broken by kind and name, so that of two conflicting
// mutators the one created later is the one left out.
func (s *liveSource) decode(objects []*unstructured.Unstructured) []*liveMutator {
	seen := make(map[types.UID]bool, len(objects))
	out := make([]*liveMutator, 0, len(objects))
	for _, u := range objects {
		uid := u.GetUID()
		seen[uid] = true
		if lm, ok := s.decoded[uid]; ok && lm.generation == u.GetGeneration() {
			lm.took = 0 // counted when it was decoded
			out = append(out, lm)
			continue
		}
		lm := decodeObject(u)
		s.decoded[uid] = lm
		out = append(out, lm)
	}
	for uid := range s.decoded {
		if !seen[uid] {
			delete(s.decoded, uid)
			delete(s.lastWarning, uid)
		}
	}
	slices.SortFunc(out, func(a, b *liveMutator) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		if c := cmp.Compare(a.id.Kind, b.id.Kind); c != 0 {
			return c
		}
		return cmp.Compare(a.id.Name, b.id.Name)
	})
	return out
}

func decodeObject(u *unstructured.Unstructured) *liveMutator {
	lm := &liveMutator{
		uid:        u.GetUID(),
		generation: u.GetGeneration(),
		created:    u.GetCreationTimestamp().Time,
		id:         mutation.ID{Kind: u.GetKind(), Name: u.GetName()},
	}
	start := time.Now()
	defer func() { lm.took = max(time.Since(start), time.Nanosecond) }()
	data, err := json.Marshal(u.Object)
	if err != nil {
		lm.invalid = err.Error()
		return lm
	}
	m, errs := mutation.DecodeJSON(data)
	if len(errs) > 0 {
		lm.invalid = errs.ToAggregate().Error()
		return lm
	}
	lm.mutator = m
	return lm
}

// resolve builds the system of the static mutators and the live ones that
// can run with them. A live mutator is left out when it is invalid, has the
// kind and name of a static one, or conflicts with a static one or with a
// live one that comes before it.
func resolve(static *mutation.System, live []*liveMutator) (*mutation.System, map[types.UID]outcome) {
	outcomes := make(map[types.UID]outcome, len(live))
	staticIDs := map[mutation.ID]bool{}
	candidates := static.Mutators()
	for _, m := range candidates {
		staticIDs[m.ID()] = true
	}
	rank := map[mutation.ID]int{}
	byID := map[mutation.ID]*liveMutator{}
	for i, lm := range live {
		o := outcome{uid: lm.uid, generation: lm.generation}
		switch {
		case lm.mutator == nil:
			o.errorType, o.message = errorTypeInvalid, lm.invalid
		case staticIDs[lm.id]:
			o.errorType, o.message = errorTypeOverridden, fmt.Sprintf("the %s admission configuration has a %s named %q, which takes precedence", PluginName, lm.id.Kind, lm.id.Name)
		default:
			o.enforced = true
			candidates = append(candidates, lm.mutator)
			rank[lm.id] = i + 1 // static mutators rank 0: they always win
			byID[lm.id] = lm
		}
		outcomes[lm.uid] = o
	}
	for {
		system, err := mutation.NewSystem(candidates)
		if err == nil {
			return system, outcomes
		}
		dropped := dropLater(err, rank)
		if len(dropped) == 0 {
			// Not a conflict between live mutators: keep to the static
			// ones, which were valid together at start-up.
			klog.ErrorS(err, "LocationMutator cannot run the live mutators; it runs the configured ones alone")
			for uid, o := range outcomes {
				if o.enforced {
					o.enforced, o.errorType, o.message = false, errorTypeConflict, err.Error()
					outcomes[uid] = o
				}
			}
			return static, outcomes
		}
		for id, why := range dropped {
			lm := byID[id]
			outcomes[lm.uid] = outcome{uid: lm.uid, generation: lm.generation, errorType: errorTypeConflict, message: why}
			delete(rank, id)
		}
		candidates = slices.DeleteFunc(candidates, func(m *mutation.Mutator) bool { _, out := dropped[m.ID()]; return out })
	}
}

// dropLater picks, for each conflict NewSystem reported, the live mutator
// that comes later, unless the pair's other member is dropped already.
func dropLater(err error, rank map[mutation.ID]int) map[mutation.ID]string {
	conflicts := mutation.Conflicts(err)
	later := func(c *mutation.ConflictError) (drop, keep mutation.ID) {
		a, b := c.Mutators[0], c.Mutators[1]
		if rank[a] > rank[b] {
			return a, b
		}
		return b, a
	}
	slices.SortFunc(conflicts, func(x, y *mutation.ConflictError) int {
		dx, kx := later(x)
		dy, ky := later(y)
		if c := cmp.Compare(rank[dx], rank[dy]); c != 0 {
			return c
		}
		return cmp.Compare(rank[kx], rank[ky])
	})
	dropped := map[mutation.ID]string{}
	for _, c := range conflicts {
		drop, keep := later(c)
		if _, live := rank[drop]; !live || rank[drop] == 0 {
			continue // two static mutators: refused at start-up already
		}
		if _, gone := dropped[keep]; gone {
			continue
		}
		if _, gone := dropped[drop]; gone {
			continue
		}
		dropped[drop] = fmt.Sprintf("not enforced: it cannot run with %s, which came first: %v", keep, c)
	}
	return dropped
}

// outcome returns what the last rebuild decided about a mutator object.
func (s *liveSource) outcome(uid types.UID) (outcome, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.outcomes[uid]
	return o, ok
}

// warn records a Warning Event the first time this server finds a
// generation of a mutator it cannot enforce, or a new reason not to.
func (s *liveSource) warn(objects []*unstructured.Unstructured, outcomes map[types.UID]outcome) {
	for _, u := range objects {
		o := outcomes[u.GetUID()]
		if o.enforced {
			delete(s.lastWarning, o.uid)
			continue
		}
		if s.lastWarning[o.uid] == o {
			continue
		}
		s.lastWarning[o.uid] = o
		klog.InfoS("LocationMutator does not enforce a mutator", "kind", u.GetKind(), "name", u.GetName(), "generation", o.generation, "reason", o.errorType, "message", o.message)
		if s.events != nil {
			s.events(u, "MutatorNotEnforced", fmt.Sprintf("kube-apiserver %s does not enforce this mutator (%s): %s", s.identity, o.errorType, o.message))
		}
	}
}
