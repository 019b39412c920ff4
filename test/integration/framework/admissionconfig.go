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

import "strings"

// PluginConfiguration is one plugin's entry of an AdmissionConfiguration:
// its name, the apiVersion of its Configuration, and the Configuration's
// other fields as YAML, each line indented by four spaces.
type PluginConfiguration struct {
	Name       string
	APIVersion string
	Fields     string
}

// NodeRestrictionConfiguration is NodeRestriction's entry with fields.
func NodeRestrictionConfiguration(fields string) PluginConfiguration {
	return PluginConfiguration{Name: "NodeRestriction", APIVersion: "noderestriction.admission.admitkit.io/v1alpha1", Fields: fields}
}

// LocationMutatorConfiguration is LocationMutator's entry with fields.
func LocationMutatorConfiguration(fields string) PluginConfiguration {
	return PluginConfiguration{Name: "LocationMutator", APIVersion: "locationmutator.admission.admitkit.io/v1alpha1", Fields: fields}
}

// AdmissionConfiguration is the --admission-control-config-file document
// configuring plugins, each with a Configuration of kind Configuration.
func AdmissionConfiguration(plugins ...PluginConfiguration) string {
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n")
	for _, p := range plugins {
		b.WriteString("- name: " + p.Name + "\n  configuration:\n    apiVersion: " + p.APIVersion + "\n    kind: Configuration\n")
		b.WriteString(p.Fields)
	}
	return b.String()
}
