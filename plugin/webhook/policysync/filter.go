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
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// as created, through their own informers. A list leaves out the carried
// sources; a watch drops their events, and ends as expired when what is
// carried changes, so that the informer lists again and its handlers see
// the difference (the one path by which an informer learns of objects that
// left or joined its view without an event of their own).

// view filters one resource's lists and watches.
type view struct {
	carried *Carried
	mu      sync.Mutex
	// listed is Carried's generation at each resource's last list: a
	// watch that starts after the generation moved on ends at once, so
	// that nothing listed under the old view stays.
	listed map[string]uint64
}

func newView(c *Carried) *view { return &view{carried: c, listed: map[string]uint64{}} }

// listing records the generation a list of key is filtered at, before
// the list is made: a change during the list ends the watch that follows.
func (v *view) listing(key string) {
	gen, _ := v.carried.state()
	v.mu.Lock()
	v.listed[key] = gen
	v.mu.Unlock()
}

// watch filters the watch start opens, carried telling which objects to
// drop. A watch that sends its initial events (a streaming list) is a list.
func (v *view) watch(key string, opts metav1.ListOptions, start func() (watch.Interface, error), carried func(obj metav1.Object) bool) (watch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		v.listing(key)
	}
	gen, changed := v.carried.state()
	v.mu.Lock()
	listedGen, ok := v.listed[key]
	v.mu.Unlock()
	w := &filteredWatch{out: make(chan watch.Event), stop: make(chan struct{})}
	if !ok || listedGen != gen {
		go w.expire()
		return w, nil
	}
	in, err := start()
	if err != nil {
		return nil, err
	}
	go w.run(in, changed, carried)
	return w, nil
}

// filteredWatch is a watch without the carried objects' events.
type filteredWatch struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func (w *filteredWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *filteredWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *filteredWatch) run(in watch.Interface, changed <-chan struct{}, carried func(metav1.Object) bool) {
	defer close(w.out)
	defer in.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-changed:
			w.sendExpired()
			return
		case ev, ok := <-in.ResultChan():
			if !ok {
				return
			}
			if ev.Type != watch.Error && ev.Type != watch.Bookmark {
				if m, err := meta.Accessor(ev.Object); err == nil && carried(m) {
					continue
				}
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		}
	}
}

func (w *filteredWatch) expire() {
	defer close(w.out)
	w.sendExpired()
}

// sendExpired ends the watch as the API server ends one whose
// resourceVersion is too old: the reflector lists again.
func (w *filteredWatch) sendExpired() {
	expired := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
		Message: "what the compiled policies carry changed"}
	select {
	case w.out <- watch.Event{Type: watch.Error, Object: expired}:
	case <-w.stop:
	}
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
	return filteredPodPresets{PodPresetInterface: s.SettingsV1alpha1Interface.PodPresets(namespace), view: s.view, key: "podpresets/" + namespace}
}

func (s filteredSettingsV1alpha1) ClusterPodPresets() settingsv1alpha1client.ClusterPodPresetInterface {
	return filteredClusterPodPresets{ClusterPodPresetInterface: s.SettingsV1alpha1Interface.ClusterPodPresets(), view: s.view}
}

type filteredPodPresets struct {
	settingsv1alpha1client.PodPresetInterface
	view *view
	key  string
}

func (p filteredPodPresets) carried(m metav1.Object) bool {
	return p.view.carried.Has(compiler.Source{Kind: podPresetKind, Namespace: m.GetNamespace(), Name: m.GetName()})
}

func (p filteredPodPresets) List(ctx context.Context, opts metav1.ListOptions) (*settingsv1alpha1.PodPresetList, error) {
	p.view.listing(p.key)
	list, err := p.PodPresetInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list.Items = uncarried(list.Items, p.carried)
	return list, nil
}

func (p filteredPodPresets) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return p.view.watch(p.key, opts, func() (watch.Interface, error) { return p.PodPresetInterface.Watch(ctx, opts) }, p.carried)
}

type filteredClusterPodPresets struct {
	settingsv1alpha1client.ClusterPodPresetInterface
	view *view
}

const clusterPodPresetsKey = "clusterpodpresets"

func (p filteredClusterPodPresets) carried(m metav1.Object) bool {
	return p.view.carried.Has(compiler.Source{Kind: clusterPodPresetKind, Name: m.GetName()})
}

func (p filteredClusterPodPresets) List(ctx context.Context, opts metav1.ListOptions) (*settingsv1alpha1.ClusterPodPresetList, error) {
	p.view.listing(clusterPodPresetsKey)
	list, err := p.ClusterPodPresetInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list.Items = uncarried(list.Items, p.carried)
	return list, nil
}

func (p filteredClusterPodPresets) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return p.view.watch(clusterPodPresetsKey, opts, func() (watch.Interface, error) { return p.ClusterPodPresetInterface.Watch(ctx, opts) }, p.carried)
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
	return filteredMutators{NamespaceableResourceInterface: r, view: d.view, kind: k.Name, key: gvr.String()}
}

type filteredMutators struct {
	dynamic.NamespaceableResourceInterface
	view *view
	kind string
	key  string
}

func (m filteredMutators) carried(o metav1.Object) bool {
	return m.view.carried.Has(compiler.Source{Kind: m.kind, Name: o.GetName()})
}

func (m filteredMutators) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	m.view.listing(m.key)
	list, err := m.NamespaceableResourceInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list.Items = uncarried(list.Items, m.carried)
	return list, nil
}

func (m filteredMutators) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return m.view.watch(m.key, opts, func() (watch.Interface, error) { return m.NamespaceableResourceInterface.Watch(ctx, opts) }, m.carried)
}

// uncarried keeps, in place, the items carried does not report: one filter
// for the lists of every kind the plugins read.
func uncarried[T any, PT interface {
	*T
	metav1.Object
}](items []T, carried func(metav1.Object) bool) []T {
	kept := items[:0]
	for i := range items {
		if !carried(PT(&items[i])) {
			kept = append(kept, items[i])
		}
	}
	return kept
}
