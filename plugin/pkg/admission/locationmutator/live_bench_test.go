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
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/internal/scalebenchtest"
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
	objects := liveObjects(b, deploymentOnlyAssigns(1000))
	b.ReportAllocs()
	for b.Loop() {
		ingest(b, objects)
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

// labelMutators are n AssignMetadata objects, each adding its own label,
// as a user applying many of them would: they bind to every kind, so each
// one is in every candidate list.
func labelMutators(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: label-%05d}
spec:
  location: metadata.labels.l%d
  parameters: {assign: {value: "x"}}`, i, i)
	}
	return out
}

// liveShapes are the sets of live mutators the scale benchmarks run.
var liveShapes = []struct {
	name      string
	manifests func(int) []string
}{
	{"assign", deploymentOnlyAssigns},
	{"assignmetadata", labelMutators},
}

// liveObjects are the API's objects of manifests, created a millisecond
// apart.
func liveObjects(b *testing.B, manifests []string) []*unstructured.Unstructured {
	f := &liveFixture{t: b}
	objects := make([]*unstructured.Unstructured, len(manifests))
	now := time.Now()
	for i, m := range manifests {
		objects[i] = f.object(m, now.Add(time.Duration(i)*time.Millisecond))
	}
	return objects
}

// ingest takes in every object at once, as the first pass after the
// initial list does, and returns the resolver.
func ingest(b *testing.B, objects []*unstructured.Unstructured) *resolver {
	static, _ := mutation.NewSystem(nil)
	r := newResolver(static)
	for _, u := range objects {
		r.put(decodeObject(u))
	}
	r.settle()
	if system := r.system.System(); system.Len() != len(objects) {
		b.Fatalf("%d of %d mutators enforced", system.Len(), len(objects))
	}
	return r
}

// nextGeneration is u changed by its author: a new value, a new
// generation.
func nextGeneration(b *testing.B, u *unstructured.Unstructured, gen int64) *unstructured.Unstructured {
	next := u.DeepCopy()
	next.SetGeneration(gen)
	if err := unstructured.SetNestedField(next.Object, fmt.Sprintf("v%d", gen), "spec", "parameters", "assign", "value"); err != nil {
		b.Fatal(err)
	}
	return next
}

// BenchmarkLiveScale measures the live source at 1,000 and 10,000
// mutators: one edit republished (decoding the changed object, deciding
// again what it touches, making the new system), and ingesting all of
// them at once (ns/mutator should stay flat as the number grows).
func BenchmarkLiveScale(b *testing.B) {
	for _, shape := range liveShapes {
		for _, n := range []int{1000, 10000} {
			objects := liveObjects(b, shape.manifests(n))
			b.Run(fmt.Sprintf("edit/%s/mutators-%d", shape.name, n), func(b *testing.B) {
				r := ingest(b, objects)
				edited := objects[n/2]
				gens := []*unstructured.Unstructured{nextGeneration(b, edited, 2), nextGeneration(b, edited, 3)}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					r.put(decodeObject(gens[i%2]))
					r.settle()
					if r.system.System().Len() != n {
						b.Fatal("the edited mutator is not enforced")
					}
					i++
				}
			})
		}
		for _, n := range []int{1000, 4000, 10000} {
			objects := liveObjects(b, shape.manifests(n))
			b.Run(fmt.Sprintf("ingest/%s/mutators-%d", shape.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					ingest(b, objects)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/mutator")
			})
		}
	}
}

// BenchmarkLiveApplyOneByOne takes in n mutators as `kubectl apply` of n
// objects delivers them: one watch event, one pass and one published
// system each, and apply-time validation of each object against the
// system before it. ns/item and cpu-ns/item (per mutator) should stay flat
// as n grows.
func BenchmarkLiveApplyOneByOne(b *testing.B) {
	for _, shape := range liveShapes {
		for _, n := range []int{1000, 4000} {
			objects := liveObjects(b, shape.manifests(n))
			b.Run(fmt.Sprintf("%s/mutators-%d", shape.name, n), func(b *testing.B) {
				static, _ := mutation.NewSystem(nil)
				scalebenchtest.PerItem(b, n, func() {
					r := newResolver(static)
					system := r.system.System()
					for _, u := range objects {
						lm := decodeObject(u)
						if cs := system.ConflictsWith(lm.mutator); len(cs) > 0 {
							b.Fatal(cs)
						}
						r.put(lm)
						r.settle()
						system = r.system.System()
					}
				})
			})
		}
	}
}

// BenchmarkLiveMemory reports the heap the live source keeps per mutator:
// its decoded mutators, the conflict index and the published system
// (plugin-B/mutator), and with the objects the informer holds
// (with-objects-B/mutator).
func BenchmarkLiveMemory(b *testing.B) {
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for _, shape := range liveShapes {
		for _, n := range []int{1000, 10000} {
			manifests := shape.manifests(n)
			b.Run(fmt.Sprintf("%s/mutators-%d", shape.name, n), func(b *testing.B) {
				var plugin, withObjects float64
				for b.Loop() {
					start := heap()
					objects := liveObjects(b, manifests)
					loaded := heap()
					r := ingest(b, objects)
					end := heap()
					plugin = float64(end-loaded) / float64(n)
					withObjects = float64(end-start) / float64(n)
					runtime.KeepAlive(r)
					runtime.KeepAlive(objects)
				}
				b.ReportMetric(plugin, "plugin-B/mutator")
				b.ReportMetric(withObjects, "with-objects-B/mutator")
			})
		}
	}
}

// BenchmarkLiveAdmitWhileEditing sends pod creates from every core while
// another goroutine takes in edits one after the other and publishes each
// system, as the live source's loop does: requests never wait for it.
func BenchmarkLiveAdmitWhileEditing(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("mutators-%d", n), func(b *testing.B) {
			objects := liveObjects(b, append(deploymentOnlyAssigns(n-1), pullAlways))
			r := ingest(b, objects)
			f := newLiveFixture(b, nil)
			f.waitSynced()
			f.plugin.current.Store(r.system.System())
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				for gen := int64(2); ; gen++ {
					select {
					case <-stop:
						return
					default:
					}
					r.put(decodeObject(nextGeneration(b, objects[n/2], gen)))
					r.settle()
					f.plugin.current.Store(r.system.System())
				}
			}()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					pod, err := f.admitPod()
					if err != nil || pullPolicy(pod) != "Always" {
						b.Fatalf("pull policy %q, error %v", pullPolicy(pod), err)
					}
				}
			})
			b.StopTimer()
			close(stop)
			<-done
		})
	}
}
