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
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/admitkit/admitkit/test/integration/framework"
)

// TestOfflineAsAUser admits hand-written manifests the way a user does:
// the built `admitkit admit` on files, and kubectl against a server
// holding the same state, created from the same files. A plain object is
// compared with what `kubectl create --dry-run=server` prints; a workload
// is created for real, and the pod its controller creates (the package's
// kube-controller-manager runs on both hosts) is compared with the pod of
// `admit --expand-pods`. Each case is one of offline's disagreements with
// the server that issue 44 listed, fixed since, or an ordinary use; each
// also checks its own point on what both agreed on, so that a case where
// neither side applied anything fails instead of agreeing.
//
// Both hosts take the cases: the in-process one is what offline claims to
// equal, and the webhook host is where users run admit beside a stock
// cluster. Both already run for the package, so a host costs its share of
// the cases' requests and admit runs, not a server start.
func TestOfflineAsAUser(t *testing.T) {
	admit, err := framework.BuildCommand("admitkit")
	if err != nil {
		t.Fatal(err)
	}
	onEachHost(t, func(t *testing.T, h *host) {
		o := newOfflineRun(t, h, admit)
		for _, c := range userCases {
			t.Run(c.name, func(t *testing.T) { o.checkUser(t, c) })
		}
		t.Run("state does not go through the mutators", o.checkStateAsStored)
	})
}

// userCase is one namespace's state and a file of inputs to admit in it.
type userCase struct {
	name string
	// namespace is the case's own, -n of admit and kubectl.
	namespace string
	// state are the YAML documents admit gets with --state, and the server
	// gets first: its mutators, then the rest, the case's Namespace
	// among them.
	state string
	// input is the YAML file admitted; every pod spec in it gets the
	// fields kube-apiserver's own plugins would write (runnable), which
	// offline does not run (README, Offline).
	input string
	// workload creates the input for real and compares each workload's
	// controller's pod with its pod from admit --expand-pods; otherwise the
	// input goes through a server-side dry run.
	workload bool
	// badInput is a file admit refuses with exit status 2 and kubectl
	// refuses too: each says its reason, which contains these texts.
	badInput               bool
	admitSays, kubectlSays string
	// want checks the case's point on the objects (in input order, each
	// workload followed by its pod), which both sides agreed on.
	want func(objs []map[string]any) error
}

var userCases = []userCase{{
	name:      "a namespace given without its metadata.name label",
	namespace: "user-metaname",
	// The namespace has no kubernetes.io/metadata.name label, as a user
	// writes it; kube-apiserver gives it one, and so must offline, or
	// neither the preset nor the mutator applies offline.
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-metaname
---
apiVersion: settings.k8s.io/v1alpha1
kind: ClusterPodPreset
metadata:
  name: user-metaname
spec:
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: user-metaname
  selector:
    matchLabels:
      app: web
  env:
  - name: CLUSTER_NAMESPACE
    value: user-metaname
---
apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata:
  name: user-metaname
spec:
  match:
    scope: Namespaced
    kinds:
    - apiGroups: [""]
      kinds: [Pod]
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: user-metaname
  location: metadata.labels.selected-by-name
  parameters:
    assign:
      value: "yes"
`,
	input: `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: app
    image: registry.example.com/web:1
`,
	want: func(objs []map[string]any) error {
		return errors.Join(
			wantString(objs[0], "user-metaname", "spec", "containers", "0", "env", "0", "value"),
			wantString(objs[0], "yes", "metadata", "labels", "selected-by-name"))
	},
}, {
	name:      "a Deployment whose template a mutator changes",
	namespace: "user-deploy",
	// The mutator changes the Deployment, not its pods: the controller's
	// pod has the change, and its pod-template-hash is the hash of the
	// mutated template.
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-deploy
---
apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata:
  name: user-deploy-pull-always
spec:
  applyTo:
  - groups: [apps]
    kinds: [Deployment]
    versions: [v1]
  match:
    scope: Namespaced
    namespaces: [user-deploy]
  location: spec.template.spec.containers[name:*].imagePullPolicy
  parameters:
    assign:
      value: Always
---
apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata:
  name: user-deploy-pod-label
spec:
  match:
    scope: Namespaced
    kinds:
    - apiGroups: [""]
      kinds: [Pod]
    namespaces: [user-deploy]
  location: metadata.labels.admitted-pod
  parameters:
    assign:
      value: "yes"
`,
	input: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
        image: registry.example.com/web:1
`,
	workload: true,
	want: func(objs []map[string]any) error {
		hash, _, _ := unstructured.NestedString(objs[1], "metadata", "labels", "pod-template-hash")
		return errors.Join(
			wantString(objs[0], "Always", "spec", "template", "spec", "containers", "0", "imagePullPolicy"),
			wantString(objs[1], "Always", "spec", "containers", "0", "imagePullPolicy"),
			wantString(objs[1], "yes", "metadata", "labels", "admitted-pod"),
			wantString(objs[1], "web-"+hash+"-", "metadata", "generateName"))
	},
}, {
	name:      "a Job's pod",
	namespace: "user-job",
	// The preset selects the label kube-apiserver gives a Job's template
	// after admission: the expanded pod must carry it as the server's does.
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-job
---
apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata:
  name: batch-env
spec:
  selector:
    matchLabels:
      job-name: report
  env:
  - name: BATCH
    value: "1"
`,
	input: `apiVersion: batch/v1
kind: Job
metadata:
  name: report
spec:
  template:
    metadata:
      labels:
        app: batch
    spec:
      restartPolicy: Never
      containers:
      - name: app
        image: registry.example.com/report:1
`,
	workload: true,
	want: func(objs []map[string]any) error {
		return wantString(objs[1], "1", "spec", "containers", "0", "env", "0", "value")
	},
}, {
	// The StatefulSet's pod is named and labelled after its first
	// ordinal, and labelled with the revision the controller makes of the
	// set, whose name is a hash of the set's template.
	name:      "a ReplicaSet's and a StatefulSet's pods",
	namespace: "user-sets",
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-sets
---
apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata:
  name: sets-env
spec:
  selector:
    matchLabels:
      tier: sets
  env:
  - name: SETS
    value: "1"
`,
	input: `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: cache
spec:
  replicas: 1
  selector:
    matchLabels:
      app: cache
  template:
    metadata:
      labels:
        app: cache
        tier: sets
    spec:
      containers:
      - name: app
        image: registry.example.com/cache:1
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  replicas: 1
  serviceName: db
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 1Gi
  selector:
    matchLabels:
      app: db
  template:
    metadata:
      labels:
        app: db
        tier: sets
    spec:
      containers:
      - name: app
        image: registry.example.com/db:1
`,
	workload: true,
	want: func(objs []map[string]any) error {
		return errors.Join(
			wantString(objs[1], "1", "spec", "containers", "0", "env", "0", "value"),
			wantString(objs[3], "1", "spec", "containers", "0", "env", "0", "value"),
			wantString(objs[3], "db-0", "metadata", "name"),
			wantString(objs[3], "db", "spec", "subdomain"),
			wantString(objs[3], "data-db-0", "spec", "volumes", "0", "persistentVolumeClaim", "claimName"))
	},
}, {
	name:      "requests defaulted after a mutator sets limits",
	namespace: "user-limits",
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-limits
---
apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata:
  name: user-limits
spec:
  applyTo:
  - groups: [""]
    kinds: [Pod]
    versions: [v1]
  match:
    scope: Namespaced
    namespaces: [user-limits]
  location: spec.containers[name:*].resources.limits
  parameters:
    assign:
      value:
        cpu: 500m
        memory: 64Mi
`,
	input: `apiVersion: v1
kind: Pod
metadata:
  name: limited
spec:
  containers:
  - name: app
    image: registry.example.com/app:1
`,
	want: func(objs []map[string]any) error {
		return errors.Join(
			wantString(objs[0], "500m", "spec", "containers", "0", "resources", "requests", "cpu"),
			wantString(objs[0], "64Mi", "spec", "containers", "0", "resources", "requests", "memory"))
	},
}, {
	name:      "a Secret's stringData",
	namespace: "user-secret",
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-secret
`,
	input: `apiVersion: v1
kind: Secret
metadata:
  name: credentials
stringData:
  password: hunter2
data:
  user: YWRtaW4=
`,
	want: func(objs []map[string]any) error {
		_, found, _ := unstructured.NestedFieldNoCopy(objs[0], "stringData")
		if found {
			return errors.New("stringData is kept")
		}
		return wantString(objs[0], "aHVudGVyMg==", "data", "password")
	},
}, {
	name:      "an unknown kind in a built-in group",
	namespace: "user-bad",
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-bad
`,
	input: `apiVersion: apps/v1
kind: Deploymnet
metadata:
  name: web
`,
	badInput:    true,
	admitSays:   `no kind "Deploymnet" is served in version "apps/v1"`,
	kubectlSays: `no matches for kind "Deploymnet" in version "apps/v1"`,
}, {
	name:      "an empty file",
	namespace: "user-empty",
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-empty
`,
	input:       "",
	badInput:    true,
	admitSays:   "no objects given",
	kubectlSays: "no objects passed to create",
}, {
	name:      "a preset's env and volumes",
	namespace: "user-preset",
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-preset
---
apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata:
  name: allow-database
spec:
  selector:
    matchLabels:
      role: frontend
  env:
  - name: DB_PORT
    value: "6379"
  volumeMounts:
  - mountPath: /cache
    name: cache-volume
  volumes:
  - name: cache-volume
    emptyDir: {}
`,
	input: `apiVersion: v1
kind: Pod
metadata:
  name: website
  labels:
    role: frontend
spec:
  containers:
  - name: website
    image: registry.example.com/website:1
`,
	want: func(objs []map[string]any) error {
		return errors.Join(
			wantString(objs[0], "6379", "spec", "containers", "0", "env", "0", "value"),
			wantString(objs[0], "/cache", "spec", "containers", "0", "volumeMounts", "0", "mountPath"),
			wantString(objs[0], "cache-volume", "spec", "volumes", "0", "name"))
	},
}, {
	name:      "an Assign of imagePullPolicy and an AssignMetadata label",
	namespace: "user-assign",
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-assign
---
apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata:
  name: user-assign-pull-always
spec:
  applyTo:
  - groups: [""]
    kinds: [Pod]
    versions: [v1]
  match:
    scope: Namespaced
    namespaces: [user-assign]
  location: spec.containers[name:*].imagePullPolicy
  parameters:
    assign:
      value: Always
---
apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata:
  name: user-assign-owner
spec:
  match:
    scope: Namespaced
    namespaces: [user-assign]
  location: metadata.labels.owner
  parameters:
    assign:
      value: platform
`,
	// The label mutator matches every kind: the ConfigMap gets it too.
	input: `apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  containers:
  - name: app
    image: registry.example.com/app:1
  - name: sidecar
    image: registry.example.com/sidecar:1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  key: value
`,
	want: func(objs []map[string]any) error {
		return errors.Join(
			wantString(objs[0], "Always", "spec", "containers", "0", "imagePullPolicy"),
			wantString(objs[0], "Always", "spec", "containers", "1", "imagePullPolicy"),
			wantString(objs[0], "platform", "metadata", "labels", "owner"),
			wantString(objs[1], "platform", "metadata", "labels", "owner"))
	},
}, {
	name:      "a ConfigMap no mutator touches",
	namespace: "user-plain",
	state: `apiVersion: v1
kind: Namespace
metadata:
  name: user-plain
`,
	input: `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    app: web
data:
  key: value
`,
	want: func(objs []map[string]any) error {
		if _, found, _ := unstructured.NestedFieldNoCopy(objs[0], "metadata", "annotations"); found {
			return errors.New("the ConfigMap has annotations, a plugin changed it")
		}
		return wantString(objs[0], "value", "data", "key")
	},
}}

// wantString is an error unless obj holds want at path (list indexes as
// numbers).
func wantString(obj map[string]any, want string, path ...string) error {
	var cur any = obj
	for _, p := range path {
		switch v := cur.(type) {
		case map[string]any:
			cur = v[p]
		case []any:
			i := 0
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(v) {
				return fmt.Errorf("%s: no element %s", strings.Join(path, "."), p)
			}
			cur = v[i]
		case nil:
			return fmt.Errorf("%s: no %s", strings.Join(path, "."), p)
		default:
			return fmt.Errorf("%s: %v is no map or list", strings.Join(path, "."), v)
		}
	}
	if cur != want {
		return fmt.Errorf("%s is %v, want %q", strings.Join(path, "."), cur, want)
	}
	return nil
}

// checkUser runs case c on the host and with admit, and compares.
func (o *offlineRun) checkUser(t *testing.T, c userCase) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.yaml")
	input := filepath.Join(dir, "input.yaml")
	writeFile(t, state, c.state)
	if c.badInput {
		writeFile(t, input, c.input)
	} else {
		writeFile(t, input, runnableManifests(t, c.input))
	}
	args := []string{"admit", "-o", "json", "-n", c.namespace, "--mutator-config", o.config, "--state", state}
	if c.workload {
		args = append(args, "--expand-pods")
	}
	admitted := o.startAdmitArgs(t, append(args, input)...)
	o.createState(t, c.namespace, c.state)
	offline := admitted.wait(t)

	if c.badInput {
		// kubectl refuses the file as the server would see it: an unknown
		// kind through discovery, nothing to create by itself.
		r := o.h.kubectl(t, "", "create", "--dry-run=server", "-n", c.namespace, "-f", input)
		if r.Err == nil || !strings.Contains(r.Stderr, c.kubectlSays) {
			t.Errorf("kubectl does not refuse the file with %q: %v\n%s", c.kubectlSays, r.Err, r.Stdout)
		}
		if offline.code != 2 || !strings.Contains(offline.stderr, c.admitSays) {
			t.Errorf("admit exits %d, want 2 (bad input) with %q, where kubectl says: %v\nadmit stderr: %s", offline.code, c.admitSays, r.Err, offline.stderr)
		}
		return
	}
	if offline.code != 0 {
		t.Fatalf("admit exits %d:\n%s", offline.code, offline.stderr)
	}
	var stored []map[string]any
	if c.workload {
		stored = o.createWorkloads(t, c.namespace, input)
	} else {
		stored = decodeObjects(t, o.h.mustKubectl(t, "", "create", "--dry-run=server", "-o", "json", "-n", c.namespace, "-f", input).Stdout)
	}
	compareObjects(t, stored, offline.objects)
	if c.want != nil && len(stored) == len(offline.objects) {
		if err := c.want(offline.objects); err != nil {
			t.Errorf("the case does not show what it is for: %v", err)
		}
	}
}

// compareObjects fails t unless admit printed the objects the server
// stored, in the same order, less what only a server writes.
func compareObjects(t *testing.T, stored, printed []map[string]any) {
	t.Helper()
	if len(stored) != len(printed) {
		t.Fatalf("the server stored %d objects, admit printed %d", len(stored), len(printed))
	}
	for i := range stored {
		server, offline := withoutServerFields(stored[i]), withoutServerFields(printed[i])
		switch server["kind"] {
		case "Pod":
			server, offline = withoutOwner(server), withoutOwner(offline)
		case "Job":
			server = withoutJobStrategy(server)
		}
		if diff := cmp.Diff(server, offline); diff != "" {
			t.Errorf("object %d: admit printed another object than the server stored (-server +admit):\n%s", i, diff)
		}
	}
}

// withoutOwner drops what of a controller's pod only the server knows:
// the owner reference, which holds the uid storage gave its owner (offline
// admits the pod before any owner is stored), and the labels a Job's
// strategy makes of its uid.
func withoutOwner(pod map[string]any) map[string]any {
	unstructured.RemoveNestedField(pod, "metadata", "ownerReferences")
	for _, key := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
		unstructured.RemoveNestedField(pod, "metadata", "labels", key)
	}
	return pod
}

// withoutJobStrategy drops what kube-apiserver's Job strategy adds to a
// Job after admission, which admit does not print (README, Offline): the
// selector and the labels of its template naming the Job and its uid (and
// the Job's own labels, which its defaults made the template's map).
func withoutJobStrategy(job map[string]any) map[string]any {
	unstructured.RemoveNestedField(job, "spec", "selector")
	for _, labels := range [][]string{{"metadata", "labels"}, {"spec", "template", "metadata", "labels"}} {
		for _, key := range []string{"job-name", "batch.kubernetes.io/job-name", "controller-uid", "batch.kubernetes.io/controller-uid"} {
			unstructured.RemoveNestedField(job, append(labels, key)...)
		}
	}
	return job
}

// createState applies the case's state on the host as a user would, with
// kubectl: its mutators first, each held by the host's plugin before the
// rest is created (a namespace created before a mutator is not mutated),
// then the rest; and waits until the plugins hold its presets. The
// cluster-scoped state is deleted when the test ends; namespaces stay, as
// the package's other tests leave theirs (apply, not create, takes one a
// rerun finds).
func (o *offlineRun) createState(t *testing.T, ns, state string) {
	t.Helper()
	var mutators, rest, clusterScoped []string
	for _, doc := range splitDocuments(t, state) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(u.GroupVersionKind().Group, ".gatekeeper.sh"):
			mutators = append(mutators, doc)
			clusterScoped = append(clusterScoped, doc)
		case u.GetKind() == "ClusterPodPreset":
			rest = append(rest, doc)
			clusterScoped = append(clusterScoped, doc)
		default:
			rest = append(rest, doc)
		}
	}
	if len(clusterScoped) > 0 {
		t.Cleanup(func() {
			o.h.kubectl(t, strings.Join(clusterScoped, "---\n"), "delete", "--ignore-not-found", "-f", "-")
		})
	}
	if len(mutators) > 0 {
		o.h.mustKubectl(t, strings.Join(mutators, "---\n"), "apply", "-f", "-")
		client := framework.DynamicClient(t, o.h.server.AdminConfig())
		for _, doc := range mutators {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatal(err)
			}
			o.waitForMutator(t, client.Resource(mutatorResources[u.GetKind()]), u.GetName())
		}
	}
	o.h.mustKubectl(t, strings.Join(rest, "---\n"), "apply", "-n", ns, "-f", "-")
	// Its default service account, which the pods name (runnable), and
	// the ServiceAccount plugin looks up.
	framework.CreateNamespace(t, o.h.server.AdminConfig(), ns, nil)
	o.waitForState(t, ns)
}

// createWorkloads creates the input file for real with kubectl and
// returns what the server stored, each workload followed by the first pod
// its controller created.
func (o *offlineRun) createWorkloads(t *testing.T, ns, input string) []map[string]any {
	t.Helper()
	created := decodeObjects(t, o.h.mustKubectl(t, "", "create", "-o", "json", "-n", ns, "-f", input).Stdout)
	pods := framework.KubeClient(t, o.h.server.AdminConfig()).CoreV1().Pods(ns)
	var out []map[string]any
	for _, obj := range created {
		out = append(out, obj)
		if _, isWorkload, _ := unstructured.NestedMap(obj, "spec", "template"); !isWorkload {
			continue
		}
		name, _, _ := unstructured.NestedString(obj, "metadata", "name")
		var pod *corev1.Pod
		framework.Poll(t, "the pod of "+name, func() bool {
			list, err := pods.List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false
			}
			i := slices.IndexFunc(list.Items, func(p corev1.Pod) bool { return ownedBy(&p, name) })
			if i < 0 {
				return false
			}
			pod = &list.Items[i]
			return true
		})
		// As the server stores it, in the manifest's form.
		pod.APIVersion, pod.Kind = "v1", "Pod"
		out = append(out, asJSON(t, pod))
	}
	return out
}

// ownedBy tells whether the pod's controller is the workload name or
// one of its ReplicaSets (<name>-<hash>).
func ownedBy(pod *corev1.Pod, name string) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && (owner.Name == name || owner.Kind == "ReplicaSet" && strings.HasPrefix(owner.Name, name+"-"))
}

// checkStateAsStored holds the README's choice on state (Offline: "State
// is taken as the cluster stores it ... it does not go through the
// plugins"): a namespace a mutator labels on the server, given to admit as
// written, lacks the label offline, so the ClusterPodPreset selecting it
// does not apply; given as `kubectl get namespace -o yaml` prints it, the
// pod is the server's.
func (o *offlineRun) checkStateAsStored(t *testing.T) {
	const ns = "user-state"
	c := userCase{namespace: ns, state: `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata:
  name: user-state-team
spec:
  match:
    scope: Cluster
    kinds:
    - apiGroups: [""]
      kinds: [Namespace]
    name: user-state
  location: metadata.labels.team
  parameters:
    assign:
      value: blue
---
apiVersion: v1
kind: Namespace
metadata:
  name: user-state
---
apiVersion: settings.k8s.io/v1alpha1
kind: ClusterPodPreset
metadata:
  name: user-state-team
spec:
  namespaceSelector:
    matchLabels:
      team: blue
  selector:
    matchLabels:
      app: web
  env:
  - name: TEAM
    value: blue
`, input: `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: app
    image: registry.example.com/web:1
`}
	dir := t.TempDir()
	asWritten, asStored, input := filepath.Join(dir, "as-written.yaml"), filepath.Join(dir, "as-stored.yaml"), filepath.Join(dir, "input.yaml")
	writeFile(t, asWritten, c.state)
	writeFile(t, input, runnableManifests(t, c.input))
	o.createState(t, ns, c.state)

	stored := decodeObjects(t, o.h.mustKubectl(t, "", "create", "--dry-run=server", "-o", "json", "-n", ns, "-f", input).Stdout)
	if err := wantString(stored[0], "blue", "spec", "containers", "0", "env", "0", "value"); err != nil {
		t.Fatalf("the server's pod: %v; the mutator did not label the namespace, or the preset did not apply", err)
	}
	// The namespace as the server stores it replaces the one written.
	namespace := o.h.mustKubectl(t, "", "get", "namespace", ns, "-o", "yaml").Stdout
	const writtenNamespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: user-state\n"
	if !strings.Contains(c.state, writtenNamespace) {
		t.Fatalf("the state has no namespace written as %q", writtenNamespace)
	}
	writeFile(t, asStored, strings.Replace(c.state, writtenNamespace, namespace, 1))

	args := []string{"admit", "-o", "json", "-n", ns, "--mutator-config", o.config, input, "--state"}
	written := o.startAdmitArgs(t, append(args, asWritten)...).wait(t)
	if written.code != 0 {
		t.Fatalf("admit exits %d:\n%s", written.code, written.stderr)
	}
	if wantString(written.objects[0], "blue", "spec", "containers", "0", "env", "0", "value") == nil {
		t.Errorf("a namespace given as written got the label its mutator gives it on the server, and the preset applied: state went through the mutators, which the README says it does not")
	}
	asGot := o.startAdmitArgs(t, append(args, asStored)...).wait(t)
	if asGot.code != 0 {
		t.Fatalf("admit exits %d:\n%s", asGot.code, asGot.stderr)
	}
	compareObjects(t, stored, asGot.objects)
}

// runnableManifests is the YAML documents of manifests with runnable's
// fields in every pod spec (a pod's, or a workload's template), so that the
// server's own plugins leave the pods as offline does.
func runnableManifests(t *testing.T, manifests string) string {
	t.Helper()
	var out []string
	for _, doc := range splitDocuments(t, manifests) {
		u := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &u); err != nil {
			t.Fatal(err)
		}
		path := []string{"spec", "template", "spec"}
		if u["kind"] == "Pod" {
			path = []string{"spec"}
		}
		if spec, found, err := unstructured.NestedMap(u, path...); err == nil && found {
			pod := &corev1.Pod{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"spec": spec}, pod); err != nil {
				t.Fatal(err)
			}
			runnable(pod)
			converted, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
			if err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(u, converted["spec"], path...); err != nil {
				t.Fatal(err)
			}
		}
		data, err := yaml.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(data))
	}
	return strings.Join(out, "---\n")
}

// splitDocuments splits a YAML stream into its non-empty documents.
func splitDocuments(t *testing.T, stream string) []string {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	var docs []string
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, string(doc))
		}
	}
}

// decodeObjects decodes what kubectl printed with -o json: one object per
// object created, each as JSON decodes it.
func decodeObjects(t *testing.T, out string) []map[string]any {
	t.Helper()
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var objs []map[string]any
	for {
		var obj map[string]any
		err := d.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("kubectl's output: %v\n%s", err, out)
		}
		if obj["kind"] == "List" {
			items, _ := obj["items"].([]any)
			for _, item := range items {
				objs = append(objs, item.(map[string]any))
			}
			continue
		}
		objs = append(objs, obj)
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
