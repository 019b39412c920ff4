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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitkit/admitkit/test/integration/framework"
)

// presetCount is the object-count quota resource of PodPresets.
const presetCount = corev1.ResourceName("count/podpresets.settings.k8s.io")

// TestObjectCountQuota caps a namespace at one PodPreset with a
// ResourceQuota: kube-controller-manager's quota controller counts the
// presets, kube-apiserver's ResourceQuota plugin refuses the second, and
// deleting the first frees its place.
func TestObjectCountQuota(t *testing.T) { onEachHost(t, testObjectCountQuota) }

func testObjectCountQuota(t *testing.T, h *host) {
	ctx := context.Background()
	client := framework.KubeClient(t, h.server.AdminConfig())
	presets := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1().PodPresets("kcm-quota")
	framework.CreateNamespace(t, h.server.AdminConfig(), "kcm-quota", nil)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "one-preset"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{presetCount: resource.MustParse("1")}},
	}
	if _, err := client.CoreV1().ResourceQuotas("kcm-quota").Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The plugin refuses every counted create until the controller has
	// written the quota's status.
	framework.Poll(t, "the quota controller to count the presets", func() bool {
		q, err := client.CoreV1().ResourceQuotas("kcm-quota").Get(ctx, quota.Name, metav1.GetOptions{})
		used, ok := q.Status.Used[presetCount]
		return err == nil && ok && used.IsZero()
	})
	if _, err := presets.Create(ctx, podPreset("first", map[string]string{"app": "web"}, corev1.EnvVar{Name: "A", Value: "1"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the first preset, within the quota: %v", err)
	}
	_, err := presets.Create(ctx, podPreset("second", map[string]string{"app": "web"}, corev1.EnvVar{Name: "A", Value: "1"}), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: one-preset") {
		t.Fatalf("the second preset: %v, want it forbidden by the quota one-preset", err)
	}
	if err := presets.Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, "the quota to free the deleted preset's place", func() bool {
		_, err := presets.Create(ctx, podPreset("second", map[string]string{"app": "web"}, corev1.EnvVar{Name: "A", Value: "1"}), metav1.CreateOptions{})
		return err == nil
	})
}
