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
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Keys of the Secret that holds the certificates: a kubernetes.io/tls Secret
// with the CA beside the serving pair, as Gatekeeper's cert-controller keeps
// it, so that every replica serves a certificate of the same CA.
const (
	keyCert   = "tls.crt"
	keyKey    = "tls.key"
	keyCA     = "ca.crt" // the CA bundle written into the webhook configurations: the current CA first
	keyCAKey  = "ca.key"
	caSubject = "admitkit-webhook-ca"
)

// material is a parsed Secret: the CA that signs, the CAs trusted (the
// current one and, after a CA rotation, the previous one until it expires)
// and the serving pair.
type material struct {
	ca       *x509.Certificate
	caKey    crypto.Signer
	caKeyPEM []byte
	caBundle []byte
	cert     *tls.Certificate
}

// issueCA makes a new self-signed CA valid from now for validity.
func issueCA(now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", caSubject, now.Unix())},
		NotBefore:             now.Add(-time.Hour), // clocks of the apiservers may lag
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	return encode(der, key)
}

// issueServing makes a serving certificate for names, signed by ca.
func issueServing(ca *x509.Certificate, caKey crypto.Signer, dnsNames []string, ips []net.IP, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	cn := "admitkit-webhook"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	return encode(der, key)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on the platforms Go supports.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func encode(der []byte, key *ecdsa.PrivateKey) ([]byte, []byte, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// parse reads the Secret's data; an error says which key is wrong.
func parse(data map[string][]byte) (*material, error) {
	for _, k := range []string{keyCert, keyKey, keyCA, keyCAKey} {
		if len(data[k]) == 0 {
			return nil, fmt.Errorf("no %s", k)
		}
	}
	m, err := parseCA(firstCert(data[keyCA]), data[keyCAKey])
	if err != nil {
		return nil, err
	}
	m.caBundle = data[keyCA]
	cert, err := tls.X509KeyPair(data[keyCert], data[keyKey])
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", keyCert, keyKey, err)
	}
	m.cert = &cert
	return m, nil
}

// parseCA reads a CA and its key, which must match.
func parseCA(certPEM, keyPEM []byte) (*material, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", keyCA, keyCAKey, err)
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyCA, err)
	}
	if !ca.IsCA {
		return nil, fmt.Errorf("%s: not a CA certificate", keyCA)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: not a signing key", keyCAKey)
	}
	return &material{ca: ca, caKey: signer, caKeyPEM: keyPEM, caBundle: certPEM}, nil
}

// firstCert is the first PEM block of a bundle.
func firstCert(bundle []byte) []byte {
	block, _ := pem.Decode(bundle)
	if block == nil {
		return nil
	}
	return pem.EncodeToMemory(block)
}

// stillValid keeps, of the previous bundle, the CAs that have not expired,
// so that a serving certificate of the old CA stays trusted while replicas
// move to the new one.
func stillValid(bundle []byte, now time.Time) []byte {
	var out bytes.Buffer
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return out.Bytes()
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err == nil && now.Before(c.NotAfter) {
			_ = pem.Encode(&out, block)
		}
	}
}

// problem says why m must be renewed at now, or is empty: a CA or
// certificate within its last fifth (renewBefore) of life, or a serving
// certificate that does not name every name, or not of this CA.
func (m *material) problem(now time.Time, caRenew, certRenew time.Duration, dnsNames []string, ips []net.IP) (string, bool) {
	leaf, err := x509.ParseCertificate(m.cert.Certificate[0])
	if err != nil {
		return "serving certificate unreadable: " + err.Error(), true
	}
	switch {
	case now.After(m.ca.NotAfter.Add(-caRenew)):
		return "CA expires " + m.ca.NotAfter.Format(time.RFC3339), true
	case now.After(leaf.NotAfter.Add(-certRenew)):
		return "serving certificate expires " + leaf.NotAfter.Format(time.RFC3339), false
	case leaf.CheckSignatureFrom(m.ca) != nil:
		return "serving certificate not signed by the CA", false
	}
	for _, n := range dnsNames {
		if !slices.Contains(leaf.DNSNames, n) {
			return "serving certificate does not name " + n, false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return "serving certificate does not name " + ip.String(), false
		}
	}
	return "", false
}

var errNoCert = errors.New("servingcert: no serving certificate yet")
