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

// Package admission does for settings.k8s.io served as CustomResourceDefinitions
// (registry/settings/crds) what registry/settings does for it in-process, as
// two admission plugins the webhook host serves: SettingsDefaults gives a
// preset the defaults decoding gives it in-process, and SettingsValidation
// refuses what the registry's strategies refuse, with the same 422 Invalid,
// field paths and messages, and returns the same warnings on updates that
// drop fields. Both call the registry's own strategies, so a rule has one
// copy for both hosts.
package admission

import (
	"io"

	genericadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/apis/settings/validation"
)

const (
	// DefaultsPluginName is the mutating plugin's name.
	DefaultsPluginName = "SettingsDefaults"
	// ValidationPluginName is the validating plugin's name.
	ValidationPluginName = "SettingsValidation"
)

// Register registers both plugins. podFields checks the fields a preset puts
// into pods; a server built with kube-apiserver's pod validation passes the
// validator its in-process registry gets, and nil means admitkit's built-in
// rules (validation.BuiltinPodFields), which the plugin logs at start-up.
func Register(plugins *genericadmission.Plugins, podFields validation.PodFieldsValidator) {
	plugins.Register(DefaultsPluginName, func(io.Reader) (genericadmission.Interface, error) {
		return NewDefaults(), nil
	})
	plugins.Register(ValidationPluginName, func(io.Reader) (genericadmission.Interface, error) {
		if podFields == nil {
			klog.InfoS("SettingsValidation checks presets' pod fields with admitkit's built-in rules, not kube-apiserver's pod validation")
		}
		return NewValidation(podFields), nil
	})
}
