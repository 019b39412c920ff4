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

package externaldata

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/externaldata/v1beta1"
)

// fakeProvider is a provider written the way Gatekeeper's documentation
// describes one: it reads a ProviderRequest and answers every key from a
// table, or with the misbehaviour a test sets.
type fakeProvider struct {
	mu       sync.Mutex
	table    map[string]any
	requests [][]string
	// handle, when set, answers instead of the table.
	handle func(w http.ResponseWriter, r *http.Request)
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req ProviderRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Kind != "ProviderRequest" || req.APIVersion != requestAPIVersion || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req.Request.Keys)
	handle := f.handle
	f.mu.Unlock()
	if handle != nil {
		handle(w, r)
		return
	}
	resp := ProviderResponse{APIVersion: requestAPIVersion, Kind: "ProviderResponse", Response: Response{Idempotent: true}}
	for _, k := range req.Request.Keys {
		if v, ok := f.table[k]; ok {
			resp.Response.Items = append(resp.Response.Items, Item{Key: k, Value: v})
		} else {
			resp.Response.Items = append(resp.Response.Items, Item{Key: k, Error: "unknown key"})
		}
	}
	_ = json.NewEncoder(w).Encode(resp)
}

func (f *fakeProvider) calls() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// serve starts the fake provider on 127.0.0.1 over TLS and returns it with
// the caBundle that verifies it.
func serve(t *testing.T, f *fakeProvider, clientCAs *x509.CertPool) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(f)
	if clientCAs != nil {
		srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, base64.StdEncoding.EncodeToString(bundle)
}

// selfSigned makes a self-signed certificate for usage, which is its own
// authority, and its key, both PEM.
func selfSigned(t *testing.T, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kube-apiserver-externaldata-client"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{usage},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func compile(t *testing.T, name, url, bundle string, timeout int, cert *ClientCertificate) *Provider {
	t.Helper()
	p, errs := Compile(&v1beta1.Provider{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1beta1.ProviderSpec{URL: url, CABundle: bundle, Timeout: timeout},
	}, cert)
	if len(errs) > 0 {
		t.Fatalf("Compile: %v", errs)
	}
	return p
}

func resolver(ps ...*Provider) *Resolver {
	r := NewResolver(100, time.Hour)
	r.SetProviders(ps)
	return r
}

func TestResolveAnswers(t *testing.T) {
	f := &fakeProvider{table: map[string]any{"nginx:1.27": "nginx@sha256:aa", "redis:7": "redis@sha256:bb", "number": 3.0}}
	srv, bundle := serve(t, f, nil)
	r := resolver(compile(t, "tags", srv.URL, bundle, 0, nil))
	got := r.Resolve(context.Background(), map[string][]string{
		"tags":    {"redis:7", "nginx:1.27", "redis:7", "missing", "number"},
		"unknown": {"x"},
	})
	if v := got["tags"]["nginx:1.27"]; v.Err != nil || v.Value != "nginx@sha256:aa" {
		t.Errorf("nginx:1.27: %+v", v)
	}
	if v := got["tags"]["redis:7"]; v.Err != nil || v.Value != "redis@sha256:bb" {
		t.Errorf("redis:7: %+v", v)
	}
	if v := got["tags"]["missing"]; v.Err == nil || !strings.Contains(v.Err.Error(), "unknown key") {
		t.Errorf("missing: %+v, want the provider's per-key error", v)
	}
	if v := got["tags"]["number"]; v.Err == nil || !strings.Contains(v.Err.Error(), "not a string") {
		t.Errorf("number: %+v, want an error for a value that is not a string", v)
	}
	if v := got["unknown"]["x"]; v.Err == nil || !strings.Contains(v.Err.Error(), `no external data provider "unknown"`) {
		t.Errorf("unknown provider: %+v", v)
	}
	// One call, every key once.
	if c := f.calls(); len(c) != 1 || !slices.Equal(c[0], []string{"missing", "nginx:1.27", "number", "redis:7"}) {
		t.Errorf("calls %v, want one carrying each key once", c)
	}
}

// Each way a call fails gives every key of it an error naming the cause.
func TestResolveFailures(t *testing.T) {
	answer := func(body string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }
	}
	tests := []struct {
		name   string
		handle func(http.ResponseWriter, *http.Request)
		want   string
	}{
		{"system error", answer(`{"response":{"idempotent":true,"systemError":"backend down"}}`), "system error: backend down"},
		{"not idempotent", answer(`{"response":{"items":[{"key":"a","value":"b"}]}}`), "not idempotent"},
		{"garbage", answer(`<html>`), "not a ProviderResponse"},
		{"HTTP 500", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) }, "HTTP 500"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect)
		}, "redirect, which is not followed"},
		{"too large", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"response":{"idempotent":true,"items":[{"key":"a","value":"`+strings.Repeat("x", MaxResponseBytes)+`"}]}}`)
		}, "exceeds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeProvider{handle: tc.handle}
			srv, bundle := serve(t, f, nil)
			r := resolver(compile(t, "p", srv.URL, bundle, 0, nil))
			got := r.Resolve(context.Background(), map[string][]string{"p": {"a", "b"}})
			for _, k := range []string{"a", "b"} {
				if a := got["p"][k]; a.Err == nil || !strings.Contains(a.Err.Error(), tc.want) || !strings.Contains(a.Err.Error(), `provider "p"`) {
					t.Errorf("%s: %+v, want an error with %q", k, a, tc.want)
				}
			}
		})
	}
}

// A provider signed by another authority than its caBundle names is not
// trusted.
func TestResolveWrongCA(t *testing.T) {
	f := &fakeProvider{table: map[string]any{"a": "b"}}
	srv, _ := serve(t, f, nil)
	otherPEM, _ := selfSigned(t, x509.ExtKeyUsageServerAuth)
	other := base64.StdEncoding.EncodeToString(otherPEM)
	r := resolver(compile(t, "p", srv.URL, other, 0, nil))
	a := r.Resolve(context.Background(), map[string][]string{"p": {"a"}})["p"]["a"]
	if a.Err == nil || !strings.Contains(a.Err.Error(), "certificate") {
		t.Fatalf("%+v, want a certificate error", a)
	}
	if len(f.calls()) != 0 {
		t.Error("the untrusted provider was sent the keys")
	}
}

// A provider that requires a client certificate gets the configured one.
func TestResolveClientCertificate(t *testing.T) {
	certPEM, keyPEM := selfSigned(t, x509.ExtKeyUsageClientAuth)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	f := &fakeProvider{table: map[string]any{"a": "b"}}
	srv, bundle := serve(t, f, pool)

	without := resolver(compile(t, "p", srv.URL, bundle, 0, nil))
	if a := without.Resolve(context.Background(), map[string][]string{"p": {"a"}})["p"]["a"]; a.Err == nil {
		t.Errorf("without a client certificate: %+v, want the handshake refused", a)
	}
	cert, err := LoadClientCertificate(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	with := resolver(compile(t, "p", srv.URL, bundle, 0, cert))
	if a := with.Resolve(context.Background(), map[string][]string{"p": {"a"}})["p"]["a"]; a.Err != nil || a.Value != "b" {
		t.Errorf("with the client certificate: %+v", a)
	}
	if _, err := LoadClientCertificate(filepath.Join(dir, "absent.crt"), keyFile); err == nil || !strings.Contains(err.Error(), "absent.crt") {
		t.Errorf("a missing certificate file: %v, want an error naming it", err)
	}
}

// The provider's timeout and the request's deadline both end the wait.
func TestResolveTimeouts(t *testing.T) {
	// The provider answers nothing until the test ends, whatever the
	// client does: a handler that returned when its request's context
	// ended could answer an empty 200 before the client saw its own
	// deadline, on a loaded machine.
	release := make(chan struct{})
	slow := func(w http.ResponseWriter, r *http.Request) { <-release }
	f := &fakeProvider{handle: slow}
	srv, bundle := serve(t, f, nil)
	t.Cleanup(func() { close(release) }) // before serve's srv.Close, which waits for the handlers
	t.Run("provider timeout", func(t *testing.T) {
		r := resolver(compile(t, "p", srv.URL, bundle, 1, nil))
		a := r.Resolve(context.Background(), map[string][]string{"p": {"a"}})["p"]["a"]
		if a.Err == nil || !errors.Is(a.Err, context.DeadlineExceeded) {
			t.Errorf("%+v, want the provider's timeout", a)
		}
	})
	t.Run("request deadline", func(t *testing.T) {
		r := resolver(compile(t, "p", srv.URL, bundle, MaxTimeout, nil))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		a := r.Resolve(ctx, map[string][]string{"p": {"a"}})["p"]["a"]
		if a.Err == nil || !errors.Is(a.Err, context.DeadlineExceeded) {
			t.Errorf("%+v, want the request's deadline", a)
		}
	})
}

func TestCache(t *testing.T) {
	f := &fakeProvider{table: map[string]any{"a": "A", "b": "B", "c": "C"}}
	srv, bundle := serve(t, f, nil)
	p := compile(t, "p", srv.URL, bundle, 0, nil)
	ctx := context.Background()
	ask := func(r *Resolver, keys ...string) map[string]Answer {
		return r.Resolve(ctx, map[string][]string{"p": keys})["p"]
	}
	t.Run("hits, and per-key errors asked again", func(t *testing.T) {
		f.requests = nil
		r := resolver(p)
		ask(r, "a", "zz")
		got := ask(r, "a", "zz")
		if got["a"].Value != "A" || got["zz"].Err == nil {
			t.Errorf("second answers %+v", got)
		}
		if c := f.calls(); len(c) != 2 || !slices.Equal(c[1], []string{"zz"}) {
			t.Errorf("calls %v, want the error key alone asked again", c)
		}
	})
	t.Run("size bound", func(t *testing.T) {
		f.requests = nil
		r := NewResolver(2, time.Hour)
		r.SetProviders([]*Provider{p})
		ask(r, "a", "b", "c") // one of the three does not fit
		ask(r, "a", "b", "c")
		if c := f.calls(); len(c) != 2 || len(c[1]) == 0 {
			t.Errorf("calls %v, want a second call for what the bound evicted", c)
		}
	})
	t.Run("TTL", func(t *testing.T) {
		f.requests = nil
		r := NewResolver(10, 20*time.Millisecond)
		r.SetProviders([]*Provider{p})
		ask(r, "a")
		time.Sleep(50 * time.Millisecond)
		ask(r, "a")
		if c := f.calls(); len(c) != 2 {
			t.Errorf("calls %v, want the expired answer asked again", c)
		}
	})
	t.Run("off", func(t *testing.T) {
		f.requests = nil
		r := NewResolver(0, 0)
		r.SetProviders([]*Provider{p})
		ask(r, "a")
		ask(r, "a")
		if c := f.calls(); len(c) != 2 {
			t.Errorf("calls %v, want every request to call", c)
		}
	})
	t.Run("edited provider", func(t *testing.T) {
		f.requests = nil
		r := resolver(p)
		ask(r, "a")
		r.SetProviders([]*Provider{compile(t, "p", srv.URL, bundle, 2, nil)})
		ask(r, "a")
		if c := f.calls(); len(c) != 2 {
			t.Errorf("calls %v, want the edited provider asked again", c)
		}
	})
}

func TestCompileErrors(t *testing.T) {
	_, bundle := serve(t, &fakeProvider{}, nil)
	junk := base64.StdEncoding.EncodeToString([]byte("not pem"))
	key := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}))
	tests := []struct {
		name  string
		spec  v1beta1.ProviderSpec
		pname string
		field string
	}{
		{"http", v1beta1.ProviderSpec{URL: "http://127.0.0.1:8090/", CABundle: bundle}, "p", "spec.url"},
		{"no url", v1beta1.ProviderSpec{CABundle: bundle}, "p", "spec.url"},
		{"no host", v1beta1.ProviderSpec{URL: "https:///x", CABundle: bundle}, "p", "spec.url"},
		{"credentials", v1beta1.ProviderSpec{URL: "https://u:pw@127.0.0.1/", CABundle: bundle}, "p", "spec.url"},
		{"negative timeout", v1beta1.ProviderSpec{URL: "https://127.0.0.1/", CABundle: bundle, Timeout: -1}, "p", "spec.timeout"},
		{"long timeout", v1beta1.ProviderSpec{URL: "https://127.0.0.1/", CABundle: bundle, Timeout: 31}, "p", "spec.timeout"},
		{"no caBundle", v1beta1.ProviderSpec{URL: "https://127.0.0.1/"}, "p", "spec.caBundle"},
		{"caBundle not base64", v1beta1.ProviderSpec{URL: "https://127.0.0.1/", CABundle: "%%"}, "p", "spec.caBundle"},
		{"caBundle not PEM", v1beta1.ProviderSpec{URL: "https://127.0.0.1/", CABundle: junk}, "p", "spec.caBundle"},
		{"caBundle a key", v1beta1.ProviderSpec{URL: "https://127.0.0.1/", CABundle: key}, "p", "spec.caBundle"},
		{"bad name", v1beta1.ProviderSpec{URL: "https://127.0.0.1/", CABundle: bundle}, "Bad_Name", "metadata.name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Compile(&v1beta1.Provider{ObjectMeta: metav1.ObjectMeta{Name: tc.pname}, Spec: tc.spec}, nil)
			if len(errs) != 1 || errs[0].Field != tc.field {
				t.Fatalf("errors %v, want one on %s", errs, tc.field)
			}
			if strings.Contains(errs.ToAggregate().Error(), "pw") {
				t.Errorf("the error shows the URL's password: %v", errs)
			}
		})
	}
}
