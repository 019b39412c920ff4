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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
	settingsv1alpha1client "github.com/admitkit/admitkit/generated/clientset/versioned/typed/settings/v1alpha1"
	"github.com/admitkit/admitkit/registry/settings/bootstrappolicy"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// settingsClientAs is a settings client acting as user, through the
// admin's right to impersonate.
func settingsClientAs(t *testing.T, h *host, user string) settingsclient.Interface {
	t.Helper()
	cfg := rest.CopyConfig(h.server.AdminConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return framework.SettingsClient(t, cfg)
}

func bindRole(t *testing.T, h *host, ns, user, clusterRole string) {
	t.Helper()
	_, err := framework.KubeClient(t, h.server.AdminConfig()).RbacV1().RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + clusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// The in-process server reconciled admitkit's ClusterRoles at start-up
// (the stock host has them from hack/manifests), and through
// the aggregated admin and view roles a namespace admin manages PodPresets
// while a viewer only reads them; neither touches ClusterPodPresets.
func TestPodPresetRBAC(t *testing.T) { onEachHost(t, testPodPresetRBAC) }

func testPodPresetRBAC(t *testing.T, h *host) {
	checkPresetRolesReconciled(t, h)
	ns := "rbac-presets"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	bindRole(t, h, ns, "preset-admin", "admin")
	bindRole(t, h, ns, "preset-viewer", "view")
	admin := settingsClientAs(t, h, "preset-admin").SettingsV1alpha1()
	viewer := settingsClientAs(t, h, "preset-viewer").SettingsV1alpha1()

	preset := podPreset("by-admin", map[string]string{"app": "web"}, corev1.EnvVar{Name: "FROM", Value: "admin"})
	waitUntilAllowed(t, "namespace admin cannot create a PodPreset", func(ctx context.Context) error {
		_, err := admin.PodPresets(ns).Create(ctx, preset, metav1.CreateOptions{})
		return err
	})
	// As an administrator would check it, through kube-controller-manager's
	// aggregation of the roles into admin and view.
	for user, want := range map[string]string{"preset-admin": "yes", "preset-viewer": "no"} {
		r := h.kubectl(t, "", "auth", "can-i", "create", "podpresets", "-n", ns, "--as="+user)
		if got := strings.TrimSpace(r.Stdout); got != want {
			t.Errorf("kubectl auth can-i create podpresets --as=%s: %q (%v), want %s", user, got, r.Err, want)
		}
	}
	var got *settingsv1alpha1.PodPreset
	waitUntilAllowed(t, "viewer cannot read the PodPreset", func(ctx context.Context) (err error) {
		got, err = viewer.PodPresets(ns).Get(ctx, preset.Name, metav1.GetOptions{})
		return err
	})
	if _, err := viewer.PodPresets(ns).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("viewer cannot list PodPresets: %v", err)
	}
	checkPresetWritesForbidden(t, admin, viewer, got)
	if err := admin.PodPresets(ns).Delete(context.Background(), preset.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("namespace admin cannot delete the PodPreset: %v", err)
	}
}

// checkPresetRolesReconciled: every admitkit ClusterRole exists with its
// aggregation labels, the in-process server's reconciled and the stock
// host's applied from hack/manifests.
func checkPresetRolesReconciled(t *testing.T, h *host) {
	t.Helper()
	for _, want := range bootstrappolicy.ClusterRoles() {
		got, err := framework.KubeClient(t, h.server.AdminConfig()).RbacV1().ClusterRoles().Get(context.Background(), want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ClusterRole %s not reconciled at start-up: %v", want.Name, err)
		}
		for k, v := range want.Labels {
			if got.Labels[k] != v {
				t.Errorf("ClusterRole %s labels %v, want %s=%s", want.Name, got.Labels, k, v)
			}
		}
	}
}

// waitUntilAllowed retries call while it is forbidden: the aggregation
// controller adds the rules to admin and view a moment after the roles
// appear.
func waitUntilAllowed(t *testing.T, what string, call func(context.Context) error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := call(ctx)
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// checkPresetWritesForbidden: the viewer writes no PodPreset, and neither
// the namespace admin nor the viewer creates a ClusterPodPreset.
func checkPresetWritesForbidden(t *testing.T, admin, viewer settingsv1alpha1client.SettingsV1alpha1Interface, got *settingsv1alpha1.PodPreset) {
	ctx := context.Background()
	cluster := &settingsv1alpha1.ClusterPodPreset{ObjectMeta: metav1.ObjectMeta{Name: "rbac-not-allowed"}}
	cases := []struct {
		name  string
		write func() error
	}{
		{name: "viewer creates a PodPreset", write: func() error {
			_, err := viewer.PodPresets(got.Namespace).Create(ctx, podPreset("by-viewer", nil, corev1.EnvVar{Name: "FROM", Value: "viewer"}), metav1.CreateOptions{})
			return err
		}},
		{name: "viewer updates the PodPreset", write: func() error {
			changed := got.DeepCopy()
			changed.Labels = map[string]string{"changed": "true"}
			_, err := viewer.PodPresets(got.Namespace).Update(ctx, changed, metav1.UpdateOptions{})
			return err
		}},
		{name: "viewer deletes the PodPreset", write: func() error {
			return viewer.PodPresets(got.Namespace).Delete(ctx, got.Name, metav1.DeleteOptions{})
		}},
		{name: "admin creates a ClusterPodPreset", write: func() error {
			_, err := admin.ClusterPodPresets().Create(ctx, cluster, metav1.CreateOptions{})
			return err
		}},
		{name: "viewer creates a ClusterPodPreset", write: func() error {
			_, err := viewer.ClusterPodPresets().Create(ctx, cluster, metav1.CreateOptions{})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.write(); !apierrors.IsForbidden(err) {
				t.Errorf("error = %v, want Forbidden", err)
			}
		})
	}
}
