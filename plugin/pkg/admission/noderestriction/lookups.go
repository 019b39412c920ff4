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

package noderestriction

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	storagev1listers "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/rest"
)

// getter reads the one object of kind T a rule needs, by namespace (empty
// for a cluster-scoped kind) and name. The rules see only this: whether an
// informer's cache or kube-apiserver answers is chosen once, when the
// plugin is initialized (Configuration.Lookups), so every rule has one
// code path. The object returned is shared: rules only read it.
type getter[T any] interface {
	get(ctx context.Context, namespace, name string) (*T, error)
}

// getters are the lookups the rules make. The storage ones (claims,
// volumes, CSI drivers) are nil unless ServiceAccountNodeAudienceRestriction
// is on, the only rule that reads them.
type getters struct {
	pods            getter[corev1.Pod]
	nodes           getter[corev1.Node]
	serviceAccounts getter[corev1.ServiceAccount]
	csiDrivers      getter[storagev1.CSIDriver]
	pvcs            getter[corev1.PersistentVolumeClaim]
	pvs             getter[corev1.PersistentVolume]
}

// cached answers from an informer's cache; its errors are the lister's.
type cached[T any] func(namespace, name string) (*T, error)

func (c cached[T]) get(_ context.Context, namespace, name string) (*T, error) {
	return c(namespace, name)
}

// listers are the informer caches of the Informers lookups.
type listers struct {
	pods            corev1listers.PodLister
	nodes           corev1listers.NodeLister
	serviceAccounts corev1listers.ServiceAccountLister
	csiDrivers      storagev1listers.CSIDriverLister
	pvcs            corev1listers.PersistentVolumeClaimLister
	pvs             corev1listers.PersistentVolumeLister
}

// getters wraps each lister given; one left nil stays nil, so that
// ValidateInitialization names it.
func (l listers) getters() getters {
	var g getters
	if l.pods != nil {
		g.pods = cached[corev1.Pod](func(ns, name string) (*corev1.Pod, error) { return l.pods.Pods(ns).Get(name) })
	}
	if l.nodes != nil {
		g.nodes = cached[corev1.Node](func(_, name string) (*corev1.Node, error) { return l.nodes.Get(name) })
	}
	if l.serviceAccounts != nil {
		g.serviceAccounts = cached[corev1.ServiceAccount](func(ns, name string) (*corev1.ServiceAccount, error) {
			return l.serviceAccounts.ServiceAccounts(ns).Get(name)
		})
	}
	if l.csiDrivers != nil {
		g.csiDrivers = cached[storagev1.CSIDriver](func(_, name string) (*storagev1.CSIDriver, error) { return l.csiDrivers.Get(name) })
	}
	if l.pvcs != nil {
		g.pvcs = cached[corev1.PersistentVolumeClaim](func(ns, name string) (*corev1.PersistentVolumeClaim, error) {
			return l.pvcs.PersistentVolumeClaims(ns).Get(name)
		})
	}
	if l.pvs != nil {
		g.pvs = cached[corev1.PersistentVolume](func(_, name string) (*corev1.PersistentVolume, error) { return l.pvs.Get(name) })
	}
	return g
}

// live GETs the object from kube-apiserver, at the latest resource version
// (the stored object, not a cache's), under the request's context and so
// its deadline.
type live[T any] struct {
	// resource is the lister's name for the kind, in the singular: the
	// NotFound a client receives is passed on as it is, so it must read
	// the same whichever lookups answer ("pod \"web\" not found", where
	// kube-apiserver says "pods").
	resource   schema.GroupResource
	namespaced bool
	fetch      func(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*T, error)
}

func (l live[T]) get(ctx context.Context, namespace, name string) (*T, error) {
	// A name no object can have (none, or one that is no path segment,
	// as an Eviction's body may give) is not found in a cache; the client
	// would refuse to send it instead, so it is answered here the same.
	if !storable(name) || (l.namespaced && !storable(namespace)) {
		return nil, apierrors.NewNotFound(l.resource, name)
	}
	obj, err := l.fetch(ctx, namespace, name, metav1.GetOptions{})
	if err == nil {
		return obj, nil
	}
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(l.resource, name)
	}
	// A cache answers nothing but NotFound; anything else (a timeout, a
	// refusal of the server's own RBAC) names what was being read.
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	return nil, fmt.Errorf("reading %s %s: %w", l.resource.String(), key, err)
}

// storable is the client's own check of a name it puts in a path.
func storable(name string) bool {
	return name != "" && len(rest.IsValidPathSegmentName(name)) == 0
}

// liveGetters GETs every kind through client; the storage ones only with
// storage set, as the informers are started only then.
func liveGetters(client kubernetes.Interface, storage bool) getters {
	core, storageV1 := client.CoreV1(), client.StorageV1()
	g := getters{
		pods: live[corev1.Pod]{corev1.Resource("pod"), true, func(ctx context.Context, ns, name string, o metav1.GetOptions) (*corev1.Pod, error) {
			return core.Pods(ns).Get(ctx, name, o)
		}},
		nodes: live[corev1.Node]{corev1.Resource("node"), false, func(ctx context.Context, _, name string, o metav1.GetOptions) (*corev1.Node, error) {
			return core.Nodes().Get(ctx, name, o)
		}},
		serviceAccounts: live[corev1.ServiceAccount]{corev1.Resource("serviceaccount"), true, func(ctx context.Context, ns, name string, o metav1.GetOptions) (*corev1.ServiceAccount, error) {
			return core.ServiceAccounts(ns).Get(ctx, name, o)
		}},
	}
	if storage {
		g.csiDrivers = live[storagev1.CSIDriver]{storagev1.Resource("csidriver"), false, func(ctx context.Context, _, name string, o metav1.GetOptions) (*storagev1.CSIDriver, error) {
			return storageV1.CSIDrivers().Get(ctx, name, o)
		}}
		g.pvcs = live[corev1.PersistentVolumeClaim]{corev1.Resource("persistentvolumeclaim"), true, func(ctx context.Context, ns, name string, o metav1.GetOptions) (*corev1.PersistentVolumeClaim, error) {
			return core.PersistentVolumeClaims(ns).Get(ctx, name, o)
		}}
		g.pvs = live[corev1.PersistentVolume]{corev1.Resource("persistentvolume"), false, func(ctx context.Context, _, name string, o metav1.GetOptions) (*corev1.PersistentVolume, error) {
			return core.PersistentVolumes().Get(ctx, name, o)
		}}
	}
	return g
}
