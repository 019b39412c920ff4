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
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/test/apiserver"
)

// WebhookConfig says how to run admitkit's webhook server.
type WebhookConfig struct {
	// AdmissionConfig is the server's --admission-control-config-file, in
	// place of the manifests' ConfigMap; $DATA_DIR becomes its directory.
	AdmissionConfig string
	// Files are written into its directory (mutator files the
	// configuration names).
	Files map[string]string
	// Plugins are served (--plugins).
	Plugins []string
	// Identity names its status entries, as a replica's pod name does.
	Identity string
	// Args are more flags (--compile-policies).
	Args []string
}

// Webhook is admitkit's webhook server (`admitkit webhook`) running
// as a process on 127.0.0.1 for a stock kube-apiserver.
type Webhook struct {
	// URL is where it serves, https://127.0.0.1:<port>.
	URL    string
	dir    string
	caPEM  []byte
	args   []string
	binary string
	cmd    *exec.Cmd
	done   chan error
}

// manifestsDir is hack/manifests of the repository this file is in.
func manifestsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "hack", "manifests")
}

// manifest is one YAML document of hack/manifests and its kind.
type manifest struct{ kind, text string }

func readManifests() ([]manifest, error) {
	paths, err := filepath.Glob(filepath.Join(manifestsDir(), "*.yaml"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no manifests in %s: %v", manifestsDir(), err)
	}
	kindLine := regexp.MustCompile(`(?m)^kind: (\w+)`)
	var out []manifest
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			if m := kindLine.FindStringSubmatch(doc); m != nil {
				out = append(out, manifest{kind: m[1], text: doc})
			}
		}
	}
	return out, nil
}

// serviceRef is a webhook's clientConfig.service of the manifests.
var serviceRef = regexp.MustCompile(`(?m)^(\s+)service:\n\s+name: admitkit-webhook\n\s+namespace: admitkit-system\n\s+path: (\S+)\n`)

// StartWebhookHost installs admitkit on srv from hack/manifests as a
// cluster admin would, and runs the server as a process where the
// manifests' Deployment would run it (no kubelet runs here): everything
// but the Deployment, the Service and the ConfigMap of the plugins'
// configuration (cfg gives its own) is applied with kubectl; the server
// authenticates with a token of the manifests' service account, so their
// RBAC is what it may do; once it is ready, the webhook configurations
// are applied with each service reference turned into a url on 127.0.0.1
// and the test's CA as caBundle, as upstream's own integration tests
// reach webhooks. It returns once the webhooks take requests.
func StartWebhookHost(srv *Server, cfg WebhookConfig) (*Webhook, error) {
	binary, err := BuildCommand("admitkit")
	if err != nil {
		return nil, err
	}
	docs, err := readManifests()
	if err != nil {
		return nil, err
	}
	admin, err := srv.Kubeconfig("admin", AdminToken)
	if err != nil {
		return nil, err
	}
	var base, hooks []string
	for _, d := range docs {
		switch d.kind {
		case "Deployment", "Service", "ConfigMap":
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			hooks = append(hooks, d.text)
		default:
			base = append(base, d.text)
		}
	}
	if r := RunKubectl(admin, strings.Join(base, "\n---\n"), "apply", "-f", "-"); r.Err != nil {
		return nil, r.Err
	}
	if r := RunKubectl(admin, "", "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"); r.Err != nil {
		return nil, r.Err
	}

	w, err := newWebhook(srv, binary, cfg)
	if err != nil {
		return nil, err
	}
	if err := w.start(); err != nil {
		return nil, err
	}
	ca := base64.StdEncoding.EncodeToString(w.caPEM)
	configs := serviceRef.ReplaceAllString(strings.Join(hooks, "\n---\n"), "${1}url: "+w.URL+"${2}\n${1}caBundle: "+ca+"\n")
	if r := RunKubectl(admin, configs, "apply", "-f", "-"); r.Err != nil {
		w.Kill()
		return nil, r.Err
	}
	if err := waitForWebhooks(admin); err != nil {
		w.Kill()
		return nil, err
	}
	return w, nil
}

// StartWebhookReplica runs one more replica of admitkit's webhook server
// beside the one StartWebhookHost installed, as the manifests' Deployment
// runs two: the same service account, its own identity and port. The
// webhook configurations keep pointing at the first; the replica serves
// whoever calls it, and its plugins write their own status entries.
func StartWebhookReplica(srv *Server, cfg WebhookConfig) (*Webhook, error) {
	binary, err := BuildCommand("admitkit")
	if err != nil {
		return nil, err
	}
	w, err := newWebhook(srv, binary, cfg)
	if err != nil {
		return nil, err
	}
	return w, w.start()
}

// newWebhook writes the server's files, its certificate and a kubeconfig
// with a token of its service account.
func newWebhook(srv *Server, binary string, cfg WebhookConfig) (*Webhook, error) {
	dir, err := os.MkdirTemp(srv.DataDir, "webhook-")
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(srv.AdminConfig())
	if err != nil {
		return nil, err
	}
	token, err := client.CoreV1().ServiceAccounts("admitkit-system").CreateToken(context.Background(), "admitkit-webhook",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("a token of admitkit-system/admitkit-webhook: %w", err)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return nil, err
	}
	files := map[string]string{
		"kubeconfig":            KubeconfigFor(srv.Host, srv.CAFile, "admitkit-webhook", token.Status.Token),
		"tls.crt":               string(certPEM),
		"tls.key":               string(keyPEM),
		"admission-config.yaml": strings.ReplaceAll(cfg.AdmissionConfig, "$DATA_DIR", dir),
	}
	for name, content := range cfg.Files {
		files[name] = content
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
	return &Webhook{
		URL:    "https://127.0.0.1:" + strconv.Itoa(ports[0]),
		dir:    dir,
		caPEM:  certPEM,
		binary: binary,
		args: append([]string{
			"webhook",
			"--kubeconfig=" + filepath.Join(dir, "kubeconfig"),
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(ports[0]),
			"--tls-cert-file=" + filepath.Join(dir, "tls.crt"),
			"--tls-private-key-file=" + filepath.Join(dir, "tls.key"),
			"--admission-control-config-file=" + filepath.Join(dir, "admission-config.yaml"),
			"--plugins=" + strings.Join(cfg.Plugins, ","),
			"--identity=" + cfg.Identity,
		}, cfg.Args...),
	}, nil
}

// start runs the process, its output appended to webhook.log, and waits
// until /readyz passes.
func (w *Webhook) start() error {
	log, err := os.OpenFile(filepath.Join(w.dir, "webhook.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w.cmd = exec.Command(w.binary, w.args...)
	w.cmd.Stdout, w.cmd.Stderr = log, log
	if err := w.cmd.Start(); err != nil {
		log.Close()
		return err
	}
	w.done = make(chan error, 1)
	go func(cmd *exec.Cmd) {
		err := cmd.Wait()
		log.Close()
		w.done <- err
	}(w.cmd)
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-w.done:
			w.done <- err
			return fmt.Errorf("admitkit-webhook stopped before it was ready: %v (log: %s)", err, log.Name())
		case <-time.After(100 * time.Millisecond):
		}
		if code, _, err := w.Get("/readyz"); err == nil && code == http.StatusOK {
			return nil
		}
	}
	w.Kill()
	return fmt.Errorf("admitkit-webhook at %s not ready after %s (log: %s)", w.URL, startTimeout, log.Name())
}

// Get reads path from the server: its status code and body.
func (w *Webhook) Get(path string) (int, string, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.caPEM)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(w.URL + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// Kill ends the server at once (SIGKILL), as a node failure would.
func (w *Webhook) Kill() {
	_ = w.cmd.Process.Kill()
	err := <-w.done
	w.done <- err
}

// Restart starts a killed server again with the same flags and port and
// waits until it is ready.
func (w *Webhook) Restart() error { return w.start() }

// waitForWebhooks waits until kube-apiserver sends requests to the
// webhooks: it picks up new configurations a moment after they are
// stored. A dry-run PodPreset that only admitkit's validation refuses
// shows when.
func waitForWebhooks(kubeconfig string) error {
	const probe = `apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata: {name: webhook-probe, namespace: default}
spec:
  selector:
    matchExpressions: [{key: app, operator: Sometimes}]
`
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		r := RunKubectl(kubeconfig, probe, "create", "--dry-run=server", "-f", "-")
		if r.Err != nil && strings.Contains(r.Err.Error(), "operator") {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver never sent a request to admitkit's webhooks")
}
