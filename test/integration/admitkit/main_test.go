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

// Package admitkit runs the custom kube-apiserver once, with every admitkit
// plugin this build registers enabled, and tests the settings.k8s.io API
// and the plugins against it through the generated clientset, client-go
// and kubectl.
package admitkit

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
	"github.com/admitkit/admitkit/test/apiserver"
	"github.com/admitkit/admitkit/test/integration/framework"
)

var (
	// server is the custom kube-apiserver, the in-process host; tests that
	// prove behaviour on every host take theirs from onEachHost.
	server *framework.Server
	// hosts are where this package's admitkit plugins run, in the order
	// onEachHost tries them.
	hosts []*host
)

// admitkitPlugins are the plugins this package tests; the server enables
// them all.
var admitkitPlugins = []string{locationmutator.PluginName, noderestriction.PluginName, podpreset.PluginName}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	logFile, err := framework.LogToFile("admitkit-apiserver-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	// The stock host's commands build while the in-process server starts.
	framework.PrebuildCommands("kube-apiserver", "admitkit", "kube-controller-manager", "kubectl")
	// One check for every test: a build that lost a plugin fails the
	// package, rather than a test of that plugin skipping.
	if registered := apiserver.AdmitkitPlugins(); !slices.Equal(registered, admitkitPlugins) {
		fmt.Fprintf(os.Stderr, "this build registers the admitkit plugins %v, want %v (plugin.RegisterAllAdmissionPlugins)\n", registered, admitkitPlugins)
		return 1
	}
	cfg := serverConfig()
	cfg.Args = append(cfg.Args, "--enable-admission-plugins="+strings.Join(admitkitPlugins, ","))
	srv, err := framework.Start(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-apiserver: %v\n(server log: %s)\n", err, logFile.Name())
		return 1
	}
	server = srv
	hosts = append(hosts, &host{name: "in-process", server: srv})
	ctx, stopControllers := context.WithCancel(context.Background())
	defer stopControllers()
	controllersDone, err := startControllerManager(ctx, srv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-controller-manager: %v\n(server log: %s)\n", err, logFile.Name())
		return 1
	}

	stock, err := startStockHost()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the stock kube-apiserver with admitkit's webhooks: %v\n", err)
		return 1
	}
	defer func() {
		if err := stock.controllers.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		stock.webhook.Kill()
		if err := stock.server.Cleanup(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the stock kube-apiserver: %v\n", err)
		}
	}()
	hosts = append(hosts, stock)

	code := m.Run()
	// The controllers' watches would hold the server's graceful shutdown.
	stopControllers()
	if err := <-controllersDone; err != nil {
		fmt.Fprintf(os.Stderr, "kube-controller-manager: %v\n", err)
	}
	if err := srv.Cleanup(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping kube-apiserver: %v\n", err)
	}
	logFile.Finish(code)
	framework.RemoveCommands()
	return code
}

// webhookIdentity is the identity of the stock host's webhook server.
const webhookIdentity = "admitkit-webhook-1"

// startStockHost starts upstream's own kube-apiserver with the server
// configuration of the package, less what only the custom build serves,
// admitkit's webhook server beside it with the same plugin configuration,
// installed from hack/manifests, and upstream's kube-controller-manager.
func startStockHost() (*host, error) {
	cfg := serverConfig()
	cfg.AdmissionConfig, cfg.Files, cfg.Args = "", nil, nil
	srv, err := framework.StartStock(cfg)
	if err != nil {
		return nil, err
	}
	webhook, err := framework.StartWebhookHost(srv, webhookConfig(webhookIdentity))
	if err != nil {
		srv.Cleanup()
		return nil, err
	}
	controllers, err := framework.StartControllerManager(srv, controllerManagerFlags()...)
	if err != nil {
		webhook.Kill()
		srv.Cleanup()
		return nil, err
	}
	return &host{name: "webhook", server: srv, pluginIdentity: webhookIdentity, webhook: webhook, controllers: controllers}, nil
}

// webhookConfig is the webhook server of the stock host, with the plugin
// configuration of the in-process one, under identity.
func webhookConfig(identity string) framework.WebhookConfig {
	return framework.WebhookConfig{
		AdmissionConfig: webhookAdmissionConfig,
		Files:           map[string]string{"mutators.yaml": mutatorFile},
		Plugins:         append(append([]string(nil), admitkitPlugins...), "SettingsDefaults", "SettingsValidation"),
		Identity:        identity,
	}
}

// serverConfig is the one server of this package: an audit log of the
// pod creates podpreset_modes_test.go and locationmutator_modes_test.go
// make, two nodes, the
// NodeRestriction allowances of noderestriction_test.go and the node daemon
// of nodedaemons_test.go, the mutators of
// locationmutator_test.go, scoped to namespaces named lm-* so that they
// leave the other tests' objects alone, and the mutators from the API of
// livemutators_test.go (in live-* namespaces).
func serverConfig() framework.Config {
	return framework.Config{
		Nodes:           []string{"node-1", "node-2"},
		AdmissionConfig: admissionConfig,
		Files:           map[string]string{"mutators.yaml": mutatorFile},
		AuditPolicy:     auditPolicy,
		Args:            []string{framework.ServeSettings},
	}
}

// auditPolicy logs, at level Metadata (which carries admission plugins'
// audit annotations), only the pod creates of podpreset_modes_test.go and
// locationmutator_modes_test.go:
// every other request goes unlogged, so that the timings other tests take
// do not include writing the audit log.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  namespaces: [` + modesNamespace + `, ` + lmModesNamespace + `]
  verbs: [create]
  resources: [{group: "", resources: [pods]}]
- level: None
`

// admissionConfig is the in-process server's plugin configuration. Its
// NodeRestriction reads the objects its rules need from informers, the
// default, as Kubernetes' does.
var admissionConfig = framework.AdmissionConfiguration(framework.NodeRestrictionConfiguration(nodeRestrictionFields), locationMutatorConfiguration)

// webhookAdmissionConfig is the same for the stock host's webhook server,
// but NodeRestriction GETs those objects when a request needs them, as
// hack/manifests configures it (lookups: Requests), and as its RBAC, which
// the server signs in with, allows: no informer of pods or Nodes.
var webhookAdmissionConfig = framework.AdmissionConfiguration(framework.NodeRestrictionConfiguration("    lookups: Requests\n"+nodeRestrictionFields), locationMutatorConfiguration)

// nodeRestrictionFields are the NodeRestriction allowances of
// noderestriction_test.go and the node daemon of nodedaemons_test.go.
const nodeRestrictionFields = `    allowedLabels: ["node-role.kubernetes.io/worker"]
    allowedLabelPrefixes: ["partner.kubernetes.io"]
    allowedTaintKeys: ["example.com/maintenance"]
    nodeScopedServiceAccounts:
    - namespace: nr-daemon
      name: agent
      allowedLabelPrefixes: ["feature.node.kubernetes.io"]
`

// locationMutatorConfiguration is the LocationMutator's entry of both
// hosts' configuration.
var locationMutatorConfiguration = framework.LocationMutatorConfiguration(`    mutators:
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: lm-always-pull}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        match:
          scope: Namespaced
          namespaces: ["lm-*"]
        location: "spec.containers[name:*].imagePullPolicy"
        parameters:
          assign: {value: Always}
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: lm-always-pull-init}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        match:
          scope: Namespaced
          namespaces: ["lm-*"]
        location: "spec.initContainers[name:*].imagePullPolicy"
        parameters:
          assign: {value: Always}
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: lm-widget-size}
      spec:
        applyTo: [{groups: [example.com], kinds: [Widget], versions: [v1]}]
        match:
          namespaces: ["lm-*"]
        location: "spec.size"
        parameters:
          pathTests: [{subPath: spec.size, condition: MustNotExist}]
          assign: {value: 3}
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: lm-string-port}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        match:
          namespaces: ["lm-reject"]
        location: 'spec.containers[name: proxy].ports[containerPort: "9090"].protocol'
        parameters:
          assign: {value: TCP}
` + loadMutators + `    mutatorFiles: ["$DATA_DIR/mutators.yaml"]
    watchMutators: true
    mutationAnnotations: true
`)

// mutatorFile holds a Gatekeeper manifest as Gatekeeper users write it.
const mutatorFile = `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata:
  name: lm-namespace-label
spec:
  match:
    scope: Cluster
    kinds:
    - apiGroups: [""]
      kinds: ["Namespace"]
    name: "lm-*"
  location: "metadata.labels.admitkit-mutated"
  parameters:
    assign:
      value: "true"
`

// host is one place where admitkit's plugins serve a kube-apiserver: the
// custom build with them compiled in ("in-process"), or admitkit's webhook
// server beside upstream's own kube-apiserver. A test of behaviour runs on
// each (onEachHost) and expects the same of both.
type host struct {
	name string
	// server is the kube-apiserver the test's clients talk to.
	server *framework.Server
	// pluginIdentity is the identity the plugins key their status entries
	// by, when it is not the kube-apiserver's own (a webhook server's).
	pluginIdentity string
	// webhook is admitkit's webhook server of a stock kube-apiserver.
	webhook *framework.Webhook
	// controllers is the stock kube-apiserver's kube-controller-manager;
	// the in-process host runs its own in this process.
	controllers *framework.ControllerManager
}

// identity is the name under which the host's plugins write status
// entries: the kube-apiserver's identity for the plugins inside it.
func (h *host) identity(t *testing.T) string {
	t.Helper()
	if h.pluginIdentity != "" {
		return h.pluginIdentity
	}
	return serverIdentity(t, framework.KubeClient(t, h.server.AdminConfig()))
}

// onEachHost runs test once per host, each as a subtest named after it.
// The hosts' subtests run at once: each host is servers and processes of
// its own, the metrics a test reads are its host's (this process's for
// the in-process one, the webhook server's for the other), and each of
// the two leaves a core mostly idle while its servers wait on each other.
// Every caller runs nothing after it, since parallel subtests start only
// when the test function returns.
func onEachHost(t *testing.T, test func(t *testing.T, h *host)) {
	t.Helper()
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			test(t, h)
		})
	}
}

// adminKubeconfig writes (once per test) the admin's kubeconfig.
func (h *host) adminKubeconfig(t *testing.T) string {
	t.Helper()
	path, err := h.server.Kubeconfig("admin", framework.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectl runs kubectl as the admin against the host's kube-apiserver.
func (h *host) kubectl(t *testing.T, stdin string, args ...string) framework.KubectlResult {
	t.Helper()
	return framework.RunKubectl(h.adminKubeconfig(t), stdin, args...)
}

func (h *host) mustKubectl(t *testing.T, stdin string, args ...string) framework.KubectlResult {
	t.Helper()
	r := h.kubectl(t, stdin, args...)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	return r
}

// podWebhook is the webhook of hack/manifests that runs PodPreset and
// LocationMutator on a pod create.
const podWebhook = "pods.admission.admitkit.io"

// podCreateAuditKey is the key under which the host's audit log records
// key, an audit annotation a plugin adds to a pod create: the plugin's own
// in-process, and on a stock kube-apiserver "<webhook name>/<name>", the
// webhook being the one that runs both plugins on pod creates.
func (h *host) podCreateAuditKey(key string) string {
	if h.webhook == nil {
		return key
	}
	return podWebhook + "/" + key[strings.LastIndex(key, "/")+1:]
}

// inProcess is the custom build's host, for the tests that run on it alone.
func inProcess() *host { return hosts[0] }

func kubectl(t *testing.T, stdin string, args ...string) framework.KubectlResult {
	t.Helper()
	return inProcess().kubectl(t, stdin, args...)
}

func mustKubectl(t *testing.T, stdin string, args ...string) framework.KubectlResult {
	t.Helper()
	return inProcess().mustKubectl(t, stdin, args...)
}

// testdata returns the path of a file under testdata/.
func testdata(name string) string { return filepath.Join("testdata", name) }

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
