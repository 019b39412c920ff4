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

package webhook_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin"
	"github.com/admitkit/admitkit/plugin/webhook"
)

// TestNewRefuses: what would stop kube-apiserver's start-up stops the
// host's, with the plugin and the field named.
func TestNewRefuses(t *testing.T) {
	badMutator := strings.Replace(admissionConfig, `location: metadata.labels.owner`, `location: "metadata.labels[owner"`, 1)
	for _, tc := range []struct {
		name, config string
		enabled      []string
		want         []string
	}{
		{"bad mutator", badMutator, []string{"LocationMutator"}, []string{`"LocationMutator"`, "metadata.labels[owner"}},
		{"unknown plugin", admissionConfig, []string{"NoSuchPlugin"}, []string{"unknown admission plugin: NoSuchPlugin"}},
		{"plugin twice", admissionConfig, []string{"NodeRestriction", "NodeRestriction"}, []string{`"NodeRestriction" is enabled twice`}},
		{"not an AdmissionConfiguration", "kind: Pod\napiVersion: v1\n", []string{"NodeRestriction"}, []string{"admission.yaml"}},
		{"missing initializers", admissionConfig, []string{"PodPreset"}, []string{`"PodPreset"`, "requires"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "admission.yaml")
			if err := os.WriteFile(file, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			plugins := admission.NewPlugins()
			plugin.RegisterAllAdmissionPlugins(plugins)
			_, err := webhook.New(webhook.Options{Plugins: plugins, Enabled: tc.enabled, ConfigFile: file, Scheme: webhook.NewScheme()})
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
