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

package podpreset

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsfake "github.com/admitkit/admitkit/generated/clientset/versioned/fake"
	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
	"github.com/admitkit/admitkit/plugin/initializer"
)

func TestValidateInitialization(t *testing.T) {
	kube := kubefake.NewClientset()
	kubeInformers := informers.NewSharedInformerFactory(kube, 0)
	settingsInformers := settingsinformers.NewSharedInformerFactory(settingsfake.NewSimpleClientset(), 0)
	stop := make(chan struct{})
	defer close(stop)
	cases := []struct {
		name    string
		setup   func(*Plugin)
		wantErr string
	}{
		{name: "nothing", setup: func(*Plugin) {}, wantErr: "PodPreset requires a settings.k8s.io informer factory, or a dynamic client and a drained notification"},
		{name: "dynamic client without a stop channel", setup: func(p *Plugin) {
			p.SetDynamicClient(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()))
		}, wantErr: "PodPreset requires a drained notification"},
		{name: "informer factory without a stop channel", setup: func(p *Plugin) {
			p.SetSettingsInformerFactory(settingsInformers)
		}, wantErr: "PodPreset requires a drained notification"},
		{name: "no namespace lister", setup: func(p *Plugin) {
			p.SetSettingsInformerFactory(settingsInformers)
			p.SetDrainedNotification(stop)
		}, wantErr: "PodPreset requires a namespace lister"},
		{name: "no client", setup: func(p *Plugin) {
			p.SetSettingsInformerFactory(settingsInformers)
			p.SetDrainedNotification(stop)
			p.SetExternalKubeInformerFactory(kubeInformers)
		}, wantErr: "PodPreset requires a client"},
		{name: "complete", setup: func(p *Plugin) {
			initializer.New(settingsInformers).Initialize(p)
			p.SetDrainedNotification(stop)
			p.SetExternalKubeInformerFactory(kubeInformers)
			p.SetExternalKubeClientSet(kube)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPlugin()
			tc.setup(p)
			err := admission.ValidateInitialization(p)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// The plugin as a server wires it: listers from informer factories over
// clients, started after initialization, refusing creates until synced.
func TestThroughInformerFactories(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	settingsClient := settingsfake.NewSimpleClientset(
		podPreset("hello", securityS2, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "FROM_PRESET", Value: "1"}}}),
		clusterPodPreset("everywhere", everything, everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "FROM_CLUSTER", Value: "1"}}}),
	)
	kube := kubefake.NewClientset(namespace(testNamespace, nil))
	settingsInformers := settingsinformers.NewSharedInformerFactory(settingsClient, 0)
	kubeInformers := informers.NewSharedInformerFactory(kube, 0)

	p := NewPlugin()
	initializer.New(settingsInformers).Initialize(p)
	p.SetDrainedNotification(ctx.Done())
	p.SetExternalKubeInformerFactory(kubeInformers)
	p.SetExternalKubeClientSet(kube)
	if err := admission.ValidateInitialization(p); err != nil {
		t.Fatal(err)
	}
	settingsInformers.Start(ctx.Done())
	kubeInformers.Start(ctx.Done())
	assertAppliedEventually(t, p, "FROM_PRESET", "FROM_CLUSTER")
}

// Without a settings informer factory, as in a stock kube-apiserver build,
// the plugin watches presets through the dynamic client every server hands
// its plugins.
func TestThroughTheDynamicClient(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := settingsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dynamicClient := dynamicfake.NewSimpleDynamicClient(scheme,
		podPreset("hello", securityS2, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "FROM_PRESET", Value: "1"}}}),
		clusterPodPreset("everywhere", everything, everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "FROM_CLUSTER", Value: "1"}}}),
	)
	kube := kubefake.NewClientset(namespace(testNamespace, nil))
	kubeInformers := informers.NewSharedInformerFactory(kube, 0)
	stop := make(chan struct{})
	defer close(stop)

	p := NewPlugin()
	p.SetDynamicClient(dynamicClient)
	p.SetDrainedNotification(stop)
	p.SetExternalKubeInformerFactory(kubeInformers)
	p.SetExternalKubeClientSet(kube)
	if err := admission.ValidateInitialization(p); err != nil {
		t.Fatal(err)
	}
	kubeInformers.Start(stop)
	assertAppliedEventually(t, p, "FROM_PRESET", "FROM_CLUSTER")

	// A preset created later reaches the plugin through the watch.
	later := podPreset("later", everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "LATER", Value: "1"}}})
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(later)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: u}
	obj.SetAPIVersion("settings.k8s.io/v1alpha1")
	obj.SetKind("PodPreset")
	if _, err := dynamicClient.Resource(settingsv1alpha1.SchemeGroupVersion.WithResource("podpresets")).Namespace(testNamespace).
		Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	assertAppliedEventually(t, p, "FROM_PRESET", "LATER", "FROM_CLUSTER")
}

// assertAppliedEventually retries a create until the plugin's caches have
// caught up, then checks the env the presets added, in order. It admits
// once per try: the reinvocation tester would see the cache change between
// its two passes.
func assertAppliedEventually(t *testing.T, p *Plugin, wantEnv ...string) {
	t.Helper()
	var last []corev1.EnvVar
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		pod := testPod()
		attrs := admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), testNamespace, "",
			corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
		if err := p.Admit(context.Background(), attrs, nil); err != nil {
			return false, nil
		}
		last = pod.Spec.Containers[0].Env[2:]
		if len(last) != len(wantEnv) {
			return false, nil
		}
		for i, e := range last {
			if e.Name != wantEnv[i] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("presets not applied: injected env %v, want %v", last, wantEnv)
	}
}
