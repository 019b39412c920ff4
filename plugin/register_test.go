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
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/admission"
)

func TestEveryPluginIsRegisteredAndOrdered(t *testing.T) {
	plugins := admission.NewPlugins()
	RegisterAllAdmissionPlugins(plugins)
	registered := plugins.Registered()
	if want := []string{"LocationMutator", "NodeRestriction", "PodPreset"}; !slices.Equal(registered, want) {
		t.Errorf("registered %v, want %v", registered, want)
	}
	for _, name := range registered {
		if !slices.Contains(AllOrderedPlugins, name) {
			t.Errorf("%s is registered but has no place in AllOrderedPlugins", name)
		}
	}
}

func TestRecommendedOrder(t *testing.T) {
	before := func(a, b string) {
		t.Helper()
		i, j := slices.Index(AllOrderedPlugins, a), slices.Index(AllOrderedPlugins, b)
		if i < 0 || j < 0 || i >= j {
			t.Errorf("%s (at %d) must come before %s (at %d)", a, i, b, j)
		}
	}
	before("PodPreset", "LimitRanger")
	before("PodPreset", "ServiceAccount")
	before("ServiceAccount", "NodeRestriction")
	before("NodeRestriction", "TaintNodesByCondition")
	before("PodResizeValidator", "LocationMutator")
	before("LocationMutator", "MutatingAdmissionPolicy")
	seen := map[string]bool{}
	for _, name := range AllOrderedPlugins {
		if seen[name] {
			t.Errorf("%s appears twice", name)
		}
		seen[name] = true
	}
}
