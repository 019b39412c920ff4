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

package noderestriction

import (
	"io"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitkit/admitkit/plugin/internal/strictdecode"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

// LoadConfiguration reads the plugin's AdmissionConfiguration settings, YAML
// or JSON, from config. A nil reader or an empty document returns nil, which
// means Kubernetes' own behaviour. It decodes as kube-apiserver decodes its
// own configuration: field names are case-sensitive, and unknown and
// duplicate fields are errors, so that a typo does not silently leave a
// node with fewer (or more) rights than intended; so is any failure of
// Configuration.Validate, reported with the field path. The rule is
// strictdecode.Config, every plugin's.
func LoadConfiguration(config io.Reader) (*v1alpha1.Configuration, error) {
	cfg := &v1alpha1.Configuration{}
	found, err := strictdecode.Config(PluginName, config, cfg, &cfg.TypeMeta, metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}, cfg.Validate)
	if err != nil || !found {
		return nil, err
	}
	return cfg, nil
}

// allowances is a validated Configuration in the form the rules look up.
type allowances struct {
	labels       map[string]struct{}
	labelPrefix  map[string]struct{}
	taintKeys    map[string]struct{}
	hasTaintKeys bool
}

// steeringNamespaces are label namespaces that workloads are routinely
// steered by (node roles in selectors and tolerations, zones and regions in
// topology spread and affinity): allowing a node to set them is allowing a
// compromised node to draw those workloads.
var steeringNamespaces = []string{"node-role.kubernetes.io", "topology.kubernetes.io"}

// steeringAllowances returns the kubelets' allowed labels and label
// prefixes of cfg that fall in a steering namespace.
func steeringAllowances(cfg *v1alpha1.Configuration) []string {
	if cfg == nil {
		return nil
	}
	return steeringKeys(cfg.AllowedLabels, cfg.AllowedLabelPrefixes)
}

// steeringKeys returns the label keys and prefixes that fall in a
// steering namespace.
func steeringKeys(labels, prefixes []string) []string {
	var found []string
	for _, key := range labels {
		if slices.Contains(steeringNamespaces, labelNamespace(key)) {
			found = append(found, key)
		}
	}
	for _, prefix := range prefixes {
		if slices.Contains(steeringNamespaces, strings.TrimSuffix(prefix, "/")) {
			found = append(found, prefix)
		}
	}
	return found
}

// kubeletAllowances are the kubelets' allowances of cfg.
func kubeletAllowances(cfg *v1alpha1.Configuration) allowances {
	if cfg == nil {
		return allowances{}
	}
	return newAllowances(cfg.AllowedLabels, cfg.AllowedLabelPrefixes, cfg.AllowedTaintKeys)
}

func newAllowances(labels, prefixes, taintKeys []string) allowances {
	var al allowances
	if len(labels) > 0 {
		al.labels = make(map[string]struct{}, len(labels))
		for _, k := range labels {
			al.labels[k] = struct{}{}
		}
	}
	if len(prefixes) > 0 {
		al.labelPrefix = make(map[string]struct{}, len(prefixes))
		for _, p := range prefixes {
			al.labelPrefix[strings.TrimSuffix(p, "/")] = struct{}{}
		}
	}
	if len(taintKeys) > 0 {
		al.hasTaintKeys = true
		al.taintKeys = make(map[string]struct{}, len(taintKeys))
		for _, k := range taintKeys {
			al.taintKeys[k] = struct{}{}
		}
	}
	return al
}

// labelAllowed reports whether the configuration lets a node change key.
// Validation has already kept reserved keys out of the lists, and
// forbiddenLabels checks the reserved namespace before asking.
func (al allowances) labelAllowed(key string) bool {
	if _, ok := al.labels[key]; ok {
		return true
	}
	if len(al.labelPrefix) == 0 {
		return false
	}
	_, ok := al.labelPrefix[labelNamespace(key)]
	return ok
}

func (al allowances) taintAllowed(key string) bool {
	_, ok := al.taintKeys[key]
	return ok
}
