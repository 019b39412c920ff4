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

package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/admitkit/admitkit/plugin/internal/scalebenchtest"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
	"github.com/admitkit/admitkit/plugin/webhook"
)

// benchConfig writes LocationMutator's configuration, with the ten pod
// mutators that locationmutator's own benchmark and test/bench/gatekeeper
// run, and an AdmissionConfiguration naming it. It returns the
// AdmissionConfiguration and the plugin configuration's file.
func benchConfig(t testing.TB) (admissionConfig, pluginConfigFile string) {
	mutators, err := filepath.Abs("../pkg/admission/locationmutator/testdata/ten-pod-mutators.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pluginConfigFile = filepath.Join(t.TempDir(), "locationmutator.yaml")
	config := fmt.Sprintf("apiVersion: locationmutator.admission.admitkit.io/v1alpha1\nkind: Configuration\nmutatorFiles: [%q]\n", mutators)
	if err := os.WriteFile(pluginConfigFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: LocationMutator\n  path: %q\n", pluginConfigFile), pluginConfigFile
}

// benchPod is a three-container pod that the five presets and the ten
// mutators all match.
func benchPod() *corev1.Pod {
	pod := webPod()
	pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx"}, {Name: "sidecar", Image: "envoy"}, {Name: "logs", Image: "fluent-bit"}}
	return pod
}

// BenchmarkReview is one pod create with 5 matching presets and 10
// matching mutators: PodPreset and then LocationMutator in one review, as
// kube-apiserver calls the webhook of hack/manifests whose path names both,
// through the HTTP handler from the request body to the response body (TLS
// and the network left out); Review is the same without the HTTP bodies;
// InProcess is the same two plugins' Admit on the same pod inside
// kube-apiserver (a versioned pod: the internal one costs a conversion
// more), the baseline.
func BenchmarkReview(b *testing.B) {
	presets := make([]runtime.Object, 5)
	for i := range presets {
		presets[i] = envPreset(fmt.Sprintf("preset-%d", i), fmt.Sprintf("VAR_%d", i), "value")
	}
	admissionConfig, pluginConfigFile := benchConfig(b)
	f := newFixtureWithConfig(b, admissionConfig, []runtime.Object{namespace("prod")}, presets...)

	req := podCreate(b, "first", benchPod())
	if resp := reviewChain(b, f.host, webhook.Mutate, req, podpreset.PluginName, locationmutator.PluginName); len(resp.Patch) == 0 {
		b.Fatal("the review changed nothing")
	}

	b.Run("Handler", func(b *testing.B) { benchHandler(b, f, req) })
	b.Run("Review", func(b *testing.B) { benchReviewOnly(b, f, req) })
	b.Run("InProcess", func(b *testing.B) { benchInProcess(b, f, pluginConfigFile) })
}

// benchHandler times the review through the HTTP handler.
func benchHandler(b *testing.B, f *fixture, req *admissionv1.AdmissionRequest) {
	h := f.host.Handler()
	// Every request has a UID of its own, or the host would take the
	// next one for a reinvocation; the body is encoded once, with a UID
	// of fixed width to put the iteration's into.
	req.UID = uidPlaceholder
	body := reviewBody(b, req)
	path := "/mutate/" + podpreset.PluginName + "/" + locationmutator.PluginName
	b.ReportAllocs()
	defer reportCPU(b, scalebenchtest.CPUTime(b))
	for i := 0; b.Loop(); i++ {
		body := bytes.Replace(body, []byte(uidPlaceholder), []byte(fmt.Sprintf("%013d", i)), 1)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"patch":`)) {
			b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
}

// benchReviewOnly times the review without the HTTP bodies.
func benchReviewOnly(b *testing.B, f *fixture, req *admissionv1.AdmissionRequest) {
	ctx := context.Background()
	b.ReportAllocs()
	defer reportCPU(b, scalebenchtest.CPUTime(b))
	for i := 0; b.Loop(); i++ {
		req.UID = types.UID(strconv.Itoa(i))
		resp, err := f.host.Review(ctx, webhook.Mutate, req, podpreset.PluginName, locationmutator.PluginName)
		if err != nil || len(resp.Patch) == 0 {
			b.Fatalf("review: %v, %+v", err, resp)
		}
	}
}

// benchInProcess times the two plugins' Admit inside kube-apiserver.
func benchInProcess(b *testing.B, f *fixture, pluginConfigFile string) {
	var chain []admission.MutationInterface
	for _, name := range []string{podpreset.PluginName, locationmutator.PluginName} {
		var config io.Reader
		if name == locationmutator.PluginName {
			data, err := os.ReadFile(pluginConfigFile)
			if err != nil {
				b.Fatal(err)
			}
			config = bytes.NewReader(data)
		}
		p, err := f.plugins.InitPlugin(name, config, admission.PluginInitializers(f.initializers))
		if err != nil {
			b.Fatal(err)
		}
		chain = append(chain, p.(admission.MutationInterface))
	}
	o := admission.NewObjectInterfacesFromScheme(f.scheme)
	ctx := context.Background()
	pod := benchPod()
	// The preset caches fill in the background; the first Admit
	// refuses until then.
	for err := chain[0].Admit(ctx, podAttributes(pod.DeepCopy()), o); err != nil; err = chain[0].Admit(ctx, podAttributes(pod.DeepCopy()), o) {
	}
	b.ReportAllocs()
	defer reportCPU(b, scalebenchtest.CPUTime(b))
	for b.Loop() {
		a := podAttributes(pod.DeepCopy())
		for _, p := range chain {
			if err := p.Admit(ctx, a, o); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// reportCPU reports the process's CPU time per iteration since before
// (cpu-ns/op): on a shared machine ns/op also counts the time spent
// waiting for a core, and the CPU time counts the garbage collector's
// work, which ns/op spreads over whatever ran.
func reportCPU(b *testing.B, before time.Duration) {
	b.ReportMetric(float64((scalebenchtest.CPUTime(b)-before).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func podAttributes(pod *corev1.Pod) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), pod.Namespace, pod.Name,
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "bench"})
}

// uidPlaceholder is as wide as the UIDs the Handler benchmark puts in.
const uidPlaceholder = "uid-placehold"
