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

// Package tagprovider is the tests' external data provider: image tags
// answered with digests from a table, in Gatekeeper's wire format, over
// HTTPS on a loopback address, with switches to misbehave. It imports no
// Kubernetes server code, so the command hack/local-up.sh runs it with
// (test/cmd/admitkit-tagprovider) stays small.
package tagprovider

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// Mode is how a Provider answers.
type Mode int

// The modes of a Provider.
const (
	// Answer answers every key from the table, a per-key error for a
	// key not in it.
	Answer Mode = iota
	// Slow holds each call until the caller gives up (its timeout).
	Slow
	// Fail answers HTTP 500.
	Fail
	// Errors answers every key with a per-key error.
	Errors
	// Garbage answers a body that is not a ProviderResponse.
	Garbage
	// SystemError answers a systemError.
	SystemError
)

// Provider is an external data provider as Gatekeeper's documentation
// describes one: HTTPS on 127.0.0.1 with its own certificate authority,
// answering a ProviderRequest of image tags with their digests from a
// table. Its mode switches it to misbehave.
type Provider struct {
	server *http.Server
	url    string
	ca     []byte

	mu    sync.Mutex
	table map[string]string
	mode  Mode
	calls [][]string
	held  int
}

// Start serves table (tag -> pinned image) on 127.0.0.1 until
// the test ends.
func Start(t testing.TB, table map[string]string) *Provider {
	t.Helper()
	tp, err := Serve("127.0.0.1:0", table)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Close() })
	return tp
}

// Serve serves table on addr, which must be on 127.0.0.0/8,
// with a certificate authority of its own, until Close.
func Serve(addr string, table map[string]string) (*Provider, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("the tag provider listens on loopback addresses only, not %q", addr)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{net.ParseIP(host)}, nil)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	tp := &Provider{table: table, url: "https://" + l.Addr().String() + "/resolve", ca: certPEM}
	tp.server = &http.Server{
		Handler:           tp,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	go func() { _ = tp.server.ServeTLS(l, "", "") }()
	return tp, nil
}

// Close stops the provider.
func (tp *Provider) Close() error { return tp.server.Close() }

// URL is where the provider answers.
func (tp *Provider) URL() string { return tp.url }

// CABundle is the base64 PEM a Provider's caBundle takes.
func (tp *Provider) CABundle() string { return base64.StdEncoding.EncodeToString(tp.ca) }

// Manifest is a Provider object for the provider, named name.
func (tp *Provider) Manifest(name string, timeout int) string {
	return fmt.Sprintf("apiVersion: externaldata.gatekeeper.sh/v1beta1\nkind: Provider\nmetadata:\n  name: %s\nspec:\n  url: %s\n  timeout: %d\n  caBundle: %s\n", name, tp.url, timeout, tp.CABundle())
}

// SetMode switches how the provider answers.
func (tp *Provider) SetMode(m Mode) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.mode = m
}

// Calls returns the keys of every call so far.
func (tp *Provider) Calls() [][]string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	out := make([][]string, len(tp.calls))
	copy(out, tp.calls)
	return out
}

// Held is the number of calls a Slow provider is holding now.
func (tp *Provider) Held() int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.held
}

type tagRequest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    struct {
		Keys []string `json:"keys"`
	} `json:"request"`
}

type tagItem struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
}

func (tp *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req tagRequest
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil || req.Kind != "ProviderRequest" {
		http.Error(w, "want a POSTed ProviderRequest", http.StatusBadRequest)
		return
	}
	tp.mu.Lock()
	tp.calls = append(tp.calls, req.Request.Keys)
	mode := tp.mode
	table := tp.table
	if mode == Slow {
		tp.held++
	}
	tp.mu.Unlock()
	switch mode {
	case Slow:
		<-r.Context().Done()
		tp.mu.Lock()
		tp.held--
		tp.mu.Unlock()
		return
	case Fail:
		http.Error(w, "provider failing", http.StatusInternalServerError)
		return
	case Garbage:
		_, _ = io.WriteString(w, "<html>not json")
		return
	}
	resp := map[string]any{"apiVersion": "externaldata.gatekeeper.sh/v1beta1", "kind": "ProviderResponse"}
	inner := map[string]any{"idempotent": true}
	if mode == SystemError {
		inner["systemError"] = "registry unreachable"
	} else {
		items := []tagItem{}
		for _, k := range req.Request.Keys {
			d, ok := table[k]
			switch {
			case mode == Errors:
				items = append(items, tagItem{Key: k, Error: "lookup failed"})
			case ok:
				items = append(items, tagItem{Key: k, Value: d})
			default:
				items = append(items, tagItem{Key: k, Error: "unknown tag " + k})
			}
		}
		inner["items"] = items
	}
	resp["response"] = inner
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
