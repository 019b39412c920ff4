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
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"k8s.io/client-go/util/keyutil"

	"github.com/admitkit/admitkit/test/apiserver"
	"github.com/admitkit/admitkit/test/embeddedetcd"
)

// StartStock starts upstream's own kube-apiserver (test/cmd/kube-apiserver,
// nothing of admitkit in it) as a process, on an etcd member this process
// runs, with the flags and files Start gives the custom build, and waits
// until /readyz passes. Its NodeRestriction is upstream's, on; admitkit
// reaches it only through webhooks and CRDs (see StartWebhookHost).
// cfg.AdmissionConfig configures only upstream's plugins here.
func StartStock(cfg Config) (*Server, error) {
	binary, err := BuildCommand("kube-apiserver")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "admitkit-stock-apiserver-")
	if err != nil {
		return nil, err
	}
	s, err := startStockIn(dir, binary, cfg)
	if err != nil {
		os.RemoveAll(dir)
	}
	return s, err
}

func startStockIn(dir, binary string, cfg Config) (*Server, error) {
	keyFile := filepath.Join(dir, "service-account.key")
	key, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, fmt.Errorf("generating the service-account key: %w", err)
	}
	if err := keyutil.WriteKey(keyFile, key); err != nil {
		return nil, err
	}
	ports, err := apiserver.FreePorts(2)
	if err != nil {
		return nil, err
	}
	member := embeddedetcd.Member{Name: "stock", Dir: filepath.Join(dir, "etcd"), ClientPort: ports[0], PeerPort: ports[1], UnsafeNoFsync: true}
	etcd, err := embeddedetcd.Start(member)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdReadyTimeout)
	defer cancel()
	if err := embeddedetcd.Wait(ctx, etcd); err != nil {
		etcd.Close()
		return nil, err
	}

	s, err := prepare(dir, cfg)
	if err != nil {
		etcd.Close()
		return nil, err
	}
	s.binary, s.etcd = binary, etcd
	s.args = append([]string{
		"--etcd-servers=" + member.ClientURL(),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + keyFile,
		"--service-account-signing-key-file=" + keyFile,
		"--enable-admission-plugins=NodeRestriction",
	}, s.args...)
	if err := s.start(); err != nil {
		etcd.Close()
		return nil, err
	}
	return s, nil
}

// startProcess runs a stock server's binary, its output appended to
// kube-apiserver.log in the data directory, and waits until it is ready.
func (s *Server) startProcess() error {
	log, err := os.OpenFile(filepath.Join(s.DataDir, "kube-apiserver.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.binary, s.args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	s.done = make(chan error, 1)
	go func() {
		err := cmd.Wait()
		log.Close()
		if err != nil {
			err = fmt.Errorf("kube-apiserver: %w (log: %s)", err, log.Name())
		}
		s.done <- err
	}()
	s.cancel = func() { _ = cmd.Process.Signal(syscall.SIGTERM) }
	if err := s.waitReady(startTimeout); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	return nil
}
