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

package framework

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/util/keyutil"
)

// Cluster is several custom kube-apiservers on one etcd cluster, as a
// highly available control plane runs them: each with its own identity,
// data directory and serving certificate, all with the same flags,
// admission configuration and service-account key.
type Cluster struct {
	Dir     string
	Etcd    *EtcdCluster
	Servers []*Server
}

// ClusterConfig says what cluster to start.
type ClusterConfig struct {
	// EtcdMembers is the size of the etcd cluster (3 when zero).
	EtcdMembers int
	// Servers is how many kube-apiservers run on it (2 when zero).
	Servers int
	// Server is every kube-apiserver's configuration.
	Server Config
}

// ServerIdentity is the identity (--apiserver-identity) of a cluster's
// server i, counting from 0.
func ServerIdentity(i int) string { return fmt.Sprintf("admitkit-apiserver-%d", i+1) }

// StartCluster starts the etcd members, then the servers one after another
// (the first one's bootstrap writes need no race with the others').
func StartCluster(cfg ClusterConfig) (*Cluster, error) {
	if cfg.EtcdMembers == 0 {
		cfg.EtcdMembers = 3
	}
	if cfg.Servers == 0 {
		cfg.Servers = 2
	}
	dir, err := os.MkdirTemp("", "admitkit-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir}
	if err := c.start(cfg); err != nil {
		c.Cleanup()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(cfg ClusterConfig) error {
	etcd, err := StartEtcdCluster(c.Dir, cfg.EtcdMembers)
	if err != nil {
		return err
	}
	c.Etcd = etcd

	// Service-account tokens one server issues must be valid on the others.
	keyFile := filepath.Join(c.Dir, "service-account.key")
	key, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return err
	}
	if err := keyutil.WriteKey(keyFile, key); err != nil {
		return err
	}
	for i := range cfg.Servers {
		serverDir := filepath.Join(c.Dir, fmt.Sprintf("apiserver-%d", i+1))
		if err := os.Mkdir(serverDir, 0o700); err != nil {
			return err
		}
		server := cfg.Server
		server.Args = append([]string{
			"--etcd-servers=" + strings.Join(etcd.ClientURLs(), ","),
			"--apiserver-identity=" + ServerIdentity(i),
			"--service-account-key-file=" + keyFile,
			"--service-account-signing-key-file=" + keyFile,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		}, cfg.Server.Args...)
		srv, err := StartIn(serverDir, server)
		if err != nil {
			return fmt.Errorf("kube-apiserver %d of %d: %w", i+1, cfg.Servers, err)
		}
		c.Servers = append(c.Servers, srv)
	}
	return nil
}

// Cleanup stops the servers, then etcd, and removes all data.
func (c *Cluster) Cleanup() error {
	var errs []error
	for _, s := range c.Servers {
		if err := s.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Etcd != nil {
		c.Etcd.Close()
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
