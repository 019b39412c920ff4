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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// MaxResponseBytes bounds what a provider's answer may weigh: a larger
// one is an error, read no further than the bound.
const MaxResponseBytes = 1 << 20

// newHTTPClient builds a client that trusts only roots, never follows a
// redirect (the Provider's URL is the only address kube-apiserver may be
// made to call) and uses no proxy from the environment.
func newHTTPClient(roots *x509.CertPool, cert *ClientCertificate) *http.Client {
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13}
	if cert != nil {
		cfg.GetClientCertificate = cert.get
	}
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:     cfg,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
}

var errRedirect = errors.New("the provider answered with a redirect, which is not followed")

// call sends keys to the provider in one request and returns its answer.
// The wait is bounded by the provider's timeout and by ctx, the admission
// request's own deadline, whichever ends first. A response with a system
// error, or that is not idempotent, is an error for every key: a mutation
// must give the same object each time kube-apiserver runs it.
func (p *Provider) call(ctx context.Context, keys []string) (map[string]Item, error) {
	body, err := json.Marshal(newProviderRequest(keys))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the provider answered HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the provider's answer: %w", err)
	}
	if len(data) > MaxResponseBytes {
		return nil, fmt.Errorf("the provider's answer exceeds %d bytes", MaxResponseBytes)
	}
	var pr ProviderResponse
	if err := json.Unmarshal(data, &pr); err != nil {
		return nil, fmt.Errorf("the provider's answer is not a ProviderResponse: %w", err)
	}
	if pr.Response.SystemError != "" {
		return nil, fmt.Errorf("the provider reports a system error: %s", pr.Response.SystemError)
	}
	if !pr.Response.Idempotent {
		return nil, errors.New("the provider's answer is not idempotent")
	}
	items := make(map[string]Item, len(pr.Response.Items))
	for _, it := range pr.Response.Items {
		items[it.Key] = it
	}
	return items, nil
}

// ClientCertificate is the certificate kube-apiserver presents to the
// providers that ask for one, as Gatekeeper presents its own when client
// authentication is on. The files are read again when they change, so a
// rotated certificate is used without a restart.
type ClientCertificate struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime [2]time.Time
}

// LoadClientCertificate reads a PEM certificate and key; an error names the
// file that cannot be read.
func LoadClientCertificate(certFile, keyFile string) (*ClientCertificate, error) {
	c := &ClientCertificate{certFile: certFile, keyFile: keyFile}
	if _, err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *ClientCertificate) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return c.load()
}

// load returns the certificate, read again when a file's modification time
// changed. A rotation caught half-way keeps the certificate read before.
func (c *ClientCertificate) load() (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var now [2]time.Time
	for i, f := range []string{c.certFile, c.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			if c.cert != nil {
				return c.cert, nil
			}
			return nil, fmt.Errorf("external data client certificate: %w", err)
		}
		now[i] = st.ModTime()
	}
	if c.cert != nil && now == c.modTime {
		return c.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		if c.cert != nil {
			return c.cert, nil
		}
		return nil, fmt.Errorf("external data client certificate %s, key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert, c.modTime = &cert, now
	return c.cert, nil
}
