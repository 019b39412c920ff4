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

var server *framework.Server

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
	ctx, stopControllers := context.WithCancel(context.Background())
	defer stopControllers()
	controllersDone, err := startControllerManager(ctx, srv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-controller-manager: %v\n(server log: %s)\n", err, logFile.Name())
		return 1
	}

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
	return code
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

var admissionConfig = framework.AdmissionConfiguration(framework.NodeRestrictionConfiguration(`    allowedLabels: ["node-role.kubernetes.io/worker"]
    allowedLabelPrefixes: ["partner.kubernetes.io"]
    allowedTaintKeys: ["example.com/maintenance"]
    nodeScopedServiceAccounts:
    - namespace: nr-daemon
      name: agent
      allowedLabelPrefixes: ["feature.node.kubernetes.io"]
`), framework.LocationMutatorConfiguration(`    mutators:
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
`+loadMutators+`    mutatorFiles: ["$DATA_DIR/mutators.yaml"]
    watchMutators: true
    mutationAnnotations: true
`))

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

// adminKubeconfig writes (once per test) the admin's kubeconfig.
func adminKubeconfig(t *testing.T) string {
	t.Helper()
	path, err := server.Kubeconfig("admin", framework.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func kubectl(t *testing.T, stdin string, args ...string) framework.KubectlResult {
	t.Helper()
	return framework.RunKubectl(adminKubeconfig(t), stdin, args...)
}

func mustKubectl(t *testing.T, stdin string, args ...string) framework.KubectlResult {
	t.Helper()
	r := kubectl(t, stdin, args...)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	return r
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
