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

package offline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// write writes the files of a test into a directory and returns its path.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run admits input against state in namespace shop.
func run(t *testing.T, state, input string, expand bool) []Admitted {
	t.Helper()
	dir := write(t, map[string]string{"state.yaml": state, "input.yaml": input})
	cfg := Config{State: []string{filepath.Join(dir, "state.yaml")}, Namespace: "shop", ExpandPods: expand}
	results, err := Run(context.Background(), testOptions(t, Inputs{}), cfg, []string{filepath.Join(dir, "input.yaml")}, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Result.Refusal != nil {
			t.Fatalf("%s refused: %s", r.Name, r.Result.Refusal.Message)
		}
	}
	return results
}

const shop = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
`

// TestRunScopeOfKinds: cluster-scoped kinds get no namespace from -n, as
// kube-apiserver stores them, and a scope: Cluster mutator applies to them
// and not to a namespaced object.
func TestRunScopeOfKinds(t *testing.T) {
	state := shop + `---
apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: cluster-owner}
spec:
  match:
    scope: Cluster
    kinds: [{apiGroups: ["*"], kinds: ["*"]}]
  location: metadata.labels.owner
  parameters: {assign: {value: platform}}
`
	input := `
apiVersion: v1
kind: PersistentVolume
metadata: {name: data}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /data}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: []
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/fast
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
`
	results := run(t, state, input, false)
	if len(results) != 4 {
		t.Fatalf("%d results, want 4", len(results))
	}
	for _, r := range results {
		obj := r.Result.Object
		namespaced := obj.GetKind() == "ConfigMap"
		if got, want := obj.GetNamespace(), map[bool]string{true: "shop", false: ""}[namespaced]; got != want {
			t.Errorf("%s: namespace %q, want %q", r.Name, got, want)
		}
		if got, want := obj.GetLabels()["owner"], map[bool]string{true: "", false: "platform"}[namespaced]; got != want {
			t.Errorf("%s: label owner %q, want %q", r.Name, got, want)
		}
	}
}

// TestRunEachObjectItsOwnRequest: a pod and a copy of it that already
// holds what a mutator writes are two creates, and each gets the Warn
// preset's warning, as two kubectl creates would.
func TestRunEachObjectItsOwnRequest(t *testing.T) {
	state := shop + `---
apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata: {name: db, namespace: shop}
spec:
  mode: Warn
  selector: {matchLabels: {role: web}}
  env: [{name: DB, value: db}]
---
apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: always-pull}
spec:
  applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
  match: {scope: Namespaced, kinds: [{apiGroups: ["*"], kinds: [Pod]}]}
  location: spec.containers[name:*].imagePullPolicy
  parameters: {assign: {value: Always}}
`
	input := `
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {role: web}}
spec:
  containers: [{name: web, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {role: web}}
spec:
  containers: [{name: web, image: nginx, imagePullPolicy: Always}]
`
	results := run(t, state, input, false)
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	for i, r := range results {
		if !slices.ContainsFunc(r.Result.Warnings, func(w string) bool { return strings.Contains(w, "db") }) {
			t.Errorf("object %d: warnings %q, want the Warn preset's", i+1, r.Result.Warnings)
		}
	}
}

// TestRunNamespaceName: a namespace given as state carries
// kubernetes.io/metadata.name, which selectors may read.
func TestRunNamespaceName(t *testing.T) {
	state := shop + `---
apiVersion: settings.k8s.io/v1alpha1
kind: ClusterPodPreset
metadata: {name: proxy}
spec:
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: shop}}
  env: [{name: HTTP_PROXY, value: http://proxy}]
`
	input := `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: web, image: nginx}]
`
	results := run(t, state, input, false)
	env, _, _ := unstructured.NestedSlice(results[0].Result.Object.Object, "spec", "containers")
	if !strings.Contains(toString(env), "HTTP_PROXY") {
		t.Errorf("containers %v, want HTTP_PROXY from the cluster preset", env)
	}
}

// TestRunMutatorAtAnyServedVersion: a mutator given at a version of its
// CustomResourceDefinition other than the one the plugin watches applies,
// as a server serves it at every version.
func TestRunMutatorAtAnyServedVersion(t *testing.T) {
	state := shop + `---
apiVersion: mutations.gatekeeper.sh/v1alpha1
kind: AssignMetadata
metadata: {name: team}
spec:
  location: metadata.labels.team
  parameters: {assign: {value: shop}}
`
	results := run(t, state, `
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
`, false)
	if got := results[0].Result.Object.GetLabels()["team"]; got != "shop" {
		t.Errorf("labels %v, want team=shop from the v1alpha1 AssignMetadata", results[0].Result.Object.GetLabels())
	}
}

// TestRunSecretStringData: the server stores stringData as data.
func TestRunSecretStringData(t *testing.T) {
	results := run(t, shop, `
apiVersion: v1
kind: Secret
metadata: {name: s}
data: {a: YQ==, b: Yg==}
stringData: {b: B, c: c}
`, false)
	obj := results[0].Result.Object
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	want := map[string]string{"a": "YQ==", "b": "Qg==", "c": "Yw=="}
	if _, found := obj.Object["stringData"]; found || !equalMaps(data, want) {
		t.Errorf("data %v (stringData left: %v), want %v and no stringData", data, found, want)
	}
}

// TestRunExpandsTheAdmittedWorkload: the expanded pod is the admitted
// Deployment's, with what mutators did to its template and the hash of
// that template.
func TestRunExpandsTheAdmittedWorkload(t *testing.T) {
	state := shop + `---
apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: deployment-pull}
spec:
  applyTo: [{groups: [apps], kinds: [Deployment], versions: [v1]}]
  match: {scope: Namespaced, kinds: [{apiGroups: [apps], kinds: [Deployment]}]}
  location: spec.template.spec.containers[name:*].imagePullPolicy
  parameters: {assign: {value: Always}}
`
	input := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`
	results := run(t, state, input, true)
	if len(results) != 2 {
		t.Fatalf("%d results, want the Deployment and its pod", len(results))
	}
	d := &appsv1.Deployment{}
	if err := fromUnstructured(results[0].Result.Object, d); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := fromUnstructured(results[1].Result.Object, pod); err != nil {
		t.Fatal(err)
	}
	if got := pod.Spec.Containers[0].ImagePullPolicy; got != corev1.PullAlways {
		t.Errorf("pod's imagePullPolicy %q, want Always from the admitted template", got)
	}
	hash := PodTemplateHash(&d.Spec.Template, nil)
	if got := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; got != hash {
		t.Errorf("pod-template-hash %q, want %q, the admitted template's", got, hash)
	}
	if want := "web-" + hash + "-"; pod.GenerateName != want {
		t.Errorf("generateName %q, want %q", pod.GenerateName, want)
	}
}

// TestRunExpandsAJob: a Job's pod carries the labels kube-apiserver's Job
// strategy gives its template (both job-name keys, a value the template
// sets kept) and the Job controller's tracking finalizer, so that presets
// and mutators selecting on the Job's name apply as on the server.
func TestRunExpandsAJob(t *testing.T) {
	state := shop + `---
apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata: {name: report-env}
spec:
  selector: {matchLabels: {job-name: report}}
  env: [{name: REPORT, value: "1"}]
`
	input := `
apiVersion: batch/v1
kind: Job
metadata: {name: report}
spec:
  template:
    metadata: {labels: {app: batch}}
    spec:
      restartPolicy: Never
      containers: [{name: report, image: nginx}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: named}
spec:
  template:
    metadata: {labels: {batch.kubernetes.io/job-name: given}}
    spec:
      restartPolicy: Never
      containers: [{name: report, image: nginx}]
`
	results := run(t, state, input, true)
	if len(results) != 4 {
		t.Fatalf("%d results, want each Job and its pod", len(results))
	}
	pod := &corev1.Pod{}
	if err := fromUnstructured(results[1].Result.Object, pod); err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"app": "batch", "job-name": "report", "batch.kubernetes.io/job-name": "report"}
	if !equalMaps(pod.Labels, wantLabels) || pod.GenerateName != "report-" {
		t.Errorf("pod labels %v, generateName %q; want %v, report-", pod.Labels, pod.GenerateName, wantLabels)
	}
	if !slices.Equal(pod.Finalizers, []string{"batch.kubernetes.io/job-tracking"}) {
		t.Errorf("pod finalizers %v, want the Job controller's", pod.Finalizers)
	}
	if env := pod.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "REPORT" {
		t.Errorf("pod env %v, want the preset selecting job-name", env)
	}
	given := &corev1.Pod{}
	if err := fromUnstructured(results[3].Result.Object, given); err != nil {
		t.Fatal(err)
	}
	if got := given.Labels["batch.kubernetes.io/job-name"]; got != "given" || given.Labels["job-name"] != "named" {
		t.Errorf("pod labels %v, want the template's batch.kubernetes.io/job-name kept and job-name named", given.Labels)
	}
}

// TestRunExpandsAStatefulSet: a StatefulSet's pod is its first replica,
// as its controller makes it (test/integration compares it with the
// controller's), and the set is printed with its claim templates' kind,
// as kube-apiserver's v1 form has them.
func TestRunExpandsAStatefulSet(t *testing.T) {
	input := `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db-headless
  ordinals: {start: 3}
  selector: {matchLabels: {app: db}}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres}]
      volumes: [{name: data, emptyDir: {}}, {name: scratch, emptyDir: {}}]
`
	results := run(t, shop, input, true)
	if len(results) != 2 {
		t.Fatalf("%d results, want the StatefulSet and its pod", len(results))
	}
	ss := &appsv1.StatefulSet{}
	if err := fromUnstructured(results[0].Result.Object, ss); err != nil {
		t.Fatal(err)
	}
	if claim := ss.Spec.VolumeClaimTemplates[0]; claim.APIVersion != "v1" || claim.Kind != "PersistentVolumeClaim" {
		t.Errorf("claim template apiVersion %q kind %q, want v1 PersistentVolumeClaim", claim.APIVersion, claim.Kind)
	}
	pod := &corev1.Pod{}
	if err := fromUnstructured(results[1].Result.Object, pod); err != nil {
		t.Fatal(err)
	}
	revision, err := statefulSetRevision(ss)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"app": "db", appsv1.StatefulSetPodNameLabel: "db-3", appsv1.PodIndexLabel: "3", appsv1.ControllerRevisionHashLabelKey: revision}
	if !equalMaps(pod.Labels, wantLabels) || !strings.HasPrefix(revision, "db-") {
		t.Errorf("pod labels %v, want %v (a revision named db-<hash>)", pod.Labels, wantLabels)
	}
	if pod.Name != "db-3" || pod.GenerateName != "db-" || pod.Spec.Hostname != "db-3" || pod.Spec.Subdomain != "db-headless" {
		t.Errorf("pod name %q generateName %q hostname %q subdomain %q, want db-3, db-, db-3, db-headless", pod.Name, pod.GenerateName, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	var volumes []string
	for _, v := range pod.Spec.Volumes {
		source := "emptyDir"
		if v.PersistentVolumeClaim != nil {
			source = v.PersistentVolumeClaim.ClaimName
		}
		volumes = append(volumes, v.Name+"="+source)
	}
	if want := []string{"data=data-db-3", "scratch=emptyDir"}; !slices.Equal(volumes, want) {
		t.Errorf("pod volumes %v, want %v: the claim's in place of the template's volume of its name", volumes, want)
	}
	// Another template is another revision.
	ss.Spec.Template.Labels["app"] = "db2"
	if other, _ := statefulSetRevision(ss); other == revision {
		t.Errorf("two templates have one revision %q", revision)
	}
}

// TestRunBadInput: what kubectl refuses to create is bad input.
func TestRunBadInput(t *testing.T) {
	for _, tc := range []struct{ name, input, want string }{
		{name: "no objects", input: "# nothing\n", want: "no objects"},
		{name: "a kind no cluster serves", input: "apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: web}\n", want: `no kind "Deploymnet"`},
		{name: "a version no cluster serves", input: "apiVersion: apps/v9\nkind: Deployment\nmetadata: {name: web}\n", want: `no kind "Deployment"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, map[string]string{"input.yaml": tc.input})
			_, err := Run(context.Background(), testOptions(t, Inputs{}), Config{Namespace: "shop"}, []string{filepath.Join(dir, "input.yaml")}, strings.NewReader(""))
			var inputErr *InputError
			if !errors.As(err, &inputErr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want an InputError containing %q", err, tc.want)
			}
		})
	}
}

func toString(v any) string {
	var b strings.Builder
	writeValue(&b, v)
	return b.String()
}

func writeValue(b *strings.Builder, v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			b.WriteString(k + "=")
			writeValue(b, e)
			b.WriteString(" ")
		}
	case []any:
		for _, e := range v {
			writeValue(b, e)
		}
	case string:
		b.WriteString(v)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRunTests: a passing and a failing case, each reported, and the
// count of failures returned.
func TestRunTests(t *testing.T) {
	dir := write(t, map[string]string{
		"state.yaml": shop + `---
apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata: {name: db, namespace: shop}
spec:
  selector: {matchLabels: {role: web}}
  env: [{name: DB, value: db}]
`,
		"pod.yaml": `
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {role: web}}
spec:
  containers: [{name: web, image: nginx}]
`,
		"cases.yaml": `
cases:
- name: the preset applies
  namespace: shop
  state: [state.yaml]
  input: [pod.yaml]
  expect:
    objects:
    - spec: {containers: [{env: [{name: DB, value: db}]}]}
- name: a wrong expectation
  namespace: shop
  state: [state.yaml]
  input: [pod.yaml]
  expect:
    objects:
    - spec: {containers: [{env: [{name: DB, value: other}]}]}
`,
	})
	var out strings.Builder
	failed, err := RunTests(context.Background(), testOptions(t, Inputs{}), []string{filepath.Join(dir, "cases.yaml")}, &out)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if failed != 1 || !strings.Contains(text, "ok   "+filepath.Join(dir, "cases.yaml")+": the preset applies") ||
		!strings.Contains(text, "FAIL "+filepath.Join(dir, "cases.yaml")+": a wrong expectation") || !strings.HasSuffix(text, "1 passed, 1 failed\n") {
		t.Errorf("failed %d, printed:\n%s\nwant the first case ok, the second failed", failed, text)
	}
}
