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

package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// certificateFiles serves the key pair of two files and reads them again
// when either changes (a certificate renewed by cert-manager, or a
// Secret's new version in the mounted volume): no restart.
type certificateFiles struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
}

func newCertificateFiles(certFile, keyFile string) (*certificateFiles, error) {
	c := &certificateFiles{certFile: certFile, keyFile: keyFile}
	if _, err := c.GetCertificate(nil); err != nil {
		return nil, err
	}
	return c, nil
}

// GetCertificate returns the current key pair. A pair that fails to load
// after a change keeps the last good one in service.
func (c *certificateFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	modTime, err := c.latestModTime()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && (c.cert == nil || !modTime.Equal(c.modTime)) {
		var cert tls.Certificate
		if cert, err = tls.LoadX509KeyPair(c.certFile, c.keyFile); err == nil {
			c.cert, c.modTime = &cert, modTime
		}
	}
	if c.cert == nil {
		return nil, fmt.Errorf("serving certificate (--tls-cert-file %q, --tls-private-key-file %q): %w", c.certFile, c.keyFile, err)
	}
	return c.cert, nil
}

func (c *certificateFiles) latestModTime() (time.Time, error) {
	var latest time.Time
	for _, name := range []string{c.certFile, c.keyFile} {
		info, err := os.Stat(name)
		if err != nil {
			return time.Time{}, err
		}
		if info.ModTime().After(latest) {
			latest = info.ModTime()
		}
	}
	return latest, nil
}
