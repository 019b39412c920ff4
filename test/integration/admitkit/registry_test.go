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

package admitkit

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/admitkit/admitkit/plugin"
	"github.com/admitkit/admitkit/test/apiserver"
)

// TestUpstreamRegistryDrift keeps the build's admission registry equal to
// kube-apiserver's plus admitkit's names: the build lists upstream's plugin
// packages itself (to leave out upstream NodeRestriction), so a Kubernetes
// update that adds a plugin must show up here.
func TestUpstreamRegistryDrift(t *testing.T) {
	upstream := genericoptions.NewAdmissionOptions()
	kubeoptions.RegisterAllAdmissionPlugins(upstream.Plugins)
	want := sets.New(upstream.Plugins.Registered()...).Insert(apiserver.AdmitkitPlugins()...)

	ours := apiserver.NewOptions().Server.Admission.GenericAdmission
	got := sets.New(ours.Plugins.Registered()...)
	if !got.Equal(want) {
		t.Errorf("registry differs from upstream's plus admitkit's: missing %v, extra %v",
			sets.List(want.Difference(got)), sets.List(got.Difference(want)))
	}

	// The order is plugin.AllOrderedPlugins, and it keeps upstream's
	// relative order of upstream's plugins.
	var wantOrder []string
	for _, name := range plugin.AllOrderedPlugins {
		if got.Has(name) {
			wantOrder = append(wantOrder, name)
		}
	}
	if !slices.Equal(ours.RecommendedPluginOrder, wantOrder) {
		t.Errorf("RecommendedPluginOrder = %v, want %v", ours.RecommendedPluginOrder, wantOrder)
	}
	var upstreamInOurs []string
	for _, name := range ours.RecommendedPluginOrder {
		if slices.Contains(kubeoptions.AllOrderedPlugins, name) {
			upstreamInOurs = append(upstreamInOurs, name)
		}
	}
	if !slices.Equal(upstreamInOurs, kubeoptions.AllOrderedPlugins) {
		t.Errorf("upstream plugins in our order %v, want upstream's order %v", upstreamInOurs, kubeoptions.AllOrderedPlugins)
	}
	if !sets.New(admitkitNames...).IsSuperset(sets.New(apiserver.AdmitkitPlugins()...)) {
		t.Errorf("admitkit registers %v, expected only %v", apiserver.AdmitkitPlugins(), admitkitNames)
	}
	// admitkit's plugins are off unless enabled.
	for _, name := range admitkitNames {
		if !ours.DefaultOffPlugins.Has(name) {
			t.Errorf("%s is on by default", name)
		}
	}
}

var admitkitNames = []string{"PodPreset", "NodeRestriction", "LocationMutator"}
