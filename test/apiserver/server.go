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

// Package apiserver is a custom kube-apiserver build: Kubernetes 1.37's
// kube-apiserver built the way the README tells a fork to build it (copies of
// upstream's NewConfig and CreateServerChain with the fork's lines, which
// call plugin/kubeapiserver), with admitkit's admission plugins registered,
// and an embedded etcd when no --etcd-servers is given.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/keyutil"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// Options are kube-apiserver's options and this build's own.
type Options struct {
	// Server holds every kube-apiserver flag, with admitkit's admission
	// registry in place.
	Server *options.ServerRunOptions
	// DataDir holds the embedded etcd's data, the serving certificate
	// kube-apiserver generates, and the service-account signing key.
	DataDir string
	// EtcdUnsafeNoFsync makes the embedded etcd skip fsync (tests only).
	EtcdUnsafeNoFsync bool
	// Identity, when set, replaces the identity kube-apiserver derives from
	// the hostname: the name of its identity lease and what admission
	// plugins key their status by. Several apiservers on one machine need
	// one each.
	Identity string

	defaultCertDir string
}

// NewOptions returns kube-apiserver's defaults with admitkit's plugins
// registered.
func NewOptions() *Options {
	s := options.NewServerRunOptions()
	configureAdmission(s.Admission.GenericAdmission)
	return &Options{Server: s, defaultCertDir: s.SecureServing.ServerCert.CertDirectory}
}

// Flags returns kube-apiserver's flag sets plus an "admitkit" set.
func (o *Options) Flags() cliflag.NamedFlagSets {
	fss := o.Server.Flags()
	o.Server.Flagz = flagz.NamedFlagSetsReader{FlagSets: fss}
	fs := fss.FlagSet("admitkit")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the embedded etcd (unless --etcd-servers is set), the self-signed serving certificate (unless --cert-dir or --tls-cert-file is set) and the service-account signing key (unless --service-account-key-file or --service-account-signing-key-file is set). Required; reused across restarts.")
	fs.StringVar(&o.Identity, "apiserver-identity", o.Identity, "This kube-apiserver's identity: the name of its identity lease in kube-system and the key of the status admission plugins write. Defaults to kube-apiserver's own, derived from the hostname, which every apiserver on one host shares: set it when running several there.")
	fs.BoolVar(&o.EtcdUnsafeNoFsync, "embedded-etcd-unsafe-no-fsync", o.EtcdUnsafeNoFsync, "Let the embedded etcd skip fsync. Faster, loses data on a crash: for tests only.")
	return fss
}

// informerNames numbers the informer names of the servers started in one
// process: client-go refuses a name that is still in use.
var informerNames atomic.Int32

// Run starts the embedded etcd if needed, then kube-apiserver, and serves
// until ctx is cancelled. It returns the first start-up error, such as a
// bad admission configuration.
func (o *Options) Run(ctx context.Context) error {
	s := o.Server
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	if o.DataDir == "" {
		return errors.New("--data-dir is required")
	}
	if o.Identity != "" {
		if errs := validation.IsDNS1123Subdomain(o.Identity); len(errs) != 0 {
			return fmt.Errorf("--apiserver-identity %q must be a DNS subdomain name (it names a Lease): %s", o.Identity, strings.Join(errs, "; "))
		}
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return fmt.Errorf("--data-dir %s: %w", o.DataDir, err)
	}

	if len(s.Etcd.StorageConfig.Transport.ServerList) == 0 {
		etcd, url, err := startEtcd(filepath.Join(o.DataDir, "etcd"), o.EtcdUnsafeNoFsync)
		if err != nil {
			return err
		}
		defer etcd.Close()
		s.Etcd.StorageConfig.Transport.ServerList = []string{url}
	}
	if err := o.defaultFiles(); err != nil {
		return err
	}
	if s.InformerName == nil {
		name := "kube-apiserver"
		if n := informerNames.Add(1); n > 1 {
			name = fmt.Sprintf("kube-apiserver-%d", n)
		}
		informerName, err := cache.NewInformerName(name)
		if err != nil {
			return err
		}
		s.InformerName = informerName
	}

	completed, err := s.Complete(ctx)
	if err != nil {
		return err
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return utilerrors.NewAggregate(errs)
	}
	config, err := NewConfig(completed, o.Identity)
	if err != nil {
		return err
	}
	completedConfig, err := config.Complete()
	if err != nil {
		return err
	}
	chain, err := CreateServerChain(completedConfig)
	if err != nil {
		return err
	}
	prepared, err := chain.PrepareRun()
	if err != nil {
		return err
	}
	klog.InfoS("Starting admitkit kube-apiserver", "dataDir", o.DataDir, "etcd", s.Etcd.StorageConfig.Transport.ServerList)
	return prepared.Run(ctx)
}

// defaultFiles points the serving certificate and the service-account key
// into the data directory unless flags chose others, generating the key on
// the first run.
func (o *Options) defaultFiles() error {
	s := o.Server
	cert := &s.SecureServing.ServerCert
	if cert.CertKey.CertFile == "" && cert.CertDirectory == o.defaultCertDir {
		cert.CertDirectory = filepath.Join(o.DataDir, "certs")
	}

	sa := s.Authentication.ServiceAccounts
	if len(sa.KeyFiles) == 0 && s.ServiceAccountSigningKeyFile == "" && sa.ExternalPublicKeysGetter == nil {
		keyFile := filepath.Join(o.DataDir, "service-account.key")
		if _, err := os.Stat(keyFile); errors.Is(err, os.ErrNotExist) {
			key, err := keyutil.MakeEllipticPrivateKeyPEM()
			if err != nil {
				return fmt.Errorf("generating the service-account key: %w", err)
			}
			if err := keyutil.WriteKey(keyFile, key); err != nil {
				return fmt.Errorf("writing the service-account key %s: %w", keyFile, err)
			}
		} else if err != nil {
			return err
		}
		sa.KeyFiles = []string{keyFile}
		s.ServiceAccountSigningKeyFile = keyFile
		if len(sa.Issuers) == 0 {
			sa.Issuers = []string{"https://kubernetes.default.svc.cluster.local"}
		}
	}
	return nil
}
