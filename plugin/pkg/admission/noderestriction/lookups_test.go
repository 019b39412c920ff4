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
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
)

// initializedWith goes through Register and the standard initializer with
// client and factory, as kube-apiserver and the webhook host do.
func initializedWith(t *testing.T, lookups string, client *fake.Clientset, factory informers.SharedInformerFactory) (*Plugin, error) {
	t.Helper()
	plugins := admission.NewPlugins()
	Register(plugins)
	config := "apiVersion: noderestriction.admission.admitkit.io/v1alpha1\nkind: Configuration\nlookups: " + lookups + "\n"
	var init admission.PluginInitializer
	if client == nil {
		// A nil *fake.Clientset in the interface would not be nil.
		init = initializer.New(nil, nil, factory, allowAll{}, newGates(t, "", nil), nil, nil, nil)
	} else {
		init = initializer.New(client, nil, factory, allowAll{}, newGates(t, "", nil), nil, nil, nil)
	}
	p, err := plugins.InitPlugin(PluginName, strings.NewReader(config), init)
	if err != nil {
		return nil, err
	}
	return p.(*Plugin), nil
}

// startedInformers starts factory and returns the kinds it watches.
func startedInformers(t *testing.T, factory informers.SharedInformerFactory) []string {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	factory.Start(stop)
	var kinds []string
	for typ, synced := range factory.WaitForCacheSync(stop) {
		if !synced {
			t.Errorf("informer of %v did not sync", typ)
		}
		kinds = append(kinds, typ.Elem().Name())
	}
	slices.Sort(kinds)
	return kinds
}

// With lookups: Informers the plugin starts the informers of every kind
// its rules read (the storage ones with the audience gate, on by
// default); with Requests it starts none, and reads through the client.
func TestLookupsInitialization(t *testing.T) {
	t.Run("Informers", func(t *testing.T) {
		client := fake.NewClientset()
		factory := informers.NewSharedInformerFactory(client, 0)
		if _, err := initializedWith(t, "Informers", client, factory); err != nil {
			t.Fatal(err)
		}
		want := []string{"CSIDriver", "Node", "PersistentVolume", "PersistentVolumeClaim", "Pod", "ServiceAccount"}
		if got := startedInformers(t, factory); !slices.Equal(got, want) {
			t.Errorf("informers %v, want %v", got, want)
		}
	})
	t.Run("Requests", func(t *testing.T) {
		pod := testPod("ns", "mypod", "mynode")
		client := fake.NewClientset(pod)
		factory := informers.NewSharedInformerFactory(client, 0)
		p, err := initializedWith(t, "Requests", client, factory)
		if err != nil {
			t.Fatal(err)
		}
		if got := startedInformers(t, factory); len(got) != 0 {
			t.Errorf("informers %v, want none", got)
		}
		del := func(name string) error {
			return p.Validate(context.Background(), noderestrictiontest.Request(nil, nil, kindPod, gvrPods, "ns", name, "", admission.Delete, noderestrictiontest.UserMyNode), nil)
		}
		if err := del("mypod"); err != nil {
			t.Errorf("deleting a pod of its node: %v", err)
		}
		err = del("gone")
		if !apierrors.IsNotFound(err) || err.Error() != `pod "gone" not found` {
			t.Errorf("deleting a missing pod: %v, want the lister's NotFound", err)
		}
		var gets []string
		for _, a := range client.Actions() {
			if g, ok := a.(clienttesting.GetAction); ok {
				gets = append(gets, g.GetVerb()+" "+g.GetResource().Resource+" "+g.GetNamespace()+"/"+g.GetName())
			} else if a.GetVerb() == "list" || a.GetVerb() == "watch" {
				gets = append(gets, a.GetVerb()+" "+a.GetResource().Resource)
			}
		}
		if want := []string{"get pods ns/mypod", "get pods ns/gone"}; !slices.Equal(gets, want) {
			t.Errorf("requests to kube-apiserver %v, want %v", gets, want)
		}
	})
	t.Run("Requests without a client", func(t *testing.T) {
		_, err := initializedWith(t, "Requests", nil, informers.NewSharedInformerFactory(fake.NewClientset(), 0))
		checkErr(t, err, "NodeRestriction with lookups: Requests requires a Kubernetes client")
	})
}

// A live lookup reads under the request's context, names what it read
// when kube-apiserver fails, and answers a name no object can have as a
// cache does, without asking.
func TestLiveLookup(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "the request's")
	var asked []string
	fail := errors.New("connection refused")
	l := live[corev1.Pod]{corev1.Resource("pod"), true, func(got context.Context, ns, name string, _ metav1.GetOptions) (*corev1.Pod, error) {
		asked = append(asked, ns+"/"+name)
		if got.Value(key{}) != "the request's" {
			t.Errorf("the lookup of %s/%s did not run under the request's context", ns, name)
		}
		switch name {
		case "mypod":
			return testPod(ns, name, "mynode"), nil
		case "missing":
			return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
		}
		return nil, fail
	}}
	if pod, err := l.get(ctx, "ns", "mypod"); err != nil || pod.Name != "mypod" {
		t.Errorf("get ns/mypod: %v, %v", pod, err)
	}
	if _, err := l.get(ctx, "ns", "missing"); !apierrors.IsNotFound(err) || err.Error() != `pod "missing" not found` {
		t.Errorf("get ns/missing: %v, want the lister's NotFound", err)
	}
	if _, err := l.get(ctx, "ns", "broken"); !errors.Is(err, fail) || err.Error() != "reading pod ns/broken: connection refused" {
		t.Errorf("get ns/broken: %v, want the failure with the object named", err)
	}
	for _, bad := range [][2]string{{"ns", ""}, {"ns", "a/b"}, {"ns", ".."}, {"ns", "100%"}, {"", "mypod"}} {
		if _, err := l.get(ctx, bad[0], bad[1]); !apierrors.IsNotFound(err) || err.Error() != `pod "`+bad[1]+`" not found` {
			t.Errorf("get %q/%q: %v, want NotFound", bad[0], bad[1], err)
		}
	}
	if want := []string{"ns/mypod", "ns/missing", "ns/broken"}; !slices.Equal(asked, want) {
		t.Errorf("asked kube-apiserver for %v, want %v", asked, want)
	}

	// Cluster-scoped kinds take no namespace.
	drivers := liveGetters(fake.NewClientset(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "d"}}), true).csiDrivers
	if d, err := drivers.get(ctx, "", "d"); err != nil || d.Name != "d" {
		t.Errorf("get CSIDriver d: %v, %v", d, err)
	}
	if _, err := drivers.get(ctx, "", "e"); err == nil || err.Error() != `csidriver.storage.k8s.io "e" not found` {
		t.Errorf("get CSIDriver e: %v, want the lister's NotFound", err)
	}
}

// A lookup that fails for another reason than NotFound refuses the
// request as Forbidden, as a failing cache does (TestMetricsRequests).
func TestLiveLookupFailure(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("get", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is gone")
	})
	p, err := initializedWith(t, "Requests", client, informers.NewSharedInformerFactory(client, 0))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Validate(context.Background(), noderestrictiontest.Request(nil, nil, kindPod, gvrPods, "ns", "mypod", "", admission.Delete, noderestrictiontest.UserMyNode), nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "reading pod ns/mypod: etcd is gone") {
		t.Errorf("got %v, want Forbidden naming the pod and the failure", err)
	}
}
