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
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsapply "github.com/admitkit/admitkit/generated/applyconfiguration/settings/v1alpha1"
	settingsv1alpha1client "github.com/admitkit/admitkit/generated/clientset/versioned/typed/settings/v1alpha1"
	"github.com/admitkit/admitkit/test/integration/framework"
)

func podPreset(name string, selector map[string]string, env ...corev1.EnvVar) *settingsv1alpha1.PodPreset {
	return &settingsv1alpha1.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: settingsv1alpha1.PodPresetSpec{
			Selector: metav1.LabelSelector{MatchLabels: selector},
			Env:      env,
		},
	}
}

func TestDiscovery(t *testing.T) { onEachHost(t, testDiscovery) }

func testDiscovery(t *testing.T, h *host) {
	disc := framework.KubeClient(t, h.server.AdminConfig()).Discovery()
	groups, err := disc.ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range groups.Groups {
		if g.Name == "settings.k8s.io" {
			found = true
			if g.PreferredVersion.Version != "v1alpha1" {
				t.Errorf("settings.k8s.io preferred version = %q, want v1alpha1", g.PreferredVersion.Version)
			}
		}
	}
	if !found {
		t.Fatal("discovery does not list settings.k8s.io")
	}
	resources, err := disc.ServerResourcesForGroupVersion("settings.k8s.io/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		namespaced bool
		shortName  string
		kind       string
	}{
		"podpresets":        {true, "pp", "PodPreset"},
		"clusterpodpresets": {false, "cpp", "ClusterPodPreset"},
	}
	for _, r := range resources.APIResources {
		w, ok := want[r.Name]
		if !ok {
			t.Errorf("unexpected resource %q", r.Name)
			continue
		}
		delete(want, r.Name)
		if r.Namespaced != w.namespaced || r.Kind != w.kind || !slices.Equal(r.ShortNames, []string{w.shortName}) {
			t.Errorf("%s: namespaced=%v kind=%s shortNames=%v, want %v %s [%s]", r.Name, r.Namespaced, r.Kind, r.ShortNames, w.namespaced, w.kind, w.shortName)
		}
		for _, verb := range []string{"create", "get", "list", "watch", "update", "patch", "delete", "deletecollection"} {
			if !slices.Contains(r.Verbs, verb) {
				t.Errorf("%s does not allow %s: %v", r.Name, verb, r.Verbs)
			}
		}
	}
	for name := range want {
		t.Errorf("discovery lacks settings.k8s.io/v1alpha1 %s", name)
	}

	// kubectl api-resources goes through the aggregated discovery document.
	out := h.mustKubectl(t, "", "api-resources", "--api-group=settings.k8s.io", "-o", "name").Stdout
	for _, name := range []string{"podpresets.settings.k8s.io", "clusterpodpresets.settings.k8s.io"} {
		if !strings.Contains(out, name) {
			t.Errorf("kubectl api-resources lacks %s:\n%s", name, out)
		}
	}
}

func TestPodPresetCRUD(t *testing.T) { onEachHost(t, testPodPresetCRUD) }

func testPodPresetCRUD(t *testing.T, h *host) {
	ctx := context.Background()
	ns := "crud"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	presets := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1().PodPresets(ns)
	createWatchedPreset(t, presets)
	checkPresetUpdates(t, presets)

	// Validation names the field.
	bad := podPreset("bad", nil, corev1.EnvVar{Name: "", Value: "x"})
	_, err := presets.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.env[0].name") {
		t.Errorf("creating a preset with an unnamed env var: %v, want Invalid naming spec.env[0].name", err)
	}

	if err := presets.Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := presets.Get(ctx, "db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

// createWatchedPreset creates the db preset and sees it on a watch.
func createWatchedPreset(t *testing.T, presets settingsv1alpha1client.PodPresetInterface) {
	t.Helper()
	ctx := context.Background()
	w, err := presets.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	created, err := presets.Create(ctx, podPreset("db", map[string]string{"role": "db"}, corev1.EnvVar{Name: "DB_HOST", Value: "db.local"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 1 || created.UID == "" {
		t.Errorf("created preset generation=%d uid=%q, want 1 and a uid", created.Generation, created.UID)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*settingsv1alpha1.PodPreset).Name != "db" {
			t.Errorf("first watch event %s %T, want ADDED db", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Error("no watch event for the created preset")
	}
}

// checkPresetUpdates reads the db preset back and changes it: a spec
// update moves the generation, a metadata-only one does not, a merge
// patch replaces the env list, and a label selector lists it.
func checkPresetUpdates(t *testing.T, presets settingsv1alpha1client.PodPresetInterface) {
	t.Helper()
	ctx := context.Background()
	got, err := presets.Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Env) != 1 || got.Spec.Env[0].Value != "db.local" {
		t.Errorf("read back env %v", got.Spec.Env)
	}

	got.Spec.Env[0].Value = "db.remote"
	updated, err := presets.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 2 {
		t.Errorf("generation after a spec update = %d, want 2", updated.Generation)
	}
	updated.Labels = map[string]string{"team": "a"}
	relabelled, err := presets.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if relabelled.Generation != 2 {
		t.Errorf("generation after a metadata-only update = %d, want 2", relabelled.Generation)
	}

	patched, err := presets.Patch(ctx, "db", types.MergePatchType, []byte(`{"spec":{"env":[{"name":"DB_PORT","value":"5432"}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(patched.Spec.Env) != 1 || patched.Spec.Env[0].Name != "DB_PORT" {
		t.Errorf("env after a merge patch = %v", patched.Spec.Env)
	}

	list, err := presets.List(ctx, metav1.ListOptions{LabelSelector: "team=a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("listed %d presets with team=a, want 1", len(list.Items))
	}
}

func TestClusterPodPresetCRUD(t *testing.T) { onEachHost(t, testClusterPodPresetCRUD) }

func testClusterPodPresetCRUD(t *testing.T, h *host) {
	ctx := context.Background()
	presets := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1().ClusterPodPresets()
	cpp := &settingsv1alpha1.ClusterPodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "proxy-crud"},
		Spec: settingsv1alpha1.ClusterPodPresetSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"proxy": "on"}},
			PodPresetSpec: settingsv1alpha1.PodPresetSpec{
				Env: []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "http://proxy:3128"}},
			},
		},
	}
	created, err := presets.Create(ctx, cpp, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Namespace != "" {
		t.Errorf("a ClusterPodPreset got namespace %q", created.Namespace)
	}
	created.Spec.Env = append(created.Spec.Env, corev1.EnvVar{Name: "NO_PROXY", Value: "localhost"})
	updated, err := presets.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 2 || len(updated.Spec.Env) != 2 {
		t.Errorf("after update: generation %d env %v", updated.Generation, updated.Spec.Env)
	}
	list, err := presets.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list.Items, func(p settingsv1alpha1.ClusterPodPreset) bool { return p.Name == "proxy-crud" }) {
		t.Error("list lacks proxy-crud")
	}
	if err := presets.Delete(ctx, "proxy-crud", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestApplyConfigurations uses the generated apply configurations: the
// server needs our OpenAPI models (with their group-version-kind) for
// server-side apply, and manages the fields per manager.
func TestApplyConfigurations(t *testing.T) { onEachHost(t, testApplyConfigurations) }

func testApplyConfigurations(t *testing.T, h *host) {
	ctx := context.Background()
	ns := "ssa-client"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	presets := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1().PodPresets(ns)

	cfg := settingsapply.PodPreset("web", ns).WithSpec(settingsapply.PodPresetSpec().
		WithEnv(corev1EnvApply("A", "1")))
	applied, err := presets.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "first", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied.ManagedFields) != 1 || applied.ManagedFields[0].Manager != "first" || applied.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managed fields %+v, want one Apply entry by first", applied.ManagedFields)
	}

	// A second manager adds its own env var; the list merges by name.
	second := settingsapply.PodPreset("web", ns).WithSpec(settingsapply.PodPresetSpec().WithEnv(corev1EnvApply("B", "2")))
	applied, err = presets.Apply(ctx, second, metav1.ApplyOptions{FieldManager: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if names := envNames(applied.Spec.Env); !slices.Equal(names, []string{"A", "B"}) {
		t.Errorf("env after two managers applied = %v, want [A B]", names)
	}

	// The second manager changing the first's value conflicts.
	conflicting := settingsapply.PodPreset("web", ns).WithSpec(settingsapply.PodPresetSpec().WithEnv(corev1EnvApply("A", "changed")))
	_, err = presets.Apply(ctx, conflicting, metav1.ApplyOptions{FieldManager: "second"})
	if !apierrors.IsConflict(err) {
		t.Errorf("applying another manager's field: %v, want a conflict", err)
	}
}

func envNames(env []corev1.EnvVar) []string {
	var names []string
	for _, e := range env {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return names
}

// TestStoredInEtcd reads the stored object from etcd: JSON at
// settings.k8s.io/v1alpha1 (our types have no protobuf).
func TestStoredInEtcd(t *testing.T) {
	ctx := context.Background()
	ns := "etcd"
	framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	if _, err := framework.SettingsClient(t, server.AdminConfig()).SettingsV1alpha1().PodPresets(ns).Create(ctx, podPreset("stored", map[string]string{"a": "b"}, corev1.EnvVar{Name: "X", Value: "1"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	url, err := server.EtcdURL()
	if err != nil {
		t.Fatal(err)
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var key string
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); strings.Contains(k, "podpresets/"+ns+"/stored") {
			key = k
		}
	}
	if key == "" {
		t.Fatal("no etcd key for podpreset etcd/stored under /registry/")
	}
	resp, err = client.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var stored struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Env []corev1.EnvVar `json:"env"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil {
		t.Fatalf("etcd value at %s is not JSON: %v\n%q", key, err, resp.Kvs[0].Value)
	}
	if stored.APIVersion != "settings.k8s.io/v1alpha1" || stored.Kind != "PodPreset" || len(stored.Spec.Env) != 1 {
		t.Errorf("stored at %s: %s %s env %v, want settings.k8s.io/v1alpha1 PodPreset with one env var", key, stored.APIVersion, stored.Kind, stored.Spec.Env)
	}
	t.Logf("stored at %s", key)
}

func corev1EnvApply(name, value string) *corev1apply.EnvVarApplyConfiguration {
	return corev1apply.EnvVar().WithName(name).WithValue(value)
}
