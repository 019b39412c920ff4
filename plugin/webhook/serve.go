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

package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// shutdownTimeout bounds the wait for reviews in flight: kube-apiserver's
// longest webhook timeout is 30 s.
const shutdownTimeout = 30 * time.Second

// Serve serves handler over TLS on addr until ctx ends. Then /readyz fails
// for delay while everything else is still served, so that the Service
// takes the pod out before it stops listening; then the server stops
// accepting and waits for the reviews in flight.
func Serve(ctx context.Context, addr string, handler http.Handler, getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error), delay time.Duration) error {
	var draining atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("/", handler)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		handler.ServeHTTP(w, r)
	})
	server := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCertificate},
		ErrorLog:          klog.NewStandardLogger("INFO"),
	}
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	klog.InfoS("Listening", "address", listener.Addr().String())
	served := make(chan error, 1)
	go func() { served <- server.ServeTLS(listener, "", "") }()

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	draining.Store(true)
	klog.InfoS("Shutting down: failing /readyz before the server stops", "delay", delay)
	time.Sleep(delay)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	klog.InfoS("Stopped serving")
	return nil
}
