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
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/externaldata"
)

// tagProvider answers tags with digests from a table over TLS, and counts
// the calls.
type tagProvider struct {
	mu    sync.Mutex
	calls [][]string
}

var tagDigests = map[string]string{
	"nginx:1.27":                    "nginx@sha256:0a1b",
	"envoyproxy/envoy:v1":           "envoyproxy/envoy@sha256:2c3d",
	"docker.io/fluent/fluent-bit:3": "docker.io/fluent/fluent-bit@sha256:4e5f",
}

func (tp *tagProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req externaldata.ProviderRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	tp.mu.Lock()
	tp.calls = append(tp.calls, req.Request.Keys)
	tp.mu.Unlock()
	resp := externaldata.ProviderResponse{Kind: "ProviderResponse", Response: externaldata.Response{Idempotent: true}}
	for _, k := range req.Request.Keys {
		if d, ok := tagDigests[k]; ok {
			resp.Response.Items = append(resp.Response.Items, externaldata.Item{Key: k, Value: d})
		} else {
			resp.Response.Items = append(resp.Response.Items, externaldata.Item{Key: k, Error: "unknown tag"})
		}
	}
	_ = json.NewEncoder(w).Encode(resp)
}

func startTagProvider(t *testing.T) (*tagProvider, string) {
	t.Helper()
	tp := &tagProvider{}
	srv := httptest.NewTLSServer(tp)
	t.Cleanup(srv.Close)
	bundle := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	provider := "apiVersion: externaldata.gatekeeper.sh/v1beta1\nkind: Provider\nmetadata: {name: tag-to-digest}\nspec: {url: '" + srv.URL + "', timeout: 3, caBundle: " + bundle + "}"
	return tp, provider
}

const digestAssign = `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: image-digest}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: 'spec.containers[name: *].image'
  parameters:
    assign:
      externalData: {provider: tag-to-digest, dataSource: ValueAtLocation, failurePolicy: Fail}`

// registered builds the plugin the way Register's factory does.
func registered(t *testing.T, cfg string) *Plugin {
	t.Helper()
	p, err := newConfiguredPlugin(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// withProviders adds an externalData section holding providers to cfg.
func withProviders(cfg string, providers ...string) string {
	var b strings.Builder
	b.WriteString(cfg + "externalData:\n  providers:\n")
	for _, p := range providers {
		for i, line := range strings.Split(p, "\n") {
			if i == 0 {
				b.WriteString("  - " + line + "\n")
			} else {
				b.WriteString("    " + line + "\n")
			}
		}
	}
	return b.String()
}

// A tag-to-digest Assign pins each container's image through the
// provider, typed and unstructured, with one call for the three tags, and
// none on the reinvocation, which the cache answers.
func TestAdmitExternalData(t *testing.T) {
	tp, provider := startTagProvider(t)
	p := registered(t, withProviders(config(digestAssign), provider))
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))

	pod := threeContainerPod()
	a := record(attrs(pod, podGVK, podGVR, "prod", "web", admission.Create, ""))
	if err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), a, o); err != nil {
		t.Fatal(err)
	}
	for _, c := range a.GetObject().(*corev1.Pod).Spec.Containers {
		if !strings.Contains(c.Image, "@sha256:") {
			t.Errorf("container %s: image %s, want a digest", c.Name, c.Image)
		}
	}
	if v := a.annotations[AnnotationKey]; v != "Assign/image-digest" {
		t.Errorf("annotation %q", v)
	}
	if len(tp.calls) != 1 || len(tp.calls[0]) != 3 {
		t.Errorf("calls %v, want one with the three tags", tp.calls)
	}

	u := asUnstructured(t, threeContainerPod())
	ua := attrs(u, podGVK, podGVR, "prod", "web", admission.Create, "")
	if err := p.Admit(context.Background(), ua, o); err != nil {
		t.Fatal(err)
	}
	if img, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers"); img[0].(map[string]any)["image"] != "nginx@sha256:0a1b" {
		t.Errorf("unstructured: containers %v", img)
	}
	if len(tp.calls) != 1 {
		t.Errorf("calls %v, want the cache to answer the second pod", tp.calls)
	}

	// Fail refuses a pod whose tag the provider does not know.
	bad := threeContainerPod()
	bad.Spec.Containers[0].Image = "busybox:1"
	err := p.Admit(context.Background(), attrs(bad, podGVK, podGVR, "prod", "web", admission.Create, ""), o)
	if err == nil || !strings.Contains(err.Error(), "unknown tag") || !strings.Contains(err.Error(), "Assign/image-digest") {
		t.Errorf("unknown tag: %v, want a refusal naming the mutator and the provider's error", err)
	}
}

// A request no external-data mutator matches makes no call.
func TestAdmitExternalDataNoMatch(t *testing.T) {
	tp, provider := startTagProvider(t)
	p := registered(t, withProviders(config(digestAssign), provider))
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	cm := &corev1.ConfigMap{}
	cm.Name = "c"
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	if err := p.Admit(context.Background(), attrs(cm, gvk, gvk.GroupVersion().WithResource("configmaps"), "prod", "c", admission.Create, ""), o); err != nil {
		t.Fatal(err)
	}
	if len(tp.calls) != 0 {
		t.Errorf("calls %v, want none", tp.calls)
	}
}

func TestExternalDataConfigErrors(t *testing.T) {
	_, provider := startTagProvider(t)
	tests := []struct{ name, cfg, want string }{
		{"http provider", withProviders(config(), strings.Replace(provider, "https://", "http://", 1)), `externalData.providers[0]: Provider "tag-to-digest": spec.url: Invalid value`},
		{"duplicate provider", withProviders(config(), provider, provider), `externalData.providers[1].metadata.name: Duplicate value`},
		{"wrong kind", withProviders(config(), strings.Replace(provider, "kind: Provider", "kind: Providr", 1)), `externalData.providers[0]: kind: Unsupported value`},
		{"certificate without key", config() + "externalData: {clientCertFile: /x.crt}\n", "externalData.clientKeyFile: Required"},
		{"missing certificate", config() + "externalData: {clientCertFile: /nonexistent/x.crt, clientKeyFile: /nonexistent/x.key}\n", "/nonexistent/x.crt"},
		{"negative cache", config() + "externalData: {cacheSize: -1}\n", "externalData.cacheSize: Invalid value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plugins := admission.NewPlugins()
			Register(plugins)
			_, err := plugins.NewFromPlugins([]string{PluginName}, configProvider{PluginName: tc.cfg}, admission.PluginInitializers{}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// BenchmarkAdmitExternalData is a pod admitted through a tag-to-digest
// Assign whose answers the cache holds (the steady state: no call), beside
// the same Assign with a plain value in the same run.
func BenchmarkAdmitExternalData(b *testing.B) {
	tp := &tagProvider{}
	srv := httptest.NewTLSServer(tp)
	defer srv.Close()
	bundle := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	provider := "apiVersion: externaldata.gatekeeper.sh/v1beta1\nkind: Provider\nmetadata: {name: tag-to-digest}\nspec: {url: '" + srv.URL + "', timeout: 3, caBundle: " + bundle + "}"
	valueAssign := strings.Replace(digestAssign, "externalData: {provider: tag-to-digest, dataSource: ValueAtLocation, failurePolicy: Fail}", "value: nginx@sha256:0a1b", 1)
	o := admission.NewObjectInterfacesFromScheme(testScheme(b))
	for _, bc := range []struct{ name, cfg string }{
		{"value", config(valueAssign)},
		{"externalData-cached", withProviders(config(digestAssign), provider)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p, err := newConfiguredPlugin(strings.NewReader(bc.cfg))
			if err != nil {
				b.Fatal(err)
			}
			warm := threeContainerPod()
			if err := p.Admit(context.Background(), attrs(warm, podGVK, podGVR, "prod", "web", admission.Create, ""), o); err != nil {
				b.Fatal(err)
			}
			calls := len(tp.calls)
			b.ReportAllocs()
			for b.Loop() {
				pod := threeContainerPod()
				if err := p.Admit(context.Background(), attrs(pod, podGVK, podGVR, "prod", "web", admission.Create, ""), o); err != nil {
					b.Fatal(err)
				}
			}
			if len(tp.calls) != calls {
				b.Fatalf("%d calls during the loop, want the cache to answer", len(tp.calls)-calls)
			}
		})
	}
}
