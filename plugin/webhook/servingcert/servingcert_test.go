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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	namespace = "admitkit-system"
	secret    = "admitkit-webhook-cert"
	dnsName   = "admitkit-webhook.admitkit-system.svc"
)

func configs() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "admitkit-mutating"},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "a.admitkit.io"}, {Name: "b.admitkit.io"}},
		}, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "admitkit-validating"},
			Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "c.admitkit.io"}},
		}
}

func selfManaged(t *testing.T, client *fake.Clientset, clock *clocktesting.FakeClock) *Manager {
	t.Helper()
	m, err := New(Options{
		Client: client, Namespace: namespace, SecretName: secret,
		DNSNames: []string{dnsName}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		MutatingWebhookConfigurations: []string{"admitkit-mutating"}, ValidatingWebhookConfigurations: []string{"admitkit-validating"},
		CAValidity: 100 * time.Hour, CertValidity: 10 * time.Hour, Clock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// bundles returns the caBundle of every webhook.
func bundles(t *testing.T, client *fake.Clientset) [][]byte {
	t.Helper()
	ctx := context.Background()
	mwc, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "admitkit-mutating", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vwc, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "admitkit-validating", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, w := range mwc.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range vwc.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// verify checks that m serves a certificate for dnsName that every
// webhook's caBundle trusts at now, and returns it.
func verify(t *testing.T, client *fake.Clientset, m *Manager, now time.Time) *x509.Certificate {
	t.Helper()
	cert, err := m.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range bundles(t, client) {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			t.Fatalf("webhook %d: caBundle %q holds no certificate", i, b)
		}
		for _, name := range []string{dnsName, "127.0.0.1"} {
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now}); err != nil {
				t.Errorf("webhook %d: serving certificate not trusted for %s: %v", i, name, err)
			}
		}
	}
	return leaf
}

func TestCreatesAndWritesBundle(t *testing.T) {
	mwc, vwc := configs()
	client := fake.NewClientset(mwc, vwc)
	clock := clocktesting.NewFakeClock(time.Now())
	m := selfManaged(t, client, clock)
	if m.Ready() {
		t.Fatal("ready before the first sync")
	}
	if err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	verify(t, client, m, clock.Now())

	// Two replicas share one CA: the second serves the first one's.
	other := selfManaged(t, client, clock)
	if err := other.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, _ := m.GetCertificate(nil)
	b, _ := other.GetCertificate(nil)
	if !bytes.Equal(a.Certificate[0], b.Certificate[0]) {
		t.Error("the second replica issued its own certificate instead of serving the shared one")
	}

	// Re-applying the manifests clears caBundle; the next sync refills it.
	mwc, _ = configs()
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(context.Background(), mwc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	verify(t, client, m, clock.Now())
}

// The serving certificate is renewed in the last fifth of its life under the
// same CA, so the bundle does not change; the CA likewise, and the bundle
// then trusts the previous CA too.
func TestRotation(t *testing.T) {
	mwc, vwc := configs()
	client := fake.NewClientset(mwc, vwc)
	clock := clocktesting.NewFakeClock(time.Now())
	m := selfManaged(t, client, clock)
	ctx := context.Background()
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	first := verify(t, client, m, clock.Now())
	bundle := bundles(t, client)[0]

	clock.Step(7 * time.Hour) // 3 h of 10 left: not yet the last fifth
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := verify(t, client, m, clock.Now()); !got.Equal(first) {
		t.Error("renewed before the last fifth of its life")
	}

	clock.Step(90 * time.Minute) // 1.5 h left
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	second := verify(t, client, m, clock.Now())
	if second.Equal(first) {
		t.Fatal("not renewed in the last fifth of its life")
	}
	if !bytes.Equal(bundles(t, client)[0], bundle) {
		t.Error("the CA bundle changed on a serving certificate renewal")
	}

	clock.Step(75 * time.Hour) // the CA (100 h) has 16.5 h left
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	third := verify(t, client, m, clock.Now())
	if bytes.Equal(third.RawIssuer, first.RawIssuer) {
		t.Fatal("CA not renewed in the last fifth of its life")
	}
	if n := countCerts(bundles(t, client)[0]); n != 2 {
		t.Errorf("bundle after CA renewal holds %d CAs, want the new and the previous", n)
	}
	// A replica still serving the previous CA's certificate stays trusted.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundles(t, client)[0])
	if _, err := first.Verify(x509.VerifyOptions{Roots: pool, DNSName: dnsName, CurrentTime: first.NotAfter.Add(-time.Minute)}); err != nil {
		t.Errorf("the previous CA's certificate is not trusted after CA renewal: %v", err)
	}
}

func countCerts(b []byte) int {
	n := 0
	for rest := b; ; n++ {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return n
		}
	}
}

// A Secret someone broke is replaced, not served.
func TestUnreadableSecret(t *testing.T) {
	mwc, vwc := configs()
	client := fake.NewClientset(mwc, vwc)
	clock := clocktesting.NewFakeClock(time.Now())
	m := selfManaged(t, client, clock)
	ctx := context.Background()
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := client.CoreV1().Secrets(namespace).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data["ca.key"] = []byte("garbage")
	if _, err := client.CoreV1().Secrets(namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	verify(t, client, m, clock.Now())
}

// A certificate from elsewhere is served from its files, and its CA file
// written into the configurations.
func TestFromFiles(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	caPEM, caKeyPEM, err := issueCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := parseCA(caPEM, caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := issueServing(ca.ca, ca.caKey, []string{dnsName}, []net.IP{net.ParseIP("127.0.0.1")}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": caPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mwc, vwc := configs()
	client := fake.NewClientset(mwc, vwc)
	m, err := NewFromFiles(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt"),
		client, []string{"admitkit-mutating"}, []string{"admitkit-validating"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	leaf := verify(t, client, m, now)
	block, _ := pem.Decode(certPEM)
	if !bytes.Equal(leaf.Raw, block.Bytes) {
		t.Error("not serving the given certificate")
	}
	if _, err := client.CoreV1().Secrets(namespace).Get(context.Background(), secret, metav1.GetOptions{}); err == nil {
		t.Error("a given certificate must not create the self-managed Secret")
	}
	if _, err := NewFromFiles("", "k", "", nil, nil, nil); err == nil {
		t.Error("NewFromFiles without a certificate file succeeded")
	}
}

func TestFlags(t *testing.T) {
	for _, c := range []struct {
		name      string
		args      []string
		cert, key string
		wantErr   string
	}{
		{name: "self-managed", args: []string{"--cert-ip-addresses=127.0.0.1", "--mutating-webhook-configuration=m"}},
		{name: "no names", args: nil, wantErr: "at least one DNS name"},
		{name: "bad secret", args: []string{"--cert-secret=nons", "--cert-dns-names=a.b.svc"}, wantErr: "want NAMESPACE/NAME"},
		{name: "CA without a certificate", args: []string{"--tls-ca-file=ca.crt", "--cert-dns-names=a.b.svc"}, wantErr: "--tls-ca-file needs"},
		{name: "given", args: []string{"--tls-ca-file=ca.crt"}, cert: "tls.crt", key: "tls.key"},
		{name: "given without key", cert: "tls.crt", wantErr: "both a certificate file and a key file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f Flags
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			f.AddFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			_, err := f.New(fake.NewClientset(), c.cert, c.key)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, c.wantErr)
			}
		})
	}
}

// A configuration applied after the server started gets the bundle from the
// watch, not only at the next interval (an hour here).
func TestBundleWrittenWhenConfigurationAppears(t *testing.T) {
	client := fake.NewClientset()
	clock := clocktesting.NewFakeClock(time.Now())
	m, err := New(Options{
		Client: client, Namespace: namespace, SecretName: secret, DNSNames: []string{dnsName},
		MutatingWebhookConfigurations: []string{"admitkit-mutating"}, ValidatingWebhookConfigurations: []string{"admitkit-validating"},
		Interval: time.Hour, Clock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mwc, vwc := configs()
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, b := range bundles(t, client) {
			if len(b) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("caBundle not written after the configurations appeared: %v", err)
	}
}
