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

package initializer

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"

	"github.com/admitkit/admitkit/generated/clientset/versioned/fake"
	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
)

// wantsFactory is a plugin that needs the settings informers.
type wantsFactory struct {
	*admission.Handler
	factory settingsinformers.SharedInformerFactory
}

func (p *wantsFactory) SetSettingsInformerFactory(f settingsinformers.SharedInformerFactory) {
	p.factory = f
}

func (p *wantsFactory) ValidateInitialization() error {
	if p.factory == nil {
		return errors.New("missing settings informer factory")
	}
	return nil
}

// doesNotWant is a plugin without the interface.
type doesNotWant struct{ *admission.Handler }

func TestInitializeHandsTheFactory(t *testing.T) {
	factory := settingsinformers.NewSharedInformerFactory(fake.NewSimpleClientset(), time.Minute)
	plugin := &wantsFactory{Handler: admission.NewHandler(admission.Create)}
	New(factory).Initialize(plugin)
	if plugin.factory != factory {
		t.Fatal("plugin did not receive the factory")
	}
	if err := admission.ValidateInitialization(plugin); err != nil {
		t.Fatalf("ValidateInitialization after Initialize: %v", err)
	}
	// Plugins without the interface are left alone, and must not panic.
	New(factory).Initialize(&doesNotWant{Handler: admission.NewHandler(admission.Create)})
}

func TestValidateInitializationCatchesAMissingFactory(t *testing.T) {
	plugin := &wantsFactory{Handler: admission.NewHandler(admission.Create)}
	if err := admission.ValidateInitialization(plugin); err == nil {
		t.Fatal("ValidateInitialization passed for a plugin that never got its factory")
	}
}

// The factory handed over is usable: a lister from it sees what the client holds.
func TestFactoryFromInitializerServesListers(t *testing.T) {
	client := fake.NewSimpleClientset(&settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"}})
	factory := settingsinformers.NewSharedInformerFactory(client, 0)
	plugin := &wantsFactory{Handler: admission.NewHandler(admission.Create)}
	New(factory).Initialize(plugin)
	lister := plugin.factory.Settings().V1alpha1().PodPresets().Lister()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	for informer, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			t.Fatalf("informer %v did not sync", informer)
		}
	}
	presets, err := lister.PodPresets("default").List(labels.Everything())
	if err != nil || len(presets) != 1 || presets[0].Name != "hello" {
		t.Fatalf("List() = %v, %v; want the preset the client holds", presets, err)
	}
}
