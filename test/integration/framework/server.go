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

// Package framework starts the custom kube-apiserver in-process for
// integration tests: embedded etcd in a temporary directory, random free
// ports, a token file with an admin and node identities.
package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"

	etcd3metrics "k8s.io/apiserver/pkg/storage/etcd3/metrics"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/admitkit/admitkit/test/apiserver"
	"github.com/admitkit/admitkit/test/embeddedetcd"
)

// AdminToken and UserToken are the bearer tokens of the token file's admin
// (system:masters) and of an unprivileged user "alice".
const (
	AdminToken = "admin-token"
	UserToken  = "alice-token"
)

// ServeSettings is the flag that turns settings.k8s.io/v1alpha1 on; like
// every alpha version, it is off by default.
const ServeSettings = "--runtime-config=settings.k8s.io/v1alpha1=true"

// NodeToken is the bearer token of system:node:<name>.
func NodeToken(name string) string { return "node-" + name + "-token" }

// Config says what server to start.
type Config struct {
	// Nodes get identities system:node:<name> in group system:nodes.
	Nodes []string
	// AdmissionConfig, when set, is written to a file and passed as
	// --admission-control-config-file. $DATA_DIR in it becomes the data
	// directory, for paths to Files.
	AdmissionConfig string
	// AuditPolicy, when set, is an audit.k8s.io/v1 Policy: the server logs
	// the events it selects, as JSON lines, to Server.AuditLog.
	AuditPolicy string
	// Files are written into the data directory before start, by name
	// relative to it (for mutator files an admission config names).
	Files map[string]string
	// Args are more kube-apiserver flags, such as
	// --enable-admission-plugins=PodPreset.
	Args []string
}

// Server is a running custom kube-apiserver.
type Server struct {
	DataDir string
	Host    string
	CAFile  string
	// AuditLog is the file of the audit events Config.AuditPolicy selects;
	// empty without a policy.
	AuditLog string

	args []string
	// binary is the kube-apiserver executable a stock server runs as a
	// process; empty for the custom build, which runs in this process.
	binary string
	// etcd is a stock server's etcd member, which outlives its restarts.
	etcd   *embed.Etcd
	cancel context.CancelFunc
	done   chan error
}

// Start starts a server and waits until /readyz passes. A start-up failure
// (a bad flag or admission configuration) is returned as the error.
func Start(cfg Config) (*Server, error) {
	dir, err := os.MkdirTemp("", "admitkit-apiserver-")
	if err != nil {
		return nil, err
	}
	srv, err := StartIn(dir, cfg)
	if err != nil {
		os.RemoveAll(dir)
	}
	return srv, err
}

// StartIn is Start on a given data directory, which it keeps.
func StartIn(dir string, cfg Config) (*Server, error) {
	s, err := prepare(dir, cfg)
	if err != nil {
		return nil, err
	}
	s.args = append([]string{"--data-dir=" + dir, "--embedded-etcd-unsafe-no-fsync"}, s.args...)
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// prepare writes cfg's files into dir and returns the server with the
// flags that both builds take: loopback addresses on a free port, the
// token file, Node and RBAC authorization, the admission configuration and
// audit log of cfg, then cfg.Args.
func prepare(dir string, cfg Config) (*Server, error) {
	tokens := []string{
		AdminToken + ",admin,admin,system:masters",
		UserToken + ",alice,alice",
	}
	for _, node := range cfg.Nodes {
		tokens = append(tokens, fmt.Sprintf("%s,system:node:%s,node-%s,system:nodes", NodeToken(node), node, node))
	}
	files := map[string]string{"tokens.csv": strings.Join(tokens, "\n") + "\n"}
	for name, content := range cfg.Files {
		files[name] = content
	}
	if cfg.AuditPolicy != "" {
		files["audit-policy.yaml"] = cfg.AuditPolicy
	}
	if cfg.AdmissionConfig != "" {
		files["admission-config.yaml"] = strings.ReplaceAll(cfg.AdmissionConfig, "$DATA_DIR", dir)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return nil, err
		}
	}

	ports, err := apiserver.FreePorts(1)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		// The lease reconciler refuses a loopback advertise address.
		"--endpoint-reconciler-type=none",
	}
	if cfg.AdmissionConfig != "" {
		args = append(args, "--admission-control-config-file="+filepath.Join(dir, "admission-config.yaml"))
	}
	var auditLog string
	if cfg.AuditPolicy != "" {
		auditLog = filepath.Join(dir, "audit.log")
		args = append(args, "--audit-policy-file="+filepath.Join(dir, "audit-policy.yaml"), "--audit-log-path="+auditLog)
	}
	args = append(args, cfg.Args...)

	return &Server{
		DataDir:  dir,
		Host:     "https://127.0.0.1:" + strconv.Itoa(ports[0]),
		CAFile:   filepath.Join(dir, "certs", "apiserver.crt"),
		AuditLog: auditLog,
		args:     args,
	}, nil
}

// start runs the server with its flags and waits until it is ready.
func (s *Server) start() error {
	if s.binary != "" {
		return s.startProcess()
	}
	o := apiserver.NewOptions()
	fs := pflag.NewFlagSet("admitkit-apiserver", pflag.ContinueOnError)
	for _, f := range o.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(s.args); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done = make(chan error, 1)
	go func() {
		err := o.Run(ctx)
		forgetStorageMonitor()
		s.done <- err
	}()
	if err := s.waitReady(startTimeout); err != nil {
		cancel()
		return err
	}
	return nil
}

// forgetStorageMonitor drops the etcd monitor of a server that ended.
// kube-apiserver keeps the monitor behind apiserver_storage_size_bytes in a
// process-wide variable, set by the server configured last, and closes it
// when that server drains only if something read it while it ran. An
// in-process server that was never scraped (or failed to start) left one
// that dials its gone etcd for 20 seconds on every later gather of this
// process's metrics, the main server's /metrics included. Without it the
// metric is not exported; in a process of several servers it only ever
// described the last one's etcd.
func forgetStorageMonitor() {
	etcd3metrics.SetStorageMonitorGetter(func() ([]etcd3metrics.Monitor, error) { return nil, nil })
}

// Restart starts a stopped server again, with the same flags, data and
// port, and waits until it is ready.
func (s *Server) Restart() error { return s.start() }

// startTimeout bounds a start until /readyz passes. Building
// kube-apiserver's configuration alone took 84s with the race detector
// while another test package ran beside it on 2 cores; a failed start
// returns at once whatever this is.
const startTimeout = 5 * time.Minute

func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			if err == nil {
				err = errors.New("server stopped before it was ready")
			}
			s.done <- err
			return err
		case <-time.After(250 * time.Millisecond):
		}
		if _, err := os.Stat(s.CAFile); err != nil {
			last = err
			continue
		}
		client, err := kubernetes.NewForConfig(s.AdminConfig())
		if err != nil {
			return err
		}
		var status int
		result := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(context.Background()).StatusCode(&status)
		if result.Error() == nil && status == http.StatusOK {
			return nil
		}
		last = result.Error()
	}
	return fmt.Errorf("server at %s not ready after %s: %v", s.Host, timeout, last)
}

// Stop shuts the server down and waits for it; the data directory stays.
func (s *Server) Stop() error {
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(time.Minute):
		return fmt.Errorf("server at %s did not stop within a minute", s.Host)
	}
}

// Config returns a client config authenticating with token.
func (s *Server) Config(token string) *rest.Config {
	return &rest.Config{
		Host:            s.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.CAFile},
		QPS:             -1, // no client-side rate limit: tests measure the server
	}
}

// AdminConfig is the system:masters client config.
func (s *Server) AdminConfig() *rest.Config { return s.Config(AdminToken) }

// NodeConfig is the client config of system:node:<name>.
func (s *Server) NodeConfig(name string) *rest.Config { return s.Config(NodeToken(name)) }

// Kubeconfig writes a kubeconfig for token into the data directory and
// returns its path.
func (s *Server) Kubeconfig(name, token string) (string, error) {
	path := filepath.Join(s.DataDir, name+".kubeconfig")
	return path, os.WriteFile(path, []byte(KubeconfigFor(s.Host, s.CAFile, name, token)), 0o600)
}

// KubeconfigFor is a kubeconfig with one cluster, user and context.
func KubeconfigFor(host, caFile, user, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: admitkit
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: %s
  context:
    cluster: admitkit
    user: %s
current-context: %s
`, host, caFile, user, token, user, user, user)
}

// EtcdURL is the client URL of the embedded etcd.
func (s *Server) EtcdURL() (string, error) {
	if s.etcd != nil {
		return s.etcd.Config().AdvertiseClientUrls[0].String(), nil
	}
	data, err := os.ReadFile(filepath.Join(s.DataDir, "etcd", "ports.json"))
	if err != nil {
		return "", err
	}
	var ports embeddedetcd.Ports
	if err := json.Unmarshal(data, &ports); err != nil {
		return "", err
	}
	return "http://127.0.0.1:" + strconv.Itoa(ports.Client), nil
}

// Cleanup stops the server and removes its data directory.
func (s *Server) Cleanup() error {
	err := s.Stop()
	if s.etcd != nil {
		s.etcd.Close()
	}
	if rmErr := os.RemoveAll(s.DataDir); err == nil {
		err = rmErr
	}
	return err
}

// MustFailToStart starts a server with cfg and fails the test unless the
// server refuses to start with an error naming every string of want.
func MustFailToStart(t testing.TB, cfg Config, want ...string) {
	t.Helper()
	start := time.Now()
	srv, err := Start(cfg)
	if err == nil {
		srv.Cleanup()
		t.Fatal("the server started")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("start-up error does not name %q:\n%v", w, err)
		}
	}
	t.Logf("failed in %s: %v", time.Since(start).Round(time.Millisecond), err)
}
