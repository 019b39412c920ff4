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
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/compatibility"
	kcm "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// controllersWithoutKubelets are kube-controller-manager's controllers that
// act on what kubelets report. No kubelet runs here: they would taint the
// tests' Nodes unreachable, evict and delete the pods bound to them, and
// race the node identities' own Node updates.
var controllersWithoutKubelets = []string{
	names.NodeLifecycleController,
	names.TaintEvictionController,
	names.DeviceTaintEvictionController,
	names.PodGarbageCollectorController,
	names.TTLController,
}

// controllerManagerFlags are the flags of each host's kube-controller-manager
// after --kubeconfig: no leader election and no serving (one per host, in
// a test), and every controller it enables by default except
// controllersWithoutKubelets, each under its own service account, as
// kubeadm sets it up, so that RBAC is exercised as in a cluster.
func controllerManagerFlags() []string {
	return []string{
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=true",
		"--controllers=*,-" + strings.Join(controllersWithoutKubelets, ",-"),
	}
}

// startControllerManager runs Kubernetes' own kube-controller-manager in
// this process against srv, the in-process host, as every cluster runs one
// beside its apiservers, with controllerManagerFlags; the stock host runs
// it as a process (startStockHost). It runs until ctx ends; the returned
// channel yields its exit.
func startControllerManager(ctx context.Context, srv *framework.Server) (<-chan error, error) {
	kubeconfig, err := srv.Kubeconfig("kube-controller-manager", framework.AdminToken)
	if err != nil {
		return nil, err
	}
	opts, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	// The apiserver in this process has set the process-wide registry of
	// versions and feature gates; the controller manager gets a registry of
	// its own with the same defaults, so that setting it changes nothing
	// the apiserver reads.
	registry := compatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(compatibility.DefaultKubeComponent, utilcompatibility.DefaultBuildEffectiveVersion(), utilfeature.DefaultMutableFeatureGate.DeepCopy()); err != nil {
		return nil, err
	}
	opts.ComponentGlobalsRegistry = registry

	known, offByDefault, aliases := kcm.KnownControllers(), kcm.ControllersDisabledByDefault(), kcm.ControllerAliases()
	flagSets := opts.Flags(known, offByDefault, aliases)
	flags := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, fs := range flagSets.FlagSets {
		flags.AddFlagSet(fs)
	}
	if err := flags.Parse(append([]string{"--kubeconfig=" + kubeconfig}, controllerManagerFlags()...)); err != nil {
		return nil, fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	opts.ParsedFlags = &flagSets
	if err := registry.Set(); err != nil {
		return nil, fmt.Errorf("kube-controller-manager feature gates: %w", err)
	}
	config, err := opts.Config(ctx, known, offByDefault, aliases)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager configuration: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- kcm.Run(ctx, config.Complete()) }()
	return done, nil
}

// TestNamespaceDeletion deletes a namespace holding PodPresets and pods a
// ClusterPodPreset was applied to: kube-controller-manager's namespace
// controller, which lists and deletes every namespaced resource through a
// protobuf-first metadata client, empties it and removes it.
func TestNamespaceDeletion(t *testing.T) { onEachHost(t, testNamespaceDeletion) }

func testNamespaceDeletion(t *testing.T, h *host) {
	ctx := context.Background()
	client := framework.KubeClient(t, h.server.AdminConfig())
	settings := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1()
	const ns = "kcm-delete-me"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, map[string]string{"kcm-test": "delete"})
	if _, err := settings.PodPresets(ns).Create(ctx, podPreset("local", map[string]string{"app": "web"}, corev1.EnvVar{Name: "LOCAL", Value: "1"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cpp := &settingsv1alpha1.ClusterPodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "kcm-delete-me"},
		Spec: settingsv1alpha1.ClusterPodPresetSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kcm-test": "delete"}},
			PodPresetSpec:     settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "CLUSTER", Value: "1"}}},
		},
	}
	if _, err := settings.ClusterPodPresets().Create(ctx, cpp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = settings.ClusterPodPresets().Delete(ctx, cpp.Name, metav1.DeleteOptions{}) })
	waitForPresets(t, h, ns, cpp.Name)
	pod, err := client.CoreV1().Pods(ns).Create(ctx, framework.Pod("web", map[string]string{"app": "web"}, "app"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if env := envOf(pod.Spec.Containers[0]); env["LOCAL"] != "1" || env["CLUSTER"] != "1" {
		t.Fatalf("pod env %v, want both presets", env)
	}

	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		namespace, getErr := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		t.Fatalf("namespace %s was not deleted: %v; its status: %+v (%v)", ns, err, namespace.Status, getErr)
	}
}

// TestGarbageCollection gives a PodPreset and a ClusterPodPreset owners
// and deletes the owners: kube-controller-manager's garbage collector,
// which finds settings.k8s.io through discovery and watches it, deletes
// both presets.
func TestGarbageCollection(t *testing.T) { onEachHost(t, testGarbageCollection) }

func testGarbageCollection(t *testing.T, h *host) {
	ctx := context.Background()
	client := framework.KubeClient(t, h.server.AdminConfig())
	settings := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1()
	const ns = "kcm-gc"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	owner, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterOwner, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kcm-gc-owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pp := podPreset("owned", map[string]string{"app": "web"}, corev1.EnvVar{Name: "OWNED", Value: "1"})
	pp.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
	if _, err := settings.PodPresets(ns).Create(ctx, pp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cpp := &settingsv1alpha1.ClusterPodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "kcm-gc-owned", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: clusterOwner.Name, UID: clusterOwner.UID},
		}},
		Spec: settingsv1alpha1.ClusterPodPresetSpec{PodPresetSpec: settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "OWNED", Value: "1"}}}},
	}
	if _, err := settings.ClusterPodPresets().Create(ctx, cpp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.RbacV1().ClusterRoles().Delete(ctx, clusterOwner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := settings.PodPresets(ns).Get(ctx, pp.Name, metav1.GetOptions{})
		_, clusterErr := settings.ClusterPodPresets().Get(ctx, cpp.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(clusterErr), nil
	})
	if err != nil {
		t.Fatalf("the garbage collector left a preset whose owner is gone: %v", err)
	}
}
