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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// liveSystem is the system the live source publishes for these mutator
// objects: decoded from the API's objects and resolved against an empty
// configuration, as a rebuild does.
func liveSystem(b *testing.B, manifests []string) *mutation.System {
	f := &liveFixture{t: b}
	objects := make([]*unstructured.Unstructured, len(manifests))
	now := time.Now()
	for i, m := range manifests {
		objects[i] = f.object(m, now.Add(time.Duration(i)*time.Millisecond))
	}
	static, _ := mutation.NewSystem(nil)
	r := newResolver(static)
	for _, u := range objects {
		r.put(decodeObject(u))
	}
	for _, lm := range r.settle() {
		if !lm.outcome.enforced {
			b.Fatalf("not enforced: %s", lm.outcome.message)
		}
	}
	return r.system.System()
}

// A pod create against 1,000 mutators that bind to Deployments only, from
// the configuration and from the API: the same index serves both.
func BenchmarkLiveAdmitNonMatching(b *testing.B) {
	mutators := deploymentOnlyAssigns(1000)
	o := admission.NewObjectInterfacesFromScheme(testScheme(b))
	a := attrs(threeContainerPod(), podGVK, podGVR, "prod", "web", admission.Create, "")
	live := NewPlugin(nil)
	live.current.Store(liveSystem(b, mutators))
	plugins := map[string]*Plugin{
		"static": newTestPlugin(b, config(mutators...)),
		"live":   live,
	}
	for _, source := range []string{"static", "live"} {
		p := plugins[source]
		b.Run(source+"/mutators-1000", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Admit(context.Background(), a, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Taking in 1,000 mutator objects: decoding and validating each, then
// building the system, as a rebuild after a re-list does.
func BenchmarkLiveIngest(b *testing.B) {
	manifests := deploymentOnlyAssigns(1000)
	f := &liveFixture{t: b}
	objects := make([]*unstructured.Unstructured, len(manifests))
	now := time.Now()
	for i, m := range manifests {
		objects[i] = f.object(m, now.Add(time.Duration(i)*time.Millisecond))
	}
	static, _ := mutation.NewSystem(nil)
	b.ReportAllocs()
	for b.Loop() {
		r := newResolver(static)
		for _, u := range objects {
			r.put(decodeObject(u))
		}
		r.settle()
		if system := r.system.System(); system.Len() != len(objects) {
			b.Fatalf("%d mutators enforced", system.Len())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(objects)), "ns/mutator")
}

// Requests from every core, with the system left alone and while it is
// replaced every 100µs (far more often than mutators change): a request
// loads one pointer and takes no lock, so both cost the same. (Replacing
// it in a busy loop would measure the loop taking a core away.)
func BenchmarkLiveAdmitWhileChanging(b *testing.B) {
	f := newLiveFixture(b, nil)
	f.waitSynced()
	first := liveSystem(b, []string{pullAlways})
	second, err := mutation.NewSystem(first.Mutators())
	if err != nil {
		b.Fatal(err)
	}
	f.plugin.current.Store(first)
	admit := func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				pod, err := f.admitPod()
				if err != nil || pullPolicy(pod) != "Always" {
					b.Fatalf("pull policy %q, error %v", pullPolicy(pod), err)
				}
			}
		})
	}
	b.Run("steady", admit)
	b.Run("changing", func(b *testing.B) {
		stop := make(chan struct{})
		defer close(stop)
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if i%2 == 0 {
					f.plugin.current.Store(first)
				} else {
					f.plugin.current.Store(second)
				}
			}
		}()
		admit(b)
	})
}
