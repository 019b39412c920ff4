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
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
)

// yamlBlock finds a README's YAML code blocks.
var yamlBlock = regexp.MustCompile("(?ms)^```yaml\n(.*?)^```\n")

// readmes are the repository's README.md files: the front page and the one
// of each directory it links (each plugin, the hosts, operations).
func readmes(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "_output") {
			return filepath.SkipDir
		}
		if d.Name() != "README.md" {
			return nil
		}
		data, err := os.ReadFile(path)
		out[path] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestREADMEAdmissionConfigurations reads every AdmissionConfiguration the
// READMEs show, as kube-apiserver reads --admission-control-config-file, and
// builds each plugin it configures through the registry: a configuration
// example a reader pastes must not stop the server.
func TestREADMEAdmissionConfigurations(t *testing.T) {
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	plugins := admission.NewPlugins()
	RegisterAllAdmissionPlugins(plugins)
	examples := 0
	for readme, text := range readmes(t) {
		for i, m := range yamlBlock.FindAllSubmatch(text, -1) {
			checkAdmissionConfiguration(t, scheme, plugins, fmt.Sprintf("%s, YAML block %d", readme, i), m[1], &examples)
		}
	}
	if examples < 3 {
		t.Errorf("found %d AdmissionConfiguration examples in the READMEs, want at least 3", examples)
	}
}

// checkAdmissionConfiguration reads one YAML block, if it is an
// AdmissionConfiguration, and builds each plugin it configures.
func checkAdmissionConfiguration(t *testing.T, scheme *runtime.Scheme, plugins *admission.Plugins, where string, data []byte, examples *int) {
	t.Helper()
	block := string(data)
	if !strings.Contains(block, "kind: AdmissionConfiguration") {
		return
	}
	*examples++
	file := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	provider, err := admission.ReadAdmissionConfiguration(plugins.Registered(), file, scheme)
	if err != nil {
		t.Errorf("%s: %v\n%s", where, err, block)
		return
	}
	for _, name := range plugins.Registered() {
		if !strings.Contains(block, "- name: "+name+"\n") {
			continue
		}
		config, err := provider.ConfigFor(name)
		if err != nil {
			t.Errorf("%s, %s: %v", where, name, err)
			continue
		}
		// The factory ran and took the configuration when the initializer
		// sees the plugin; ValidateInitialization then fails for want of
		// clients, which a server has.
		built := false
		_, err = plugins.InitPlugin(name, config, initializerFunc(func(admission.Interface) { built = true }))
		if !built {
			t.Errorf("%s: %s refuses its configuration: %v\n%s", where, name, err, block)
		}
	}
}

type initializerFunc func(admission.Interface)

func (f initializerFunc) Initialize(p admission.Interface) { f(p) }
