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
	"fmt"
	"net"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
)

// Flags are a webhook server's command-line flags for its serving
// certificate, beside --tls-cert-file and --tls-private-key-file, which the
// server defines: without those, the certificate is self-managed in
// --cert-secret; with them, it is given, and --tls-ca-file names the CA
// bundle to write, if any.
type Flags struct {
	Secret      string
	DNSNames    []string
	IPAddresses []net.IP
	CAFile      string
	Mutating    []string
	Validating  []string
}

// AddFlags adds the flags to fs.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Secret, "cert-secret", "admitkit-system/admitkit-webhook-cert",
		"NAMESPACE/NAME of the Secret that holds the self-managed CA and serving certificate, shared by every replica.")
	fs.StringSliceVar(&f.DNSNames, "cert-dns-names", nil,
		"DNS names the self-managed serving certificate names: the Service's NAME.NAMESPACE.svc.")
	fs.IPSliceVar(&f.IPAddresses, "cert-ip-addresses", nil,
		"IP addresses the self-managed serving certificate names, for webhooks that reach the server by url.")
	fs.StringVar(&f.CAFile, "tls-ca-file", "",
		"With --tls-cert-file: the CA bundle to write into the webhook configurations; without it, whoever issued the certificate fills caBundle.")
	fs.StringSliceVar(&f.Mutating, "mutating-webhook-configuration", nil,
		"MutatingWebhookConfigurations whose webhooks get the CA bundle.")
	fs.StringSliceVar(&f.Validating, "validating-webhook-configuration", nil,
		"ValidatingWebhookConfigurations whose webhooks get the CA bundle.")
}

// New returns the Manager the flags describe: of the given certFile and
// keyFile if they are set, self-managed otherwise.
func (f *Flags) New(client kubernetes.Interface, certFile, keyFile string) (*Manager, error) {
	if certFile != "" || keyFile != "" {
		return NewFromFiles(certFile, keyFile, f.CAFile, client, f.Mutating, f.Validating)
	}
	if f.CAFile != "" {
		return nil, fmt.Errorf("servingcert: --tls-ca-file needs --tls-cert-file and --tls-private-key-file")
	}
	namespace, name, ok := strings.Cut(f.Secret, "/")
	if !ok || namespace == "" || name == "" {
		return nil, fmt.Errorf("servingcert: --cert-secret=%q: want NAMESPACE/NAME", f.Secret)
	}
	return New(Options{
		Client: client, Namespace: namespace, SecretName: name,
		DNSNames: f.DNSNames, IPAddresses: f.IPAddresses,
		MutatingWebhookConfigurations: f.Mutating, ValidatingWebhookConfigurations: f.Validating,
	})
}
