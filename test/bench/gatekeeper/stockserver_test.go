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
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// identities are the token file's users, by bearer token: the admin, and
// the service accounts the webhook servers sign in as, so that each runs
// with the RBAC its own install gives it (no controller manager runs here
// to issue tokens).
var identities = []struct{ token, line string }{
	{"admin-token", "admin,admin,system:masters"},
	{"admitkit-token", "system:serviceaccount:admitkit-system:admitkit-webhook,admitkit-webhook,system:serviceaccounts"},
	{"gatekeeper-token", "system:serviceaccount:gatekeeper-system:gatekeeper-admin,gatekeeper-admin,system:serviceaccounts"},
}

// stockServer is upstream's kube-apiserver (test/cmd/kube-apiserver) on an
// etcd member of its own, both processes on 127.0.0.1, started with the
// flags test/integration/framework's StartStock gives it.
type stockServer struct {
	dir    string
	host   string
	caFile string
	admin  *rest.Config
	client kubernetes.Interface
	// objects creates what the installs' manifests hold.
	objects client.Client
	// apiserver and etcd are the server's processes.
	apiserver, etcd *process
}

func startStock(t *testing.T, bins binaries) *stockServer {
	t.Helper()
	dir := t.TempDir()
	etcdPort := freePorts(t, 2)
	etcd := startProcess(t, dir, "etcd", bins.etcd, nil, "--data-dir="+dir, "--members=1", "--member=1",
		"--port="+strconv.Itoa(etcdPort), "--unsafe-no-fsync")
	key, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "service-account.key")
	var tokens strings.Builder
	for _, id := range identities {
		tokens.WriteString(id.token + "," + id.line + "\n")
	}
	writeFile(t, keyFile, string(key))
	writeFile(t, filepath.Join(dir, "tokens.csv"), tokens.String())
	port := freePorts(t, 1)
	s := &stockServer{dir: dir, host: "https://127.0.0.1:" + strconv.Itoa(port), caFile: filepath.Join(dir, "certs", "apiserver.crt")}
	p := startProcess(t, dir, "kube-apiserver", bins.kubeAPIServer, nil,
		"--etcd-servers=http://127.0.0.1:"+strconv.Itoa(etcdPort),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+keyFile, "--service-account-signing-key-file="+keyFile,
		"--enable-admission-plugins=NodeRestriction")
	s.apiserver, s.etcd = p, etcd
	s.admin = &rest.Config{Host: s.host, BearerToken: identities[0].token, TLSClientConfig: rest.TLSClientConfig{CAFile: s.caFile}, QPS: -1}
	if err := s.waitReady(); err != nil {
		t.Fatalf("kube-apiserver at %s: %v\n%s", s.host, err, p.failure())
	}
	if s.client, err = kubernetes.NewForConfig(s.admin); err != nil {
		t.Fatal(err)
	}
	if s.objects, err = client.New(s.admin, client.Options{}); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitReady waits until the server writes its certificate and /readyz
// passes.
func (s *stockServer) waitReady() error {
	return wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, err := os.Stat(s.caFile); err != nil {
			return false, nil
		}
		c, err := kubernetes.NewForConfig(s.admin)
		if err != nil {
			return false, err
		}
		var status int
		c.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		return status == http.StatusOK, nil
	})
}

// kubeconfig writes a kubeconfig for the identity of token into dir and
// returns its path.
func (s *stockServer) kubeconfig(t *testing.T, dir, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: s.host, CertificateAuthority: s.caFile}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	cfg.CurrentContext = "bench"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
