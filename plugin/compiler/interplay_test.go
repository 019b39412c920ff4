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

package compiler_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// A compiled mutator whose order with the presets, or with a mutator left
// to the plugin, may matter is refused and left to the plugin; one that
// meets neither compiles beside them.
func TestMutatorsKeptApart(t *testing.T) {
	preset := settingsv1alpha1.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "proxy", Namespace: "shop"},
		Spec: settingsv1alpha1.PodPresetSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "web"}},
			Env:      []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "http://proxy:3128"}},
			Volumes:  []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	assign := func(name, location, value string) string {
		return "kind: Assign\nmetadata: {name: " + name + "}\nspec:\n  applyTo: [{groups: [\"\"], versions: [v1], kinds: [Pod]}]\n  location: \"" + location + "\"\n  parameters: {assign: {value: " + value + "}}"
	}
	for _, tc := range []struct {
		name    string
		presets bool
		docs    []string
		// held are the LocationMutator configuration's own mutators.
		held []string
		// refused are the mutators refused for meeting another, with the
		// words their reason holds.
		refused map[string]string
	}{{
		name:    "a mutator writing the variable a preset injects",
		presets: true,
		docs:    []string{assign("proxy-value", "spec.containers[name: *].env[name: HTTP_PROXY].value", "direct")},
		refused: map[string]string{"proxy-value": "PodPreset"},
	}, {
		name:    "a mutator adding a volume a preset adds",
		presets: true,
		docs:    []string{assign("cache-volume", "spec.volumes[name: cache].emptyDir.medium", "Memory")},
		refused: map[string]string{"cache-volume": "PodPreset"},
	}, {
		name:    "a mutator adding a container the presets would inject into",
		presets: true,
		docs:    []string{assign("sidecar", "spec.containers[name: sidecar].image", "envoy")},
		refused: map[string]string{"sidecar": "PodPreset"},
	}, {
		name:    "a label the presets select by",
		presets: true,
		docs:    []string{"kind: AssignMetadata\nmetadata: {name: role}\nspec:\n  location: metadata.labels.role\n  parameters: {assign: {value: web}}"},
		refused: map[string]string{"role": "PodPreset"},
	}, {
		name:    "what the presets neither write nor read",
		presets: true,
		docs: []string{
			assign("pull-always", "spec.containers[name: *].imagePullPolicy", "Always"),
			assign("other-variable", "spec.containers[name: *].env[name: LOG_LEVEL].value", "debug"),
			"kind: AssignMetadata\nmetadata: {name: team}\nspec:\n  location: metadata.labels.team\n  parameters: {assign: {value: shop}}",
		},
	}, {
		name:    "no presets: the variable is the mutator's alone",
		presets: false,
		docs:    []string{assign("proxy-value", "spec.containers[name: *].env[name: HTTP_PROXY].value", "direct")},
	}, {
		name: "a mutator reading what one left to the plugin writes",
		docs: []string{
			"kind: Assign\nmetadata: {name: digest}\nspec:\n  applyTo: [{groups: [\"\"], versions: [v1], kinds: [Pod]}]\n  location: \"spec.containers[name: *].image\"\n  parameters: {assign: {externalData: {provider: digests}}}",
			"apiVersion: mutations.gatekeeper.sh/v1alpha1\nkind: AssignImage\nmetadata: {name: mirror}\nspec:\n  applyTo: [{groups: [\"\"], versions: [v1], kinds: [Pod]}]\n  location: \"spec.containers[name: *].image\"\n  parameters: {assignDomain: mirror.example.com}",
			assign("pull-always", "spec.containers[name: *].imagePullPolicy", "Always"),
		},
		refused: map[string]string{"mirror": "Assign/digest"},
	}, {
		name:    "a mutator selecting by a label one of the plugin's configuration adds",
		docs:    []string{"kind: Assign\nmetadata: {name: web-pull}\nspec:\n  applyTo: [{groups: [\"\"], versions: [v1], kinds: [Pod]}]\n  match: {labelSelector: {matchLabels: {role: web}}}\n  location: \"spec.containers[name: *].imagePullPolicy\"\n  parameters: {assign: {value: Always}}"},
		held:    []string{"kind: AssignMetadata\nmetadata: {name: role}\nspec:\n  location: metadata.labels.role\n  parameters: {assign: {value: web}}"},
		refused: map[string]string{"web-pull": "AssignMetadata/role"},
	}, {
		name: "a mutator meeting one of the plugin's configuration",
		docs: []string{
			assign("pull-always", "spec.containers[name: *].imagePullPolicy", "Always"),
			assign("grace", "spec.terminationGracePeriodSeconds", "10"),
		},
		held:    []string{assign("pull-never", "spec.containers[name: *].imagePullPolicy", "Never")},
		refused: map[string]string{"pull-always": "Assign/pull-never"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var src compiler.Sources
			if tc.presets {
				src.PodPresets = []settingsv1alpha1.PodPreset{preset}
			}
			decode := func(doc string) *mutation.Mutator {
				if !strings.HasPrefix(doc, "apiVersion:") {
					doc = "apiVersion: mutations.gatekeeper.sh/v1\n" + doc
				}
				m, err := mutation.Decode([]byte(doc))
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			for _, doc := range tc.docs {
				src.Mutators = append(src.Mutators, decode(doc))
			}
			for _, doc := range tc.held {
				src.Held = append(src.Held, decode(doc))
			}
			r := compiler.Compile(src)
			if tc.presets && !slices.Contains(r.Compiled, compiler.Source{Kind: "PodPreset", Namespace: "shop", Name: "proxy"}) {
				t.Fatalf("the preset did not compile: %v", r.Refused)
			}
			for _, m := range src.Mutators {
				id := m.ID()
				var reason string
				for _, ref := range r.Refused {
					if ref.Source.Name == id.Name {
						reason = ref.Errs.ToAggregate().Error()
					}
				}
				want, refuse := tc.refused[id.Name]
				switch {
				case id.Name == "digest":
					// External data: refused for itself.
				case refuse && !strings.Contains(reason, want):
					t.Errorf("%s: refused for %q, want a refusal naming %s", id, reason, want)
				case !refuse && reason != "":
					t.Errorf("%s: refused: %s", id, reason)
				}
			}
		})
	}
}
