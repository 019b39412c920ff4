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

package servingcert

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
)

// NewFromFiles returns a Manager that serves the certificate in certFile and
// keyFile, read again at every interval, so that a renewed certificate (one
// cert-manager writes into a mounted Secret, for example) is served without
// a restart. If caFile is not empty, its bundle is written into the named
// webhook configurations as New's is; otherwise whoever issues the
// certificate fills caBundle (cert-manager's CA injector does).
func NewFromFiles(certFile, keyFile, caFile string, client kubernetes.Interface, mutating, validating []string) (*Manager, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("servingcert: a given certificate needs both a certificate file and a key file")
	}
	if caFile != "" && client == nil {
		return nil, fmt.Errorf("servingcert: writing %s into the webhook configurations needs a client", caFile)
	}
	m := newManager(Options{Client: client, MutatingWebhookConfigurations: mutating, ValidatingWebhookConfigurations: validating})
	m.sync = func(context.Context) (*tls.Certificate, []byte, error) {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("servingcert: %w", err)
		}
		if caFile == "" {
			return &cert, nil, nil
		}
		bundle, err := os.ReadFile(caFile)
		if err != nil {
			return nil, nil, fmt.Errorf("servingcert: %w", err)
		}
		return &cert, bundle, nil
	}
	return m, nil
}
