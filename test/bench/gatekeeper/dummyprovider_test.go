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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/externaldata/v1beta1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/externaldata"
)

// dummyProviderDir, set in the environment, is where the inner run of
// TestGatekeeperDummyProvider finds the certificates: it runs inside the
// namespaces the outer run made.
const dummyProviderDir = "ADMITKIT_DUMMY_PROVIDER_DIR"

// TestGatekeeperDummyProvider calls Gatekeeper's own test provider
// (test/externaldata/dummy-provider of Gatekeeper v3.23.1, built from the
// module cache, run as is) through our client. That provider reads its
// certificates from fixed paths (/etc/ssl/certs/server.{crt,key}, and the
// client CA from /tmp/gatekeeper/ca.crt) and listens on every address of
// port 8090, so it runs in a user, mount and network namespace of its own
// (unshare), where those paths are bind mounts of this test's files and the
// only address is the namespace's loopback; the test calls it from the
// same namespace.
func TestGatekeeperDummyProvider(t *testing.T) {
	if dir := os.Getenv(dummyProviderDir); dir != "" {
		callDummyProvider(t, dir)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("this test needs unshare (util-linux) to run Gatekeeper's provider in namespaces of its own: %v", err)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "dummy-provider"), "github.com/open-policy-agent/gatekeeper/v3/test/externaldata/dummy-provider")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building Gatekeeper's dummy provider: %v\n%s", err, out)
	}
	writeDummyCerts(t, dir)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := copyFile(self, filepath.Join(dir, "gatekeeper.test")); err != nil {
		t.Fatal(err)
	}
	// Inside: loopback up; the test's directory at /mnt; a private /tmp
	// holding the client CA where the provider reads it; the serving
	// certificate over /etc/ssl/certs; the provider; then this test again.
	script := `set -e
ip link set lo up
mount --bind "$1" /mnt
mount -t tmpfs tmpfs /tmp
mkdir -p /tmp/gatekeeper
cp /mnt/ca.crt /tmp/gatekeeper/ca.crt
mount --bind /mnt/serving /etc/ssl/certs
/mnt/dummy-provider >/mnt/provider.log 2>&1 &
exec env ` + dummyProviderDir + `=/mnt /mnt/gatekeeper.test -test.run '^TestGatekeeperDummyProvider$' -test.v -test.count=1
`
	cmd := exec.Command(unshare, "--user", "--map-root-user", "--net", "--mount", "sh", "-c", script, "sh", dir)
	out, err := cmd.CombinedOutput()
	t.Logf("inside the namespaces:\n%s", out)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "provider.log"))
		t.Fatalf("the run inside the namespaces failed: %v\nprovider log:\n%s", err, log)
	}
	if !strings.Contains(string(out), "--- PASS: TestGatekeeperDummyProvider") {
		t.Fatal("the inner run did not pass")
	}
}

// callDummyProvider asks Gatekeeper's dummy provider through our resolver:
// it answers key with key_valid, error_<x> with a per-key error, and a key
// ending in _systemError with a system error, and it refuses a client
// without the certificate its CA signed.
func callDummyProvider(t *testing.T, dir string) {
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := externaldata.LoadClientCertificate(filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key"))
	if err != nil {
		t.Fatal(err)
	}
	obj := &v1beta1.Provider{
		ObjectMeta: metav1.ObjectMeta{Name: "dummy-provider"},
		Spec:       v1beta1.ProviderSpec{URL: "https://127.0.0.1:8090/validate", Timeout: 3, CABundle: base64.StdEncoding.EncodeToString(ca)},
	}
	p, errs := externaldata.Compile(obj, cert)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r := externaldata.NewResolver(100, time.Minute)
	r.SetProviders([]*externaldata.Provider{p})
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.Dial("tcp", "127.0.0.1:8090")
		if err == nil {
			_ = conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dummy provider does not listen: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := r.Resolve(ctx, map[string][]string{"dummy-provider": {"nginx:1.27", "error_busybox"}})["dummy-provider"]
	if a := got["nginx:1.27"]; a.Err != nil || a.Value != "nginx:1.27_valid" {
		t.Errorf("nginx:1.27: %+v, want nginx:1.27_valid", a)
	}
	if a := got["error_busybox"]; a.Err == nil || !strings.Contains(a.Err.Error(), "error_busybox_invalid") {
		t.Errorf("error_busybox: %+v, want the provider's per-key error", a)
	}
	sys := r.Resolve(ctx, map[string][]string{"dummy-provider": {"x_systemError"}})["dummy-provider"]["x_systemError"]
	if sys.Err == nil || !strings.Contains(sys.Err.Error(), "testing system error") {
		t.Errorf("x_systemError: %+v, want the provider's system error", sys)
	}
	without, errs := externaldata.Compile(obj, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r.SetProviders([]*externaldata.Provider{without})
	if a := r.Resolve(ctx, map[string][]string{"dummy-provider": {"other"}})["dummy-provider"]["other"]; a.Err == nil {
		t.Errorf("without a client certificate: %+v, want the handshake refused", a)
	}
}

// writeDummyCerts writes a CA, the provider's serving certificate for
// 127.0.0.1 (serving/server.crt, serving/server.key) and a client
// certificate, both signed by the CA.
func writeDummyCerts(t *testing.T, dir string) {
	t.Helper()
	caKey, caCert, caDER := newCert(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "dummy-provider-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil, nil)
	writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER)
	if err := os.Mkdir(filepath.Join(dir, "serving"), 0o755); err != nil {
		t.Fatal(err)
	}
	serverKey, _, serverDER := newCert(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, caCert, caKey)
	writePEM(t, filepath.Join(dir, "serving", "server.crt"), "CERTIFICATE", serverDER)
	writePEM(t, filepath.Join(dir, "serving", "server.key"), "EC PRIVATE KEY", marshalKey(t, serverKey))
	clientKey, _, clientDER := newCert(t, &x509.Certificate{
		Subject:  pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, caCert, caKey)
	writePEM(t, filepath.Join(dir, "client.crt"), "CERTIFICATE", clientDER)
	writePEM(t, filepath.Join(dir, "client.key"), "EC PRIVATE KEY", marshalKey(t, clientKey))
}

// newCert signs tmpl with parent's key, or itself when parent is nil.
func newCert(t *testing.T, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func marshalKey(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}
