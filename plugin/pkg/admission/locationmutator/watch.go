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
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// watchedKind is a mutator kind served by Gatekeeper's CRDs, at the version
// the live source reads it (every served version holds the same object).
type watchedKind struct {
	kind string
	gvr  schema.GroupVersionResource
}

// watchedKinds are the kinds the live source watches: every kind the
// decoder knows.
var watchedKinds = func() []watchedKind {
	out := make([]watchedKind, len(mutation.Kinds))
	for i, k := range mutation.Kinds {
		out[i] = watchedKind{kind: k.Name, gvr: k.GVR()}
	}
	return out
}()

// unservedProbe is how often the live source asks whether the resource of
// a kind that was not served (its CRD not installed) is served now.
const unservedProbe = 2 * time.Second

type kindWatch struct {
	watchedKind
	informer cache.SharedIndexInformer

	mu     sync.Mutex
	served *bool // nil until the first list
}

// newKindWatch returns the informer of one kind, not started.
func newKindWatch(client dynamic.Interface, k watchedKind) *kindWatch {
	kw := &kindWatch{watchedKind: k}
	kw.informer = cache.NewSharedIndexInformer(kw.listWatch(client), &unstructured.Unstructured{}, 0, cache.Indexers{})
	return kw
}

// listWatch lists and watches one kind. While its resource is not served
// (the CRD is not installed), it lists nothing, so that the kind counts as
// synced with no mutators, and its watch probes the resource until it is
// served, then ends as expired, which makes the reflector list again.
func (kw *kindWatch) listWatch(client dynamic.Interface) cache.ListerWatcher {
	resource := client.Resource(kw.gvr)
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
