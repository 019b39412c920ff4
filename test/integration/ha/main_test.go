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

// Package ha runs two custom kube-apiservers on one three-member etcd
// cluster, as a highly available control plane does, and tests what one
// server's clients see of what was written through the other: presets,
// NodeRestriction's refusals, how long a write takes to reach the other
// server's admission plugins, and what happens to a load of pod creates
// when an apiserver or an etcd member stops.
//
// Every test shares the one cluster TestMain starts (each new server links
// and starts a whole kube-apiserver): a test that stops a server or a
// member restarts it before it returns.
package ha

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/admitkit/admitkit/test/integration/framework"
)

// cluster is the etcd cluster and the two servers; serverA and serverB
// name them in the tests, which write through one and check through the
// other.
var (
	cluster          *framework.Cluster
	serverA, serverB *framework.Server
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The servers log a lot; keep it in a file and show where on failure.
	logFile, err := framework.LogToFile("admitkit-ha-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	c, err := framework.StartCluster(framework.ClusterConfig{Server: serverConfig()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the cluster: %v\n(server log: %s)\n", err, logFile.Name())
		return 1
	}
	cluster, serverA, serverB = c, c.Servers[0], c.Servers[1]

	code := m.Run()
	if err := cluster.Cleanup(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the cluster: %v\n", err)
	}
	logFile.Finish(code)
	return code
}

// serverConfig is every server's configuration: all of admitkit's plugins,
// settings.k8s.io served, two nodes, one static mutator so that the
// LocationMutator runs in both chains, and the mutators from the API.
func serverConfig() framework.Config {
	return framework.Config{
		Nodes:           []string{"node-1", "node-2"},
		AdmissionConfig: admissionConfig,
		Args: []string{
			framework.ServeSettings,
			"--enable-admission-plugins=PodPreset,NodeRestriction,LocationMutator",
		},
	}
}

var admissionConfig = framework.AdmissionConfiguration(framework.LocationMutatorConfiguration(`    mutators:
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: ha-always-pull}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        match:
          scope: Namespaced
          namespaces: ["ha-lm-*"]
        location: "spec.containers[name:*].imagePullPolicy"
        parameters:
          assign: {value: Always}
    watchMutators: true
`))

const presetAnnotationPrefix = "podpreset.admission.kubernetes.io/"

// presetsOn returns the presets the PodPreset plugin applied to pod, by
// their annotation names (podpreset-<name>, clusterpodpreset-<name>).
func presetsOn(pod *corev1.Pod) map[string]bool {
	got := map[string]bool{}
	for k := range pod.Annotations {
		if name, ok := strings.CutPrefix(k, presetAnnotationPrefix); ok {
			got[name] = true
		}
	}
	return got
}

// probe creates pod in ns on client with dry-run: it runs through
// admission exactly as a real create, and stores nothing.
func probe(ctx context.Context, client kubernetes.Interface, ns string, pod *corev1.Pod) (*corev1.Pod, error) {
	out, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, fmt.Errorf("dry-run create of pod %s/%s: %w", ns, pod.Name, err)
	}
	return out, nil
}
