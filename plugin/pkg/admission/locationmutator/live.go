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
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// liveSource keeps a mutation system in step with the mutator objects in
// the API: the configuration's mutators plus the live ones the resolver
// lets run. It takes in only the objects that changed, and publishes each
// system whole, so a request sees one system or the next, never a mix.
type liveSource struct {
	publish  func(*mutation.System)
	identity string
	events   eventSink

	kinds  []*kindWatch
	status *statusWriter

	// pending are the objects changed since the last pass of the loop;
	// wake says there are some.
	pendingMu sync.Mutex
	pending   map[objectKey]struct{}
	wake      chan struct{}

	// Owned by the loop.
	resolver    *resolver
	published   *mutation.System
	byKey       map[objectKey]*liveMutator
	lastWarning map[types.UID]outcome

	mu       sync.RWMutex
	outcomes map[types.UID]outcome
}

// objectKey names a mutator object by its kind's watch and its name.
type objectKey struct {
	kind *kindWatch
	name string
}

// eventSink records a Warning Event on a mutator object.
type eventSink func(obj runtime.Object, reason, message string)

func newLiveSource(static *mutation.System, client dynamic.Interface, identity string, events eventSink, publish func(*mutation.System)) *liveSource {
	s := &liveSource{
		publish:     publish,
		identity:    identity,
		events:      events,
		pending:     map[objectKey]struct{}{},
		wake:        make(chan struct{}, 1),
		resolver:    newResolver(static),
		byKey:       map[objectKey]*liveMutator{},
		lastWarning: map[types.UID]outcome{},
		outcomes:    map[types.UID]outcome{},
	}
	s.status = newStatusWriter(client, identity, s.outcome)
	for _, k := range watchedKinds {
		s.kinds = append(s.kinds, newKindWatch(client, k))
	}
	return s
}

// run watches until stop closes. Every handler is added before anything
// starts, so that an error leaves nothing running.
func (s *liveSource) run(stop <-chan struct{}) error {
	for _, kw := range s.kinds {
		if _, err := kw.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.changed(kw, obj) },
			UpdateFunc: func(_, obj any) { s.changed(kw, obj) },
			DeleteFunc: func(obj any) { s.changed(kw, obj) },
		}); err != nil {
			return fmt.Errorf("%s: watching %s: %w", PluginName, kw.kind, err)
		}
	}
	for _, kw := range s.kinds {
		go kw.informer.Run(stop)
	}
	go s.status.run(stop)
	go s.loop(stop)
	return nil
}

// changed notes the object for the loop and asks for a status check.
func (s *liveSource) changed(kw *kindWatch, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	s.pendingMu.Lock()
	s.pending[objectKey{kw, u.GetName()}] = struct{}{}
	s.pendingMu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // a pass is already due; it will see this change
	}
	s.status.enqueue(kw, u.GetName())
}

func (s *liveSource) synced() bool {
	for _, kw := range s.kinds {
		if !kw.informer.HasSynced() {
			return false
		}
	}
	return true
}

func (s *liveSource) loop(stop <-chan struct{}) {
	// Informers report synced only after their first list has been
	// delivered; poll for that once, then take in every change.
	if !cache.WaitForCacheSync(stop, s.synced) {
		return
	}
	s.update(true)
	for {
		select {
		case <-stop:
			return
		case <-s.wake:
			s.update(false)
		}
	}
}

// update takes in the pending objects and publishes the system; first
// publishes even when nothing changed, which ends the start-up refusals.
func (s *liveSource) update(first bool) {
	s.pendingMu.Lock()
	keys := s.pending
	s.pending = map[objectKey]struct{}{}
	s.pendingMu.Unlock()

	var (
		decoded []*liveMutator
		removed bool
	)
	for key := range keys {
		lm, gone := s.take(key)
		if lm != nil {
			decoded = append(decoded, lm)
		}
		removed = removed || gone
	}
	changed := s.resolver.settle()
	if !first && !removed && len(decoded) == 0 && len(changed) == 0 {
		return
	}
	if system := s.resolver.system.System(); first || system != s.published {
		s.published = system
		s.publish(system)
	}
	reportLive(decoded, s.resolver.states)

	s.mu.Lock()
	for _, lm := range changed {
		s.outcomes[lm.uid] = lm.outcome
	}
	s.mu.Unlock()
	for _, lm := range changed {
		s.warn(lm)
		s.status.enqueue(lm.kind, lm.name)
	}
}

// take reads one changed object from its informer and hands it to the
// resolver. It returns the object decoded, if its generation is new, and
// whether an object was forgotten.
func (s *liveSource) take(key objectKey) (decoded *liveMutator, removed bool) {
	obj, exists, _ := key.kind.informer.GetStore().GetByKey(key.name)
	u, ok := obj.(*unstructured.Unstructured)
	old := s.byKey[key]
	if !exists || !ok {
		if old != nil {
			s.forget(key, old)
		}
		return nil, old != nil
	}
	if old != nil && old.uid == u.GetUID() && old.generation == u.GetGeneration() && sameMode(old, u) {
		// A change of status or metadata alone (the status writes of
		// every server among them) changes nothing here, but for the
		// mode annotation, which does not bump the generation.
		old.object = u
		return nil, false
	}
	if old != nil && old.uid != u.GetUID() {
		s.forget(key, old)
		removed = true
	}
	lm := decodeObject(u)
	lm.kind, lm.name = key.kind, key.name
	s.byKey[key] = lm
	s.resolver.put(lm)
	return lm, removed
}

// sameMode reports whether u has the mode annotation lm was decoded with.
func sameMode(lm *liveMutator, u *unstructured.Unstructured) bool {
	mode, hasMode := u.GetAnnotations()[mutation.ModeAnnotation]
	return lm.mode == mode && lm.hasMode == hasMode
}

func (s *liveSource) forget(key objectKey, lm *liveMutator) {
	delete(s.byKey, key)
	delete(s.lastWarning, lm.uid)
	s.resolver.remove(lm.uid)
	s.mu.Lock()
	delete(s.outcomes, lm.uid)
	s.mu.Unlock()
}

func decodeObject(u *unstructured.Unstructured) *liveMutator {
	lm := &liveMutator{
		uid:        u.GetUID(),
		generation: u.GetGeneration(),
		created:    u.GetCreationTimestamp().Time,
		id:         mutation.ID{Kind: u.GetKind(), Name: u.GetName()},
		object:     u,
	}
	lm.mode, lm.hasMode = u.GetAnnotations()[mutation.ModeAnnotation]
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

// outcome returns what the resolver last decided about a mutator object.
func (s *liveSource) outcome(uid types.UID) (outcome, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.outcomes[uid]
	return o, ok
}

// warn records a Warning Event the first time this server finds a
// generation of a mutator it cannot enforce, or a new reason not to.
func (s *liveSource) warn(lm *liveMutator) {
	o := lm.outcome
	if o.enforced {
		delete(s.lastWarning, o.uid)
		return
	}
	if s.lastWarning[o.uid] == o {
		return
	}
	s.lastWarning[o.uid] = o
	klog.InfoS("LocationMutator does not enforce a mutator", "kind", lm.id.Kind, "name", lm.id.Name, "generation", o.generation, "reason", o.errorType, "message", o.message)
	if s.events != nil && lm.object != nil {
		s.events(lm.object, "MutatorNotEnforced", fmt.Sprintf("kube-apiserver %s does not enforce this mutator (%s): %s", s.identity, o.errorType, o.message))
	}
}
