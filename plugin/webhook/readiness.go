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
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// readyCheck is one thing the host waits for before it is ready. wait
// returns true once it holds, or false when it gave up for now (it is
// called again) or stop closed.
type readyCheck struct {
	name string
	wait func() bool
}

// readiness is what /readyz reports: the checks still pending, or none.
type readiness struct {
	mu      sync.Mutex
	started bool
	pending []string
}

// readyChecks are the informer factories' first lists and every plugin's
// own ready function (admission.Handler's SetReadyFunc, which a plugin sets
// to its caches' HasSynced): a pod create must never meet a preset index
// that has not seen its first list.
func (h *Host) readyChecks(stop <-chan struct{}) []readyCheck {
	var checks []readyCheck
	for i, f := range h.informers {
		checks = append(checks, readyCheck{name: fmt.Sprintf("informers of %T #%d", f, i), wait: func() bool {
			for _, synced := range f.WaitForCacheSync(stop) {
				if !synced {
					return false
				}
			}
			return true
		}})
	}
	for _, name := range h.order {
		if r, ok := h.plugins[name].plugin.(interface{ WaitForReady() bool }); ok {
			checks = append(checks, readyCheck{name: name, wait: r.WaitForReady})
		}
	}
	return checks
}

// begin makes every check pending.
func (r *readiness) begin(checks []readyCheck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = true
	for _, c := range checks {
		r.pending = append(r.pending, c.name)
	}
}

// track waits for every check in turn and removes it from pending once it
// holds.
func (r *readiness) track(checks []readyCheck, stop <-chan struct{}) {
	for _, c := range checks {
		for !c.wait() {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		r.mu.Lock()
		r.pending = r.pending[1:]
		r.mu.Unlock()
		klog.V(2).InfoS("Webhook readiness check passed", "check", c.name)
	}
	klog.InfoS("Webhook ready: every plugin's caches have synced")
}

// Ready returns nil once the host was started and every plugin's caches
// synced, and otherwise an error naming what it still waits for.
func (h *Host) Ready() error {
	h.readiness.mu.Lock()
	defer h.readiness.mu.Unlock()
	if !h.readiness.started {
		return fmt.Errorf("not started")
	}
	if len(h.readiness.pending) > 0 {
		return fmt.Errorf("waiting for %s", strings.Join(h.readiness.pending, ", "))
	}
	return nil
}
