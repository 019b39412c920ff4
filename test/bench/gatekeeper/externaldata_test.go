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

package gatekeeper

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	fwunversioned "github.com/open-policy-agent/frameworks/constraint/pkg/apis/externaldata/unversioned"
	fwexternaldata "github.com/open-policy-agent/frameworks/constraint/pkg/externaldata"
	gkexternaldata "github.com/open-policy-agent/gatekeeper/v3/pkg/externaldata"
	gkmutation "github.com/open-policy-agent/gatekeeper/v3/pkg/mutation"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
)

// digestProvider answers image tags with pinned references from a table,
// in Gatekeeper's wire format, over TLS that asks for a client
// certificate (Gatekeeper always presents one).
func digestProvider(t *testing.T, table map[string]string) (url, caBundle string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Request struct {
				Keys []string `json:"keys"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var items []map[string]any
		for _, k := range req.Request.Keys {
			if v, ok := table[k]; ok {
				items = append(items, map[string]any{"key": k, "value": v})
			} else {
				items = append(items, map[string]any{"key": k, "error": "unknown tag"})
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "externaldata.gatekeeper.sh/v1beta1", "kind": "ProviderResponse",
			"response": map[string]any{"idempotent": true, "items": items},
		})
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv.URL, base64.StdEncoding.EncodeToString(bundle)
}

// clientCertFiles writes a self-signed client certificate and its key.
func clientCertFiles(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mutation-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func externalDataAssign(policy string) string {
	return `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: image-digest}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {scope: Namespaced, kinds: [{apiGroups: [""], kinds: [Pod]}]}
  location: 'spec.containers[name: *].image'
  parameters:
    assign:
      externalData: {provider: tag-to-digest, dataSource: ValueAtLocation, failurePolicy: ` + policy + `}
`
}

// TestExternalDataSameResult runs the same tag-to-digest Assign, with each
// failure policy, and the same provider through Gatekeeper's mutation
// system and through the LocationMutator, on pods whose tags the provider
// knows and does not know: the same images, or both refuse.
func TestExternalDataSameResult(t *testing.T) {
	*gkexternaldata.ExternalDataEnabled = true
	table := map[string]string{
		"nginx:1.27":          "nginx@sha256:" + strings.Repeat("1", 64),
		"envoyproxy/envoy:v1": "envoyproxy/envoy@sha256:" + strings.Repeat("2", 64),
	}
	url, bundle := digestProvider(t, table)
	certFile, keyFile := clientCertFiles(t)
	watcher, err := certwatcher.New(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	providers := fwexternaldata.NewCache()
	if err := providers.Upsert(&fwunversioned.Provider{
		ObjectMeta: metav1.ObjectMeta{Name: "tag-to-digest"},
		Spec:       fwunversioned.ProviderSpec{URL: url, Timeout: 3, CABundle: bundle},
	}); err != nil {
		t.Fatal(err)
	}
	providerManifest := "apiVersion: externaldata.gatekeeper.sh/v1beta1\nkind: Provider\nmetadata: {name: tag-to-digest}\nspec: {url: '" + url + "', timeout: 3, caBundle: " + bundle + "}"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}

	for _, policy := range []string{"Fail", "Ignore", "UseDefault, default: 'registry.local/quarantined:0'"} {
		manifest := externalDataAssign(policy)
		sys := gkmutation.NewSystem(gkmutation.SystemOpts{ProviderCache: providers, ClientCertWatcher: watcher})
		if err := sys.Upsert(gatekeeperMutator(t, manifest)); err != nil {
			t.Fatal(err)
		}
		cfg := "apiVersion: locationmutator.admission.admitkit.io/v1alpha1\nkind: Configuration\nmutators:\n- " +
			strings.ReplaceAll(strings.TrimSpace(manifest), "\n", "\n  ") +
			"\nexternalData:\n  clientCertFile: " + certFile + "\n  clientKeyFile: " + keyFile + "\n  providers:\n  - " + strings.ReplaceAll(providerManifest, "\n", "\n    ") + "\n"
		plugins := admission.NewPlugins()
		locationmutator.Register(plugins)
		ours, err := plugins.NewFromPlugins([]string{locationmutator.PluginName}, configFor{cfg}, admission.PluginInitializers{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, images := range [][]string{{"nginx:1.27", "envoyproxy/envoy:v1"}, {"nginx:1.27", "busybox:1"}} {
			name := strings.SplitN(policy, ",", 2)[0] + "/" + strings.Join(images, "+")
			t.Run(name, func(t *testing.T) {
				pod := threeContainerPod()
				pod.Spec.Containers = pod.Spec.Containers[:len(images)]
				for i, img := range images {
					pod.Spec.Containers[i].Image = img
				}
				raw, err := json.Marshal(pod)
				if err != nil {
					t.Fatal(err)
				}
				_, gkJSON, gkErr := gatekeeperWebhook(sys, raw, ns, admissionv1.Create)
				ourPod := pod.DeepCopy()
				ourErr := ours.(admission.MutationInterface).Admit(t.Context(), attrs(ourPod, admission.Create), objectInterfaces(t))
				if (gkErr == nil) != (ourErr == nil) {
					t.Fatalf("Gatekeeper: %v; ours: %v", gkErr, ourErr)
				}
				if gkErr != nil {
					return
				}
				gkPod := &corev1.Pod{}
				if gkJSON != nil {
					if err := json.Unmarshal(gkJSON, gkPod); err != nil {
						t.Fatal(err)
					}
				} else {
					gkPod = pod
				}
				if g, o := podImageList(gkPod), podImageList(ourPod); !slices.Equal(g, o) {
					t.Errorf("images: Gatekeeper %v, ours %v", g, o)
				}
				if got := podImageList(ourPod)[0]; got != table["nginx:1.27"] {
					t.Errorf("nginx:1.27 became %s, want it pinned", got)
				}
			})
		}
	}
}

type configFor struct{ cfg string }

func (c configFor) ConfigFor(string) (io.Reader, error) { return strings.NewReader(c.cfg), nil }

func podImageList(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}
