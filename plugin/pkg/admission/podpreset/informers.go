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

package podpreset

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// watchThroughDynamicClient feeds the preset index from informers over the
// dynamic client, for servers that give plugins no settings informer
// factory (a stock kube-apiserver build only adds our plugins, not an
// initializer). The informers hold typed presets, so the index sees what a
// factory's informers would give it. They retry until the API server
// serves the group and stop when it shuts down.
func (p *Plugin) watchThroughDynamicClient() {
	for _, informer := range []cache.SharedIndexInformer{
		p.typedInformer(settingsv1alpha1.SchemeGroupVersion.WithResource("podpresets"),
			&settingsv1alpha1.PodPreset{}, func() runtime.Object { return &settingsv1alpha1.PodPresetList{} }),
		p.typedInformer(settingsv1alpha1.SchemeGroupVersion.WithResource("clusterpodpresets"),
			&settingsv1alpha1.ClusterPodPreset{}, func() runtime.Object { return &settingsv1alpha1.ClusterPodPresetList{} }),
	} {
		p.feedIndex(informer)
		go informer.Run(p.stop)
	}
}

// typedInformer lists and watches gvr through the dynamic client and
// converts every object to the typed form of example.
func (p *Plugin) typedInformer(gvr schema.GroupVersionResource, example runtime.Object, newList func() runtime.Object) cache.SharedIndexInformer {
	resource := p.dynamicClient.Resource(gvr)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			list, err := resource.List(ctx, options)
			if err != nil {
				return nil, err
			}
			typed := newList()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.UnstructuredContent(), typed); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", gvr.Resource, err)
			}
			return typed, nil
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			w, err := resource.Watch(ctx, options)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(event watch.Event) (watch.Event, bool) {
				u, ok := event.Object.(*unstructured.Unstructured)
				if !ok {
					return event, true
				}
				typed := example.DeepCopyObject()
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), typed); err != nil {
					// The reflector restarts the watch on an error event.
					return watch.Event{Type: watch.Error, Object: &metav1.Status{
						Status: metav1.StatusFailure, Message: fmt.Sprintf("decoding %s: %v", gvr.Resource, err),
					}}, true
				}
				event.Object = typed
				return event, true
			}), nil
		},
	}
	// Streaming lists are used only where the dynamic client supports them.
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, p.dynamicClient), example, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}
