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

package admitkit

import (
	"context"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitkit/admitkit/test/integration/framework"
)

const clusterPresetYAML = `apiVersion: settings.k8s.io/v1alpha1
kind: ClusterPodPreset
metadata:
  name: kubectl-proxy
spec:
  namespaceSelector:
    matchLabels:
      proxy: "on"
  env:
  - name: HTTP_PROXY
    value: http://proxy:3128
`

// tableRow splits kubectl's table output into header fields and rows of
// cells (columns are separated by at least two spaces).
func tableRows(t *testing.T, out string) ([]string, [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	sep := regexp.MustCompile(`\s{2,}`)
	var rows [][]string
	for _, line := range lines[1:] {
		rows = append(rows, sep.Split(strings.TrimSpace(line), -1))
	}
	return sep.Split(strings.TrimSpace(lines[0]), -1), rows
}

// TestKubectlTable checks kubectl's columns, which come from the server's
// table convertor.
func TestKubectlTable(t *testing.T) {
	ns := "kubectl-table"
	framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	mustKubectl(t, "", "apply", "-n", ns, "-f", testdata("podpreset.yaml"))

	header, rows := tableRows(t, mustKubectl(t, "", "get", "podpresets", "-n", ns).Stdout)
	if strings.Join(header, "|") != "NAME|SELECTOR|INJECTS|AGE" {
		t.Errorf("podpresets header %q, want NAME SELECTOR INJECTS AGE", header)
	}
	if len(rows) != 1 || len(rows[0]) != 4 || rows[0][0] != "allow-database" || rows[0][1] != "role=frontend" || rows[0][2] != "1 env, 1 volume, 1 mount" {
		t.Errorf("rows %q, want allow-database | role=frontend | 1 env, 1 volume, 1 mount | age", rows)
	}
	// The short name reaches the same resource.
	mustKubectl(t, "", "get", "pp", "-n", ns, "allow-database")

	mustKubectl(t, clusterPresetYAML, "apply", "-f", "-")
	header, rows = tableRows(t, mustKubectl(t, "", "get", "cpp", "kubectl-proxy").Stdout)
	if strings.Join(header, "|") != "NAME|NAMESPACE SELECTOR|SELECTOR|INJECTS|AGE" {
		t.Errorf("clusterpodpresets header %q, want NAME NAMESPACE SELECTOR SELECTOR INJECTS AGE", header)
	}
	if len(rows) != 1 || len(rows[0]) != 5 || rows[0][1] != "proxy=on" || rows[0][2] != "<none>" || rows[0][3] != "1 env" {
		t.Errorf("rows %q, want kubectl-proxy | proxy=on | <none> | 1 env | age", rows)
	}
}

// TestKubectlExplain needs the OpenAPI v3 models of settings.k8s.io.
func TestKubectlExplain(t *testing.T) { onEachHost(t, testKubectlExplain) }

func testKubectlExplain(t *testing.T, h *host) {
	out := h.mustKubectl(t, "", "explain", "podpresets.spec").Stdout
	for _, want := range []string{"GROUP:      settings.k8s.io", "KIND:       PodPreset", "VERSION:    v1alpha1", "selector", "env", "envFrom", "volumes", "volumeMounts"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain podpresets.spec lacks %q:\n%s", want, out)
		}
	}
	out = h.mustKubectl(t, "", "explain", "clusterpodpresets.spec.namespaceSelector").Stdout
	if !strings.Contains(out, "matchLabels") {
		t.Errorf("kubectl explain clusterpodpresets.spec.namespaceSelector lacks matchLabels:\n%s", out)
	}
	// Fields below the preset resolve into core/v1 models.
	out = h.mustKubectl(t, "", "explain", "podpresets.spec.env.valueFrom.secretKeyRef").Stdout
	if !strings.Contains(out, "optional") {
		t.Errorf("kubectl explain podpresets.spec.env.valueFrom.secretKeyRef lacks optional:\n%s", out)
	}
}

// TestKubectlApply applies a preset, then a changed one: the change is
// stored and the generation moves. Then the same with --server-side.
func TestKubectlApply(t *testing.T) { onEachHost(t, testKubectlApply) }

func testKubectlApply(t *testing.T, h *host) {
	ctx := context.Background()
	ns := "kubectl-apply"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	presets := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1().PodPresets(ns)
	manifest := func(value string) string {
		return `apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata:
  name: cache
spec:
  selector:
    matchLabels:
      app: web
  env:
  - name: CACHE_URL
    value: ` + value + "\n"
	}

	for _, mode := range []struct {
		name string
		args []string
	}{
		{"client-side", nil},
		{"server-side", []string{"--server-side", "--field-manager=admitkit-test"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			args := append([]string{"apply", "-n", ns, "-f", "-"}, mode.args...)
			out := h.mustKubectl(t, manifest("redis://one"), args...).Stdout
			if !strings.Contains(out, "podpreset.settings.k8s.io/cache") {
				t.Errorf("kubectl apply printed %q", out)
			}
			first, err := presets.Get(ctx, "cache", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if first.Spec.Env[0].Value != "redis://one" {
				t.Fatalf("env after the first apply %v", first.Spec.Env)
			}

			h.mustKubectl(t, manifest("redis://two"), args...)
			second, err := presets.Get(ctx, "cache", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(second.Spec.Env) != 1 || second.Spec.Env[0].Value != "redis://two" {
				t.Errorf("env after applying a changed spec %v, want CACHE_URL=redis://two", second.Spec.Env)
			}
			if second.Generation != first.Generation+1 {
				t.Errorf("generation %d after a changed apply, want %d", second.Generation, first.Generation+1)
			}

			// Applying the same manifest again changes nothing.
			h.mustKubectl(t, manifest("redis://two"), args...)
			third, err := presets.Get(ctx, "cache", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if third.Generation != second.Generation || third.ResourceVersion != second.ResourceVersion {
				t.Errorf("re-applying the same manifest moved generation %d→%d, resourceVersion %s→%s", second.Generation, third.Generation, second.ResourceVersion, third.ResourceVersion)
			}
			if mode.name == "server-side" {
				managers := map[string]metav1.ManagedFieldsOperationType{}
				for _, f := range third.ManagedFields {
					managers[f.Manager] = f.Operation
				}
				if managers["admitkit-test"] != metav1.ManagedFieldsOperationApply {
					t.Errorf("managed fields %v lack an Apply by admitkit-test", managers)
				}
			}
			if err := presets.Delete(ctx, "cache", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestKubectlDiff runs kubectl diff, which is a server-side dry-run apply.
func TestKubectlDiff(t *testing.T) { onEachHost(t, testKubectlDiff) }

func testKubectlDiff(t *testing.T, h *host) {
	ns := "kubectl-diff"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	h.mustKubectl(t, "", "apply", "-n", ns, "-f", testdata("podpreset.yaml"))
	changed := strings.Replace(mustRead(t, testdata("podpreset.yaml")), `"6379"`, `"6380"`, 1)
	r := h.kubectl(t, changed, "diff", "-n", ns, "-f", "-")
	// kubectl diff exits 1 when there are differences.
	if !strings.Contains(r.Stdout, `+    value: "6380"`) {
		t.Errorf("kubectl diff output lacks the changed value (err %v):\n%s", r.Err, r.Stdout)
	}
}
