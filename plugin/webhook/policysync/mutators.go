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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// unservedRetry is how long a mutator kind whose CRD is not installed
// counts as having no objects before it is listed again: a missing
// optional resource is no outage, and installing Gatekeeper's CRDs later
// needs no restart.
const unservedRetry = 30 * time.Second

// mutatorListWatch lists and watches one mutator kind; while its resource
// is not served it lists nothing, and its watch ends as expired after
// unservedRetry, so that the reflector lists again.
func mutatorListWatch(resource dynamic.NamespaceableResourceInterface) cache.ListerWatcher {
	return plainListWatch{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := resource.List(ctx, opts)
			if apierrors.IsNotFound(err) {
				return &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}, nil
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := resource.Watch(ctx, opts)
			if !apierrors.IsNotFound(err) {
				return w, err
			}
			return newRetryWatch(ctx, unservedRetry), nil
		},
	}}
}

// plainListWatch lists with plain lists, which tell "not served" apart.
type plainListWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to list.
func (plainListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// newRetryWatch delivers nothing, then ends as expired after a while.
func newRetryWatch(ctx context.Context, after time.Duration) watch.Interface {
	s := newStream()
	go func() {
		defer close(s.out)
		t := time.NewTimer(after)
		defer t.Stop()
		select {
		case <-t.C:
			s.sendExpired("the resource was not served")
		case <-ctx.Done():
		case <-s.stop:
		}
	}()
	return s
}
