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

package plugin

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
)

// yamlBlock finds the README's YAML code blocks.
var yamlBlock = regexp.MustCompile("(?ms)^```yaml\n(.*?)^```\n")

// TestREADMEAdmissionConfigurations reads every AdmissionConfiguration the
// README shows, as kube-apiserver reads --admission-control-config-file, and
// builds each plugin it configures through the registry: a configuration
// example a reader pastes must not stop the server.
func TestREADMEAdmissionConfigurations(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	plugins := admission.NewPlugins()
	RegisterAllAdmissionPlugins(plugins)
	examples := 0
	for i, m := range yamlBlock.FindAllSubmatch(readme, -1) {
		block := string(m[1])
		if !strings.Contains(block, "kind: AdmissionConfiguration") {
			continue
		}
		examples++
		file := filepath.Join(t.TempDir(), "admission.yaml")
		if err := os.WriteFile(file, m[1], 0o600); err != nil {
			t.Fatal(err)
		}
		provider, err := admission.ReadAdmissionConfiguration(plugins.Registered(), file, scheme)
		if err != nil {
			t.Errorf("YAML block %d: %v\n%s", i, err, block)
			continue
		}
		for _, name := range plugins.Registered() {
			if !strings.Contains(block, "- name: "+name+"\n") {
				continue
			}
			config, err := provider.ConfigFor(name)
			if err != nil {
				t.Errorf("YAML block %d, %s: %v", i, name, err)
				continue
			}
			// The factory ran and took the configuration when the initializer
			// sees the plugin; ValidateInitialization then fails for want of
			// clients, which a server has.
			built := false
			_, err = plugins.InitPlugin(name, config, initializerFunc(func(admission.Interface) { built = true }))
			if !built {
				t.Errorf("YAML block %d: %s refuses its configuration: %v\n%s", i, name, err, block)
			}
		}
	}
	if examples < 3 {
		t.Errorf("found %d AdmissionConfiguration examples in the README, want at least 3", examples)
	}
}

type initializerFunc func(admission.Interface)

func (f initializerFunc) Initialize(p admission.Interface) { f(p) }
