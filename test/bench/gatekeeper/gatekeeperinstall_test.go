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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gatekeeperModule is the module the manager is built from.
const gatekeeperModule = "github.com/open-policy-agent/gatekeeper/v3"

// installGatekeeper installs Gatekeeper's mutation webhook on s from the
// deploy/gatekeeper.yaml of its module: the objects of baseKinds (all its
// CRDs, its namespace and RBAC), then its manager as a process on
// 127.0.0.1 running only the mutation webhook, signed in as its service
// account, then its MutatingWebhookConfiguration pointed at it, with
// Gatekeeper's own settings (failurePolicy Ignore, timeoutSeconds 1,
// reinvocation Never). It returns the URLs of its webhook server and of
// its metrics, and its process.
func installGatekeeper(t *testing.T, s *stockServer, bins binaries) (webhookURL, metricsURL string, manager *process) {
	t.Helper()
	objs := readObjects(t, filepath.Join(moduleDir(t, gatekeeperModule), "deploy", "gatekeeper.yaml"))
	createObjects(t, s.objects, ofKinds(objs, baseKinds...))
	dir := t.TempDir()
	ca := writeServingCert(t, dir)
	ports := freePorts(t, 4)
	webhook, health, metrics, prometheus := strconv.Itoa(ports), strconv.Itoa(ports+1), strconv.Itoa(ports+2), strconv.Itoa(ports+3)
	// The deployment's arguments and environment, but the validating
	// webhook (--operation=webhook), and with the addresses on loopback
	// and the certificate this test made.
	p := startProcess(t, dir, "gatekeeper", bins.gatekeeper, []string{
		"KUBECONFIG=" + s.kubeconfig(t, dir, identities[2].token),
		"POD_NAMESPACE=gatekeeper-system", "NAMESPACE=gatekeeper-system", "POD_NAME=gatekeeper-bench", "CONTAINER_NAME=manager",
	},
		"--operation=mutation-webhook", "--exempt-namespace=gatekeeper-system", "--disable-opa-builtin={http.send}",
		"--host=127.0.0.1", "--port="+webhook, "--cert-dir="+dir, "--disable-cert-rotation",
		"--health-addr=127.0.0.1:"+health, "--metrics-addr=127.0.0.1:"+metrics, "--shutdown-delay=0",
		// Its own metrics exporter takes a port only, on every address:
		// one of this test's, not its fixed default (8888), so that two
		// managers on one machine do not collide.
		"--prometheus-port="+prometheus)
	// Its readiness waits for the mutators it found at start to be in
	// its mutation system.
	waitServing(t, p, "http://127.0.0.1:"+health+"/readyz", nil)
	hooks := ofKinds(objs, "MutatingWebhookConfiguration")
	for _, h := range hooks {
		if err := pointHooksAt(h, "https://127.0.0.1:"+webhook, ca); err != nil {
			t.Fatal(err)
		}
	}
	createObjects(t, s.objects, hooks)
	return "https://127.0.0.1:" + webhook, "http://127.0.0.1:" + metrics + "/metrics", p
}

// moduleDir is where the module cache holds module, at the version this
// module's graph selects.
func moduleDir(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return strings.TrimSpace(string(out))
}
