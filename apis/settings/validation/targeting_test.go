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

package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitkit/admitkit/apis/settings"
)

func TestValidateTargeting(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*settings.PodPresetSpec)
		// want is the exact list of errors, as field paths and types.
		want []string
	}{
		{name: "unset is valid", mutate: func(*settings.PodPresetSpec) {}},
		{name: "every policy is valid", mutate: func(s *settings.PodPresetSpec) { s.ConflictPolicy = settings.ConflictPolicyReject }},
		{name: "names", mutate: func(s *settings.PodPresetSpec) {
			s.Containers = &settings.ContainerSelector{Names: []string{"app", "web"}}
			s.InitContainers = &settings.ContainerSelector{Names: []string{"istio-proxy"}, Exclude: true}
		}},
		{name: "an empty selector picks none, and is valid", mutate: func(s *settings.PodPresetSpec) {
			s.InitContainers = &settings.ContainerSelector{}
		}},
		{name: "every mode is valid", mutate: func(s *settings.PodPresetSpec) { s.Mode = settings.ModeAudit }},
		{name: "unknown mode", mutate: func(s *settings.PodPresetSpec) { s.Mode = "DryRun" },
			want: []string{"spec.mode: Unsupported value"}},
		{name: "mode is case-sensitive", mutate: func(s *settings.PodPresetSpec) { s.Mode = "warn" },
			want: []string{"spec.mode: Unsupported value"}},
		{name: "unknown policy", mutate: func(s *settings.PodPresetSpec) { s.ConflictPolicy = "Merge" },
			want: []string{"spec.conflictPolicy: Unsupported value"}},
		{name: "policy is case-sensitive", mutate: func(s *settings.PodPresetSpec) { s.ConflictPolicy = "podWins" },
			want: []string{"spec.conflictPolicy: Unsupported value"}},
		{name: "empty name", mutate: func(s *settings.PodPresetSpec) {
			s.Containers = &settings.ContainerSelector{Names: []string{"app", ""}}
		},
			want: []string{"spec.containers.names[1]: Required value"}},
		{name: "duplicate name", mutate: func(s *settings.PodPresetSpec) {
			s.InitContainers = &settings.ContainerSelector{Names: []string{"init", "init"}}
		}, want: []string{"spec.initContainers.names[1]: Duplicate value"}},
		{name: "name that no container can have", mutate: func(s *settings.PodPresetSpec) {
			s.Containers = &settings.ContainerSelector{Names: []string{"app", "App_1", "istio-*"}}
		}, want: []string{"spec.containers.names[1]: Invalid value", "spec.containers.names[2]: Invalid value"}},
		{name: "exclude without names", mutate: func(s *settings.PodPresetSpec) {
			s.Containers = &settings.ContainerSelector{Exclude: true}
		}, want: []string{"spec.containers.names: Required value"}},
		{name: "every error is reported", mutate: func(s *settings.PodPresetSpec) {
			s.Containers = &settings.ContainerSelector{Names: []string{""}}
			s.InitContainers = &settings.ContainerSelector{Exclude: true}
			s.ConflictPolicy = "Sometimes"
		}, want: []string{"spec.containers.names[0]: Required value", "spec.initContainers.names: Required value", "spec.conflictPolicy: Unsupported value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pp := validPreset()
			tc.mutate(&pp.Spec)
			var got []string
			for _, err := range ValidatePodPreset(pp, BuiltinPodFields) {
				got = append(got, err.Field+": "+err.Type.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// A ClusterPodPreset's fields sit directly under spec too.
func TestValidateClusterPodPresetTargeting(t *testing.T) {
	cpp := &settings.ClusterPodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "everywhere"},
		Spec:       settings.ClusterPodPresetSpec{PodPresetSpec: validPreset().Spec},
	}
	cpp.Spec.ConflictPolicy = "Never"
	cpp.Spec.Mode = "Sometimes"
	cpp.Spec.InitContainers = &settings.ContainerSelector{Names: []string{"Init"}}
	assertErrors(t, ValidateClusterPodPreset(cpp, BuiltinPodFields).ToAggregate(), []string{
		`spec.conflictPolicy: Unsupported value: "Never": supported values: "SkipAll", "PodWins", "PresetWins", "Reject"`,
		`spec.mode: Unsupported value: "Sometimes": supported values: "Enforce", "Warn", "Audit"`,
		`spec.initContainers.names[0]: Invalid value: "Init"`,
	})
}

func TestWarningsOnSpecUpdate(t *testing.T) {
	targeted := func() *settings.PodPresetSpec {
		s := validPreset().Spec
		s.Containers = &settings.ContainerSelector{Names: []string{"app"}}
		s.InitContainers = &settings.ContainerSelector{}
		s.ConflictPolicy = settings.ConflictPolicyPodWins
		s.Mode = settings.ModeWarn
		return &s
	}
	cases := []struct {
		name   string
		old    *settings.PodPresetSpec
		mutate func(*settings.PodPresetSpec)
		want   []string
	}{
		{name: "nothing removed", old: targeted(), mutate: func(*settings.PodPresetSpec) {}},
		{name: "changed, not removed", old: targeted(), mutate: func(s *settings.PodPresetSpec) {
			s.Containers.Names = []string{"web"}
			s.ConflictPolicy = settings.ConflictPolicyReject
		}},
		{name: "an old preset stays quiet", old: &validPreset().Spec, mutate: func(*settings.PodPresetSpec) {}},
		{name: "an older client's read-modify-write", old: targeted(), mutate: func(s *settings.PodPresetSpec) {
			s.Containers, s.InitContainers, s.ConflictPolicy, s.Mode = nil, nil, "", ""
		}, want: []string{"spec.containers", "spec.initContainers", "spec.conflictPolicy", "spec.mode"}},
		{name: "the policy only", old: targeted(), mutate: func(s *settings.PodPresetSpec) { s.ConflictPolicy = "" },
			want: []string{"spec.conflictPolicy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.old.DeepCopy()
			tc.mutate(spec)
			warnings := WarningsOnSpecUpdate(spec, tc.old, field.NewPath("spec"))
			if len(warnings) != len(tc.want) {
				t.Fatalf("warnings %q, want one for each of %q", warnings, tc.want)
			}
			for i, w := range tc.want {
				if want := w + ": this update removes the value the preset had"; len(warnings[i]) < len(want) || warnings[i][:len(want)] != want {
					t.Errorf("warning %q, want it to start %q", warnings[i], want)
				}
			}
		})
	}
}
