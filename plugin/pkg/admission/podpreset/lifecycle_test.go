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
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsfake "github.com/admitkit/admitkit/generated/clientset/versioned/fake"
	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
	"github.com/admitkit/admitkit/plugin/initializer"
)

// Every goroutine the plugin starts (the Event broadcaster, and the preset
// watches when it has no settings informer factory) ends once the server's
// drained notification closes.
func TestDrainedNotificationStopsEverything(t *testing.T) {
	presets := []runtime.Object{
		podPreset("conflict", securityS2, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "abc", Value: "not value2"}}}),
	}
	cases := []struct {
		name string
		// wire hands the plugin its presets and returns what starts the
		// informers it does not start itself.
		wire func(p *Plugin, stop <-chan struct{}) (start func())
	}{
		{name: "settings informer factory", wire: func(p *Plugin, stop <-chan struct{}) func() {
			factory := settingsinformers.NewSharedInformerFactory(settingsfake.NewSimpleClientset(presets...), 0)
			initializer.New(factory).Initialize(p)
			return func() {
				factory.Start(stop)
				t.Cleanup(factory.Shutdown)
			}
		}},
		{name: "dynamic client", wire: func(p *Plugin, _ <-chan struct{}) func() {
			scheme := runtime.NewScheme()
			if err := settingsv1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			p.SetDynamicClient(dynamicfake.NewSimpleDynamicClient(scheme, presets...))
			return func() {}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			stop := make(chan struct{})
			kube := kubefake.NewClientset(namespace(testNamespace, nil))
			kubeInformers := informers.NewSharedInformerFactory(kube, 0)
			p := NewPlugin()
			startInformers := tc.wire(p, stop)
			p.SetDrainedNotification(stop)
			p.SetExternalKubeInformerFactory(kubeInformers)
			p.SetExternalKubeClientSet(kube)
			if err := admission.ValidateInitialization(p); err != nil {
				t.Fatal(err)
			}
			startInformers()
			kubeInformers.Start(stop)
			kubeInformers.WaitForCacheSync(stop)

			// A conflict sends an Event through the broadcaster.
			events := watchEvents(t, kube)
			if err := admitEventually(t, p); err != nil {
				t.Fatal(err)
			}
			<-events

			close(stop)
			kubeInformers.Shutdown()
			goleak.VerifyNone(t, before)
		})
	}
}

// admitEventually admits a test pod once the plugin's caches have synced.
func admitEventually(t *testing.T, p *Plugin) error {
	t.Helper()
	var err error
	pollErr := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		attrs := admission.NewAttributesRecord(testPod(), nil, corev1.SchemeGroupVersion.WithKind("Pod"), testNamespace, "",
			corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
		err = p.Admit(context.Background(), attrs, nil)
		return !apierrors.IsServiceUnavailable(err), nil
	})
	if pollErr != nil {
		return fmt.Errorf("caches not synced: %w", err)
	}
	return err
}

// watchEvents returns a channel that closes when the first Event is created.
func watchEvents(t *testing.T, kube *kubefake.Clientset) <-chan struct{} {
	t.Helper()
	w, err := kube.CoreV1().Events(testNamespace).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer w.Stop()
		<-w.ResultChan()
		close(done)
	}()
	return done
}

// The index keeps the spec its defaulter produced, top-level fields
// included, for both kinds, and leaves the informer's object alone.
func TestIndexKeepsTheDefaultedSpec(t *testing.T) {
	secretVolume := corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}
	defaultedSecretVolume := *secretVolume.DeepCopy()
	defaultedSecretVolume.Secret.DefaultMode = ptr.To[int32](0o644)
	spec := settingsv1alpha1.PodPresetSpec{Selector: everything, Volumes: []corev1.Volume{secretVolume}}
	added := corev1.EnvVar{Name: "ADDED_BY_A_TOP_LEVEL_DEFAULT", Value: "1"}

	// addEnv stands for a future defaulter that sets a field of the spec
	// itself rather than of an item of one of its lists.
	addEnv := func(obj runtime.Object) {
		defaultingScheme.Default(obj)
		switch pp := obj.(type) {
		case *settingsv1alpha1.PodPreset:
			pp.Spec.Env = append(pp.Spec.Env, added)
		case *settingsv1alpha1.ClusterPodPreset:
			pp.Spec.Env = append(pp.Spec.Env, added)
		}
	}
	cases := []struct {
		name     string
		defaults func(runtime.Object)
		obj      runtime.Object
		want     settingsv1alpha1.PodPresetSpec
	}{
		{
			name: "PodPreset, generated defaulters",
			obj:  podPreset("p", everything, *spec.DeepCopy()),
			want: settingsv1alpha1.PodPresetSpec{Selector: everything, Volumes: []corev1.Volume{defaultedSecretVolume}},
		},
		{
			name: "ClusterPodPreset, generated defaulters",
			obj:  clusterPodPreset("c", everything, everything, *spec.DeepCopy()),
			want: settingsv1alpha1.PodPresetSpec{Selector: everything, Volumes: []corev1.Volume{defaultedSecretVolume}},
		},
		{
			name:     "PodPreset, a top-level default",
			defaults: addEnv,
			obj:      podPreset("p", everything, *spec.DeepCopy()),
			want:     settingsv1alpha1.PodPresetSpec{Selector: everything, Volumes: []corev1.Volume{defaultedSecretVolume}, Env: []corev1.EnvVar{added}},
		},
		{
			name:     "ClusterPodPreset, a top-level default",
			defaults: addEnv,
			obj:      clusterPodPreset("c", everything, everything, *spec.DeepCopy()),
			want:     settingsv1alpha1.PodPresetSpec{Selector: everything, Volumes: []corev1.Volume{defaultedSecretVolume}, Env: []corev1.EnvVar{added}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newPresetIndex()
			if tc.defaults != nil {
				x.defaults = tc.defaults
			}
			original := tc.obj.DeepCopyObject()
			x.upsert(tc.obj)
			var got *compiledPreset
			for _, set := range x.sets {
				for _, c := range set.byName {
					got = c
				}
			}
			if got == nil {
				t.Fatal("preset not indexed")
			}
			if diff := cmp.Diff(tc.want, got.spec); diff != "" {
				t.Errorf("indexed spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(original, tc.obj); diff != "" {
				t.Errorf("informer's object changed (-before +after):\n%s", diff)
			}
		})
	}
}
