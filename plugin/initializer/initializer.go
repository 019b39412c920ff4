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

// Package initializer holds the admission plugin initializers a
// kube-apiserver build adds for admitkit's plugins, the way
// k8s.io/apiserver's own initializer hands plugins the Kubernetes informers
// and clients:
//
//   - New hands the settings.k8s.io informer factory to the plugins that
//     want it (WantsSettingsInformerFactory; PodPreset, which otherwise
//     watches presets through the loopback dynamic client);
//   - NewServerIdentity hands the server's identity to the plugins that
//     write status keyed by it (WantsServerIdentity; LocationMutator's
//     status.byPod entries), so that several apiservers sharing one etcd
//     each keep their own entry. Without it a plugin uses the identity
//     kube-apiserver gives itself by default, derived from the host name.
package initializer

import (
	"k8s.io/apiserver/pkg/admission"

	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
)

// WantsSettingsInformerFactory is implemented by plugins that read
// PodPresets or ClusterPodPresets through shared informers. Such a plugin
// should also implement admission.InitializationValidator and fail when the
// factory never came.
type WantsSettingsInformerFactory interface {
	SetSettingsInformerFactory(settingsinformers.SharedInformerFactory)
	admission.InitializationValidator
}

type pluginInitializer struct {
	factory settingsinformers.SharedInformerFactory
}

var _ admission.PluginInitializer = pluginInitializer{}

// New returns an initializer that gives factory to every plugin that wants
// it. The caller starts the factory once the plugins are initialized, so
// that the informers they asked for are the ones started.
func New(factory settingsinformers.SharedInformerFactory) admission.PluginInitializer {
	return pluginInitializer{factory: factory}
}

// Initialize hands the factory to plugin if it wants it.
func (i pluginInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(WantsSettingsInformerFactory); ok {
		wants.SetSettingsInformerFactory(i.factory)
	}
}
