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

package framework

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
)

// KubeClient is the Kubernetes clientset for cfg; the test fails if it
// cannot be built.
func KubeClient(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// DynamicClient is the dynamic client for cfg.
func DynamicClient(t testing.TB, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// SettingsClient is the settings.k8s.io clientset for cfg.
func SettingsClient(t testing.TB, cfg *rest.Config) settingsclient.Interface {
	t.Helper()
	c, err := settingsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// CreateNamespace creates the namespace name, or reads it when it exists,
// with its default service account, which the ServiceAccount admission
// plugin requires before any pod: kube-controller-manager creates it only
// a moment after the namespace, and the ha package runs none.
func CreateNamespace(t testing.TB, cfg *rest.Config, name string, labels map[string]string) *corev1.Namespace {
	t.Helper()
	ctx := context.Background()
	client := KubeClient(t, cfg)
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		ns, err = client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	_, err = client.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating service account %s/default: %v", name, err)
	}
	return ns
}

// Poll checks cond every 20ms until it holds, and fails the test naming
// what it waited for after a minute.
func Poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}
