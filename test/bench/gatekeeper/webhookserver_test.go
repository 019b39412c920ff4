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
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// writeServingCert writes tls.crt and tls.key for 127.0.0.1 into dir,
// signed by a CA of their own, and returns the CA's certificate (PEM) for
// the webhook configurations' caBundle.
func writeServingCert(t *testing.T, dir string) []byte {
	t.Helper()
	caKey, caCert, caDER := newCert(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "bench-webhook-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil, nil)
	key, _, der := newCert(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, caCert, caKey)
	writePEM(t, filepath.Join(dir, "tls.crt"), "CERTIFICATE", der)
	writePEM(t, filepath.Join(dir, "tls.key"), "EC PRIVATE KEY", marshalKey(t, key))
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// waitServing waits until url answers 200, trusting ca for https, or
// fails the test with p's log.
func waitServing(t *testing.T, p *process, url string, ca []byte) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		if p.exited() {
			return false, errors.New("the server stopped")
		}
		resp, err := c.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("%s never answered 200: %v\n%s", url, err, p.failure())
	}
}

// allowingWebhook is the least a mutating webhook can be: it reads the
// review, answers allowed with the request's uid and no patch, and does
// nothing else. Pointed at by a scenario's webhook configurations, it
// gives the floor of a webhook call: what kube-apiserver spends calling a
// webhook that changes nothing, which no webhook can go below.
type allowingWebhook struct {
	url string
	ca  []byte
	// handled and busy are the reviews answered and the time spent on
	// them, from the request's headers read to the response written.
	handled, busy atomic.Int64
}

// startAllowingWebhook serves an allowingWebhook over TLS on 127.0.0.1
// until the test ends. With http2 false it offers only HTTP/1.1, which
// kube-apiserver asks for when it reaches a webhook through a Service
// (the way a cluster's webhooks are reached); to a url on loopback, as
// here, it asks for HTTP/2.
func startAllowingWebhook(t *testing.T, http2 bool) *allowingWebhook {
	t.Helper()
	dir := t.TempDir()
	w := &allowingWebhook{ca: writeServingCert(t, dir)}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           w,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
	}
	if !http2 {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.url = "https://" + l.Addr().String()
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return w
}

func (w *allowingWebhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var review struct {
		Request struct {
			UID string `json:"uid"`
		} `json:"request"`
	}
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request.UID == "" {
		http.Error(rw, fmt.Sprintf("not an AdmissionReview with a request uid: %v", err), http.StatusBadRequest)
		return
	}
	uid, _ := json.Marshal(review.Request.UID)
	rw.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(rw, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%s,"allowed":true}}`, uid)
	w.busy.Add(int64(time.Since(start)))
	w.handled.Add(1)
}
