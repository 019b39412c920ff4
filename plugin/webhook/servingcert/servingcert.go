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

// Package servingcert gives the admitkit webhook server its serving
// certificate and puts the CA that signed it into the server's webhook
// configurations, so that applying hack/manifests is the whole install, as
// it is for Gatekeeper.
//
// Self-managed (New): the CA and the serving pair live in one Secret of the
// server's namespace, which every replica shares. The first replica to find
// it missing creates it (a replica that loses the race reads the winner's);
// a replica that finds it expiring renews it with an update at the read
// resourceVersion, so that two replicas never hold different CAs. The
// serving certificate is renewed in the last fifth of its life, under the
// same CA; the CA in the last fifth of its own, and the bundle written into
// the webhook configurations then holds the new CA and the previous one
// until it expires. The caBundle of every webhook of the named
// configurations is rewritten whenever it differs, also when someone
// re-applies a configuration without it.
//
// Given (NewFromFiles): a certificate from elsewhere (cert-manager, a
// company CA) is served from its files, read again every minute, and a
// CA file, if given, is written into the configurations the same way.
package servingcert

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Options configure a self-managed certificate.
type Options struct {
	// Client reads and writes the Secret and the webhook configurations.
	Client kubernetes.Interface
	// Namespace and SecretName name the Secret the replicas share.
	Namespace, SecretName string
	// DNSNames and IPAddresses are what the serving certificate names: the
	// Service's names (NAME.NAMESPACE.svc), or 127.0.0.1 for a server the
	// webhooks reach by url.
	DNSNames    []string
	IPAddresses []net.IP
	// MutatingWebhookConfigurations and ValidatingWebhookConfigurations get
	// the CA bundle in every webhook's clientConfig.caBundle.
	MutatingWebhookConfigurations, ValidatingWebhookConfigurations []string
	// CAValidity and CertValidity are how long a new CA and a new serving
	// certificate are valid; zero means ten years and one year.
	CAValidity, CertValidity time.Duration
	// Interval is how often the Secret and the configurations are checked
	// again; zero means one minute.
	Interval time.Duration
	// Clock tells the time of issuing and renewing; nil means the real one.
	Clock clock.WithTicker
}

// Manager serves the current certificate and keeps the Secret and the
// webhook configurations current.
type Manager struct {
	opts    Options
	current atomic.Pointer[tls.Certificate]
	// sync makes the serving pair and the bundle current once; the two
	// constructors give it its source.
	sync func(ctx context.Context) (*tls.Certificate, []byte, error)
}

// New returns a Manager of a self-managed certificate.
func New(opts Options) (*Manager, error) {
	switch {
	case opts.Client == nil:
		return nil, fmt.Errorf("servingcert: no client")
	case opts.Namespace == "" || opts.SecretName == "":
		return nil, fmt.Errorf("servingcert: the Secret needs a namespace and a name, got %q/%q", opts.Namespace, opts.SecretName)
	case len(opts.DNSNames) == 0 && len(opts.IPAddresses) == 0:
		return nil, fmt.Errorf("servingcert: the serving certificate needs at least one DNS name or IP address")
	}
	if opts.CAValidity == 0 {
		opts.CAValidity = 10 * 365 * 24 * time.Hour
	}
	if opts.CertValidity == 0 {
		opts.CertValidity = 365 * 24 * time.Hour
	}
	if opts.CertValidity > opts.CAValidity {
		return nil, fmt.Errorf("servingcert: the certificate's validity %v exceeds the CA's %v", opts.CertValidity, opts.CAValidity)
	}
	m := newManager(opts)
	m.sync = m.syncSecret
	return m, nil
}

func newManager(opts Options) *Manager {
	if opts.Interval == 0 {
		opts.Interval = time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Manager{opts: opts}
}

// GetCertificate is for tls.Config: the current serving certificate.
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.current.Load(); c != nil {
		return c, nil
	}
	return nil, errNoCert
}

// Ready is whether a certificate is being served.
func (m *Manager) Ready() bool { return m.current.Load() != nil }

// Start makes the certificate current and writes the bundle once, failing
// if it cannot (the server must not start without a certificate), then
// keeps both current until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	if err := m.Sync(ctx); err != nil {
		return err
	}
	changed, err := m.watchConfigurations(ctx)
	if err != nil {
		return err
	}
	go m.run(ctx, changed)
	return nil
}

// Sync makes the certificate and the configurations current once.
func (m *Manager) Sync(ctx context.Context) error {
	cert, bundle, err := m.sync(ctx)
	if err != nil {
		return err
	}
	m.current.Store(cert)
	return m.writeBundle(ctx, bundle)
}

func (m *Manager) run(ctx context.Context, changed <-chan struct{}) {
	t := m.opts.Clock.NewTicker(m.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			if err := m.Sync(ctx); err != nil {
				klog.ErrorS(err, "Webhook CA bundle not written; trying again", "interval", m.opts.Interval)
			}
		case <-t.C():
			if err := m.Sync(ctx); err != nil {
				klog.ErrorS(err, "Serving certificate or webhook CA bundle not current; trying again", "interval", m.opts.Interval)
			}
		}
	}
}

// syncSecret reads the shared Secret, creates or renews it, and returns its
// serving pair and bundle.
func (m *Manager) syncSecret(ctx context.Context) (*tls.Certificate, []byte, error) {
	secrets := m.opts.Client.CoreV1().Secrets(m.opts.Namespace)
	name := m.opts.Namespace + "/" + m.opts.SecretName
	secret, err := secrets.Get(ctx, m.opts.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		data, err := m.issue(nil)
		if err != nil {
			return nil, nil, err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: m.opts.SecretName, Namespace: m.opts.Namespace},
			Type:       corev1.SecretTypeTLS,
			Data:       data,
		}
		created, err := secrets.Create(ctx, secret, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// Another replica was first: serve its certificate.
			return m.syncSecret(ctx)
		case err != nil:
			return nil, nil, fmt.Errorf("creating Secret %s: %w", name, err)
		}
		klog.InfoS("Created the webhook serving certificate and its CA", "secret", name)
		secret = created
	} else if err != nil {
		return nil, nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}

	mat, err := parse(secret.Data)
	var why string
	newCA := true
	if err != nil {
		why = "unreadable: " + err.Error()
	} else {
		why, newCA = mat.problem(m.opts.Clock.Now(), m.opts.CAValidity/5, m.opts.CertValidity/5, m.opts.DNSNames, m.opts.IPAddresses)
	}
	if why == "" {
		return mat.cert, mat.caBundle, nil
	}
	if newCA {
		mat = &material{caBundle: mat.bundleOrNil()}
	}
	data, err := m.issue(mat)
	if err != nil {
		return nil, nil, err
	}
	renewed := secret.DeepCopy()
	renewed.Data = data
	if _, err := secrets.Update(ctx, renewed, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			// Another replica renewed it: serve what it wrote.
			return m.syncSecret(ctx)
		}
		return nil, nil, fmt.Errorf("renewing Secret %s (%s): %w", name, why, err)
	}
	klog.InfoS("Renewed the webhook serving certificate", "secret", name, "reason", why, "newCA", newCA)
	mat, err = parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("the renewed Secret %s: %w", name, err)
	}
	return mat.cert, mat.caBundle, nil
}

func (m *material) bundleOrNil() []byte {
	if m == nil {
		return nil
	}
	return m.caBundle
}

// issue returns new Secret data: a serving pair signed by old's CA, or by a
// new CA when old has none, whose bundle then keeps old's CAs that have not
// expired.
func (m *Manager) issue(old *material) (map[string][]byte, error) {
	now := m.opts.Clock.Now()
	if old == nil || old.ca == nil {
		caPEM, caKeyPEM, err := issueCA(now, m.opts.CAValidity)
		if err != nil {
			return nil, fmt.Errorf("issuing a CA: %w", err)
		}
		signer, err := parseCA(caPEM, caKeyPEM)
		if err != nil {
			return nil, err
		}
		if old != nil {
			signer.caBundle = append(signer.caBundle, stillValid(old.caBundle, now)...)
		}
		old = signer
	}
	data := map[string][]byte{keyCA: old.caBundle, keyCAKey: old.caKeyPEM}
	certPEM, keyPEM, err := issueServing(old.ca, old.caKey, m.opts.DNSNames, m.opts.IPAddresses, now, m.opts.CertValidity)
	if err != nil {
		return nil, fmt.Errorf("issuing the serving certificate: %w", err)
	}
	data[keyCert], data[keyKey] = certPEM, keyPEM
	return data, nil
}
