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
	"slices"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// statusWriter keeps this server's entry in status.byPod of every mutator
// object it has decided about. It writes only when the entry differs from
// what the object holds, through the status subresource, and on a
// conflict reads the object again: other servers write their own entries
// in the same list.
type statusWriter struct {
	client   dynamic.Interface
	identity string
	// outcome is the latest decision about a mutator object.
	outcome func(types.UID) (outcome, bool)
	queue   workqueue.TypedRateLimitingInterface[statusKey]
}

type statusKey struct {
	kind *kindWatch
	name string
}

// statusTimeout bounds one status write.
const statusTimeout = 10 * time.Second

func newStatusWriter(client dynamic.Interface, identity string, outcome func(types.UID) (outcome, bool)) *statusWriter {
	return &statusWriter{
		client:   client,
		identity: identity,
		outcome:  outcome,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[statusKey](),
			workqueue.TypedRateLimitingQueueConfig[statusKey]{Name: "locationmutator_status"}),
	}
}

func (w *statusWriter) enqueue(kw *kindWatch, name string) { w.queue.Add(statusKey{kw, name}) }

func (w *statusWriter) run(stop <-chan struct{}) {
	go func() {
		<-stop
		w.queue.ShutDown()
	}()
	for w.next() {
	}
}

func (w *statusWriter) next() bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	if err := w.sync(key); err != nil {
		klog.V(2).InfoS("LocationMutator could not write a mutator's status; it retries", "resource", key.kind.gvr.String(), "name", key.name, "err", err)
		w.queue.AddRateLimited(key)
		return true
	}
	w.queue.Forget(key)
	return true
}

// sync writes this server's entry on one object if it is missing or out of
// date. An object whose generation the resolver has not decided about yet
// waits for that decision, which enqueues it again.
func (w *statusWriter) sync(key statusKey) error {
	obj, exists, err := key.kind.informer.GetStore().GetByKey(key.name)
	if err != nil || !exists {
		return err
	}
	cached, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	resource := w.client.Resource(key.kind.gvr)
	current := cached
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		o, ok := w.outcome(current.GetUID())
		if !ok || o.generation != current.GetGeneration() {
			return nil
		}
		updated, changed, err := withEntry(current, w.identity, o)
		if err != nil || !changed {
			return err
		}
		_, err = resource.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: "locationmutator-admission"})
		if apierrors.IsConflict(err) {
			fresh, getErr := resource.Get(ctx, key.name, metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			current = fresh
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// withEntry returns a copy of obj whose status.byPod has id's entry for o,
// and whether that changed anything. Other servers' entries are kept as
// they are.
func withEntry(obj *unstructured.Unstructured, id string, o outcome) (*unstructured.Unstructured, bool, error) {
	var status mutationsv1.MutatorStatus
	if raw, ok := obj.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
			// Somebody wrote a status we cannot read: replace it.
			klog.V(2).InfoS("LocationMutator replaces an unreadable status", "kind", obj.GetKind(), "name", obj.GetName(), "err", err)
			status = mutationsv1.MutatorStatus{}
		}
	}
	want := mutationsv1.MutatorPodStatus{
		ID:                 id,
		MutatorUID:         o.uid,
		Enforced:           o.enforced,
		ObservedGeneration: o.generation,
	}
	switch {
	case !o.enforced:
		want.Errors = []mutationsv1.MutatorError{{Type: o.errorType, Message: o.message}}
	case o.mode != mutation.ModeEnforce && o.mode != "":
		want.Enforced = false
		want.Errors = []mutationsv1.MutatorError{{Type: errorTypeMode, Message: modeMessage(o.mode)}}
	}
	i := slices.IndexFunc(status.ByPod, func(e mutationsv1.MutatorPodStatus) bool { return e.ID == id })
	switch {
	case i < 0:
		status.ByPod = append(status.ByPod, want)
	case apiequality.Semantic.DeepEqual(status.ByPod[i], want):
		return obj, false, nil
	default:
		status.ByPod[i] = want
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return nil, false, fmt.Errorf("encoding the status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	updated := obj.DeepCopy()
	updated.Object["status"] = raw
	return updated, true, nil
}

// modeMessage says, in a status entry, that a mutator in Warn or Audit mode
// changes nothing and where what it would change is reported.
func modeMessage(mode mutation.Mode) string {
	where := "the audit log"
	if mode == mutation.ModeWarn {
		where = "admission warnings and the audit log"
	}
	return fmt.Sprintf("mode %s: not enforced, changes are reported only, in %s", mode, where)
}
