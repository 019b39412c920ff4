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
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// admitkitManifests is the install on a stock cluster.
const admitkitManifests = "../../../hack/manifests/*.yaml"

// baseKinds are what an install applies before its server runs; the
// webhook configurations follow once it serves. Deployments, Services and
// the like are left out: no kubelet runs here, the test runs the servers.
var baseKinds = []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// installAdmitkit installs admitkit on s from hack/manifests, as
// test/integration/framework's StartWebhookHost does: the objects of
// baseKinds, then the webhook server as a process on 127.0.0.1 with the
// manifests' plugins and plugin configuration (mutators watched from their
// CRDs) signed in as the manifests' service account, then every webhook
// configuration pointed at it. It returns the server's URL, the CA its
// certificate is signed by, and its process.
func installAdmitkit(t *testing.T, s *stockServer, bins binaries) (string, []byte, *process) {
	t.Helper()
	objs := readObjects(t, admitkitManifests)
	createObjects(t, s.objects, ofKinds(objs, baseKinds...))
	dir := t.TempDir()
	ca := writeServingCert(t, dir)
	writeFile(t, filepath.Join(dir, "admission-config.yaml"), admitkitAdmissionConfig(t, objs))
	port := strconv.Itoa(freePorts(t, 1))
	p := startProcess(t, dir, "admitkit-webhook", bins.admitkit, nil, "webhook",
		"--kubeconfig="+s.kubeconfig(t, dir, identities[1].token),
		"--bind-address=127.0.0.1", "--secure-port="+port,
		"--tls-cert-file="+filepath.Join(dir, "tls.crt"), "--tls-private-key-file="+filepath.Join(dir, "tls.key"),
		"--admission-control-config-file="+filepath.Join(dir, "admission-config.yaml"),
		"--plugins="+admitkitPlugins(t, objs), "--identity=bench")
	url := "https://127.0.0.1:" + port
	waitServing(t, p, url+"/readyz", ca)
	installAdmitkitHooks(t, s, url, ca)
	waitForAdmitkitHooks(t, s)
	return url, ca, p
}

// installAdmitkitHooks creates admitkit's webhook configurations of
// hack/manifests on s, pointed at url and trusting ca: admitkit's server,
// or another one, which kube-apiserver then calls with the same webhooks,
// rules and matchConditions as admitkit's.
func installAdmitkitHooks(t *testing.T, s *stockServer, url string, ca []byte) {
	t.Helper()
	hooks := ofKinds(readObjects(t, admitkitManifests), "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
	for _, h := range hooks {
		if err := pointHooksAt(h, url, ca); err != nil {
			t.Fatal(err)
		}
	}
	createObjects(t, s.objects, hooks)
}

// waitForAdmitkitHooks waits until kube-apiserver sends requests to
// admitkit's webhooks (it picks up new configurations a moment after they
// are stored), so that the presets created next get their defaults: a
// dry-run PodPreset only admitkit's validation refuses shows when.
func waitForAdmitkitHooks(t *testing.T, s *stockServer) {
	t.Helper()
	probe, err := parseObjects([]byte(`apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata: {name: webhook-probe, namespace: default}
spec:
  selector:
    matchExpressions: [{key: app, operator: Sometimes}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var last error
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = s.objects.Create(ctx, probe[0].DeepCopy(), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "operator"), nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver never sent a request to admitkit's webhooks: %v (last: %v)", err, last)
	}
}

// admitkitAdmissionConfig is the plugins' configuration the manifests'
// ConfigMap mounts into the server.
func admitkitAdmissionConfig(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	for _, cm := range ofKinds(objs, "ConfigMap") {
		if config, ok, _ := unstructured.NestedString(cm.Object, "data", "admission-config.yaml"); ok {
			return config
		}
	}
	t.Fatalf("no ConfigMap in %s holds admission-config.yaml", admitkitManifests)
	return ""
}

// admitkitPlugins is the --plugins flag of the manifests' Deployment.
func admitkitPlugins(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	for _, d := range ofKinds(objs, "Deployment") {
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			container, _ := c.(map[string]any)
			args, _, _ := unstructured.NestedStringSlice(container, "args")
			for _, a := range args {
				if v, ok := strings.CutPrefix(a, "--plugins="); ok {
					return v
				}
			}
		}
	}
	t.Fatalf("no Deployment in %s passes --plugins", admitkitManifests)
	return ""
}
