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
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/compiler"
)

// DefaultHandover is the handover delay of NewCarried the server uses:
// kube-apiserver's policy informers watch the same objects from the same
// watch cache and take milliseconds; seconds leave room for a loaded one,
// and the webhook applying a source twice meanwhile changes nothing.
const DefaultHandover = 5 * time.Second

// policyResync: the policies change only when the controller writes them.
const policyResync = 10 * time.Minute

// NewPolicyInformers is the informer factory of the mode's own policies and
// bindings (those with SetLabel), which the controller and Carried share.
// The host starts it and is ready once it synced.
func NewPolicyInformers(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, policyResync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = SetLabel }))
}

// policyInformers are the four kinds' informers, bindings first: the order
// stale objects are deleted in, so that a policy never stays bound to
// nothing.
func policyInformers(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
	v1 := f.Admissionregistration().V1()
	return []cache.SharedIndexInformer{
		v1.MutatingAdmissionPolicyBindings().Informer(),
		v1.ValidatingAdmissionPolicyBindings().Informer(),
		v1.MutatingAdmissionPolicies().Informer(),
		v1.ValidatingAdmissionPolicies().Informer(),
	}
}

// Carried is what the compiled policies carry, as a replica observes them
// in the API: the sources named by every set it observes whole (each of
// the set's objects present with the set's hash), held back for the
// handover delay after they first appear. The webhook plugins see every
// other source (FilterSettings, FilterDynamic).
//
// The transitions err on the side of applying a source twice, never on
// missing it:
//   - a source newly compiled stays with the webhook until the whole set
//     carrying it has been observed for the handover delay, which covers
//     kube-apiserver's own policy informers catching up (they watch the
//     same objects);
//   - while a set is being replaced (some objects at the new hash, some at
//     the old), no set is whole and the webhook applies every source;
//   - a source the set no longer carries (refused now, or deleted, or the
//     policies deleted) goes back to the webhook at once.
//
// Applying a compiled source twice is harmless: the policy and the plugin
// make the same change, and both plugins leave a pod that already has it
// as it is (PodPreset merges an item equal to the pod's as no change and
// only rewrites its own annotation; Gatekeeper's mutators converge, which
// the LocationMutator checks). A source is carried by its identity, not
// its resourceVersion: while an edited source waits for its recompiled
// policy, the policy applies the version before the edit, as the plugin
// itself would until its informer saw the edit, and the webhook does not
// apply the new version on top of it.
type Carried struct {
	handover time.Duration
	factory  informers.SharedInformerFactory
	listers  []cache.SharedIndexInformer
	handled  []cache.ResourceEventHandlerRegistration

	mu sync.Mutex
	// since is when each source carried by a whole set was first seen so.
	since map[compiler.Source]time.Time
	timer *time.Timer
	// changed closes when effective changes, and is replaced.
	changed chan struct{}
	gen     uint64

	// effective is the sources handed over, read on every list and event
	// the plugins' view filters.
	effective atomic.Pointer[map[compiler.Source]bool]
}

// NewCarried observes the policies of f (NewPolicyInformers), handing a
// source over to the policies handover after a whole set carrying it is
// observed.
func NewCarried(f informers.SharedInformerFactory, handover time.Duration) (*Carried, error) {
	registerMetrics()
	c := &Carried{handover: handover, factory: f, listers: policyInformers(f), since: map[compiler.Source]time.Time{}, changed: make(chan struct{})}
	c.effective.Store(&map[compiler.Source]bool{})
	for _, inf := range c.listers {
		r, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.recompute() },
			UpdateFunc: func(any, any) { c.recompute() },
			DeleteFunc: func(any) { c.recompute() },
		})
		if err != nil {
			return nil, err
		}
		c.handled = append(c.handled, r)
	}
	return c, nil
}

// Start starts the policies' informer factory: Carried is the host's
// informer factory of the mode (webhook.Options.Informers).
func (c *Carried) Start(stop <-chan struct{}) { c.factory.Start(stop) }

// WaitForCacheSync waits until the policies are listed and Carried has
// seen them all, so that a ready replica hands over what the policies
// carry from its first review on.
func (c *Carried) WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool {
	synced := c.factory.WaitForCacheSync(stop)
	handled := make([]cache.InformerSynced, len(c.handled))
	for i, r := range c.handled {
		handled[i] = r.HasSynced
	}
	synced[reflect.TypeOf(c)] = cache.WaitForCacheSync(stop, handled...)
	return synced
}

// Has reports whether the policies carry the source, so that the webhook
// leaves it to them.
func (c *Carried) Has(s compiler.Source) bool { return (*c.effective.Load())[s] }

// state is the generation of what Has answers and a channel that closes
// when it changes.
func (c *Carried) state() (uint64, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen, c.changed
}

// wholeSets are the sources of every set observed whole.
func wholeSets(listers []cache.SharedIndexInformer) map[compiler.Source]bool {
	type set struct {
		want, have int
		sources    string
		consistent bool
	}
	sets := map[string]*set{}
	for _, inf := range listers {
		for _, obj := range inf.GetStore().List() {
			m, ok := obj.(metav1.Object)
			if !ok {
				continue
			}
			hash := m.GetLabels()[SetLabel]
			want, ok := parseCount(m.GetAnnotations()[ObjectsAnnotation])
			sources := m.GetAnnotations()[SourcesAnnotation]
			s := sets[hash]
			if s == nil {
				s = &set{want: want, sources: sources, consistent: ok && hash != ""}
				sets[hash] = s
			}
			s.have++
			if s.want != want || s.sources != sources {
				s.consistent = false
			}
		}
	}
	out := map[compiler.Source]bool{}
	for hash, s := range sets {
		if !s.consistent || s.have != s.want {
			continue
		}
		sources, err := parseSources(s.sources)
		if err != nil {
			klog.ErrorS(err, "A compiled policy set names its sources in a form not understood; the webhook keeps them", "set", hash, "annotation", SourcesAnnotation)
			continue
		}
		for _, src := range sources {
			out[src] = true
		}
	}
	return out
}

// recompute follows an observed change of the policies.
func (c *Carried) recompute() {
	// The stores are read under the lock: the four informers' handlers
	// run concurrently, and an answer read before another informer's
	// change must not be published after the answer read after it.
	c.mu.Lock()
	defer c.mu.Unlock()
	whole := wholeSets(c.listers)
	now := time.Now()
	for s := range c.since {
		if !whole[s] {
			delete(c.since, s)
		}
	}
	for s := range whole {
		if _, ok := c.since[s]; !ok {
			c.since[s] = now
		}
	}
	c.publishLocked(now)
}

// publishLocked hands over the sources whose delay is over, takes back the
// ones no longer carried, and arms the timer for the next handover.
func (c *Carried) publishLocked(now time.Time) {
	next := map[compiler.Source]bool{}
	var wait time.Duration
	for s, t := range c.since {
		if left := c.handover - now.Sub(t); left > 0 {
			if wait == 0 || left < wait {
				wait = left
			}
			continue
		}
		next[s] = true
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if wait > 0 {
		c.timer = time.AfterFunc(wait, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.publishLocked(time.Now())
		})
	}
	if sameSet(next, *c.effective.Load()) {
		return
	}
	c.effective.Store(&next)
	c.gen++
	close(c.changed)
	c.changed = make(chan struct{})
	carriedSources.Set(float64(len(next)))
	klog.V(2).InfoS("The webhook leaves to the compiled policies what they carry", "sources", len(next))
}

func sameSet(a, b map[compiler.Source]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for s := range a {
		if !b[s] {
			return false
		}
	}
	return true
}
