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

package webhook

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/admission"
)

// requestState is what the plugins keep about one request across its
// reviews: in-process, every plugin call on a request shares one
// reinvocation context, where the plugins note what they have counted,
// recorded and warned about, so that a second call adds none of it again.
type requestState struct {
	// mu serializes the reviews of one request: the plugins' records are
	// not safe for concurrent use, and kube-apiserver never sends two
	// reviews of a request at once.
	mu       sync.Mutex
	values   map[string]any
	admitted map[string]bool
	// reinvoked is set once a mutating plugin ran a second time.
	reinvoked bool
}

// reinvocations holds the state of recent requests by UID: bounded in
// number, and each kept for a limited time, which outlasts any request
// kube-apiserver is still working on.
type reinvocations struct {
	mu    sync.Mutex
	cache *cache.LRUExpireCache
	ttl   time.Duration
}

func newReinvocations(size int, ttl time.Duration) *reinvocations {
	return &reinvocations{cache: cache.NewLRUExpireCache(size), ttl: ttl}
}

// state returns the state of the request uid, new if none is kept. A
// review without a UID is a request of its own.
func (r *reinvocations) state(uid types.UID) *requestState {
	if uid == "" {
		return &requestState{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.cache.Get(uid); ok {
		return s.(*requestState)
	}
	s := &requestState{}
	r.cache.Add(uid, s, r.ttl)
	return s
}

// begin starts a review of plugin on the request, and returns its
// reinvocation context: a reinvocation when the plugin's Admit already ran
// on the request. Call it with s.mu held.
func (s *requestState) begin(plugin string, mutating bool) *reinvocationContext {
	rc := &reinvocationContext{state: s}
	if !mutating {
		rc.isReinvoke = s.reinvoked
		return rc
	}
	if s.admitted[plugin] {
		rc.isReinvoke = true
		s.reinvoked = true
	}
	if s.admitted == nil {
		s.admitted = map[string]bool{}
	}
	s.admitted[plugin] = true
	return rc
}

// reinvocationContext is one review's view of the request's state.
type reinvocationContext struct {
	state          *requestState
	isReinvoke     bool
	shouldReinvoke bool
}

var _ admission.ReinvocationContext = &reinvocationContext{}

func (rc *reinvocationContext) IsReinvoke() bool { return rc.isReinvoke }

func (rc *reinvocationContext) SetIsReinvoke() { rc.isReinvoke = true }

// ShouldReinvoke reports what the plugin asked for; kube-apiserver decides
// itself whether to reinvoke webhooks, from how the object changed.
func (rc *reinvocationContext) ShouldReinvoke() bool { return rc.shouldReinvoke }

func (rc *reinvocationContext) SetShouldReinvoke() { rc.shouldReinvoke = true }

func (rc *reinvocationContext) Value(plugin string) any { return rc.state.values[plugin] }

func (rc *reinvocationContext) SetValue(plugin string, v any) {
	if rc.state.values == nil {
		rc.state.values = map[string]any{}
	}
	rc.state.values[plugin] = v
}
