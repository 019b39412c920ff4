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

package podpreset

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// onePreset wraps spec in the single unnamed preset the merge cases use.
func onePreset(spec settingsv1alpha1.PodPresetSpec) []*preset {
	return []*preset{{kind: podPresetKind, name: "p", spec: spec}}
}

var testContainer = owner{kind: "container", name: "c"}

func TestMergeEnv(t *testing.T) {
	cases := map[string]struct {
		orig, mod, want []corev1.EnvVar
		conflict        string
	}{
		"empty original": {
			mod:  []corev1.EnvVar{{Name: "abc", Value: "value2"}, {Name: "ABC", Value: "value3"}},
			want: []corev1.EnvVar{{Name: "abc", Value: "value2"}, {Name: "ABC", Value: "value3"}},
		},
		"good merge": {
			orig: []corev1.EnvVar{{Name: "abcd", Value: "value2"}, {Name: "hello", Value: "value3"}},
			mod:  []corev1.EnvVar{{Name: "abc", Value: "value2"}, {Name: "ABC", Value: "value3"}},
			want: []corev1.EnvVar{{Name: "abcd", Value: "value2"}, {Name: "hello", Value: "value3"}, {Name: "abc", Value: "value2"}, {Name: "ABC", Value: "value3"}},
		},
		"conflict": {
			orig:     []corev1.EnvVar{{Name: "abc", Value: "value3"}},
			mod:      []corev1.EnvVar{{Name: "abc", Value: "value2"}, {Name: "ABC", Value: "value3"}},
			conflict: `PodPreset "p": env "abc" conflicts with the one in container "c"`,
		},
		"one is exact same": {
			orig: []corev1.EnvVar{{Name: "abc", Value: "value2"}, {Name: "hello", Value: "value3"}},
			mod:  []corev1.EnvVar{{Name: "abc", Value: "value2"}, {Name: "ABC", Value: "value3"}},
			want: []corev1.EnvVar{{Name: "abc", Value: "value2"}, {Name: "hello", Value: "value3"}, {Name: "ABC", Value: "value3"}},
		},
		"same value from a different source conflicts": {
			orig:     []corev1.EnvVar{{Name: "abc", Value: "value2"}},
			mod:      []corev1.EnvVar{{Name: "abc", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
			conflict: `env "abc" conflicts`,
		},
		"nothing to add leaves nil alone": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := mergeList(testContainer, tc.orig, onePreset(settingsv1alpha1.PodPresetSpec{Env: tc.mod}), envList)
			checkMerge(t, got, tc.want, errs, tc.conflict)
		})
	}
}

func TestMergeEnvFrom(t *testing.T) {
	optional := func(e corev1.EnvFromSource) corev1.EnvFromSource {
		e.ConfigMapRef.Optional = ptr.To(true)
		return e
	}
	secret := corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "abc"}}}
	cases := map[string]struct {
		orig, mod, want []corev1.EnvFromSource
		conflict        string
	}{
		"empty original": {
			mod:  []corev1.EnvFromSource{configMapEnv("abc", ""), configMapEnv("abc", "pre_")},
			want: []corev1.EnvFromSource{configMapEnv("abc", ""), configMapEnv("abc", "pre_")},
		},
		"good merge": {
			orig: []corev1.EnvFromSource{configMapEnv("thing", "")},
			mod:  []corev1.EnvFromSource{configMapEnv("abc", ""), configMapEnv("abc", "pre_")},
			want: []corev1.EnvFromSource{configMapEnv("thing", ""), configMapEnv("abc", ""), configMapEnv("abc", "pre_")},
		},
		"the same source is not added twice": {
			orig: []corev1.EnvFromSource{configMapEnv("abc", "")},
			mod:  []corev1.EnvFromSource{configMapEnv("abc", ""), configMapEnv("abc", "pre_")},
			want: []corev1.EnvFromSource{configMapEnv("abc", ""), configMapEnv("abc", "pre_")},
		},
		"a secret and a config map of one name are different sources": {
			orig: []corev1.EnvFromSource{configMapEnv("abc", "")},
			mod:  []corev1.EnvFromSource{secret},
			want: []corev1.EnvFromSource{configMapEnv("abc", ""), secret},
		},
		// Upstream left this out of its conflict check and then replaced the
		// container's envFrom with an empty list.
		"optional differs: a conflict": {
			orig:     []corev1.EnvFromSource{configMapEnv("abc", "")},
			mod:      []corev1.EnvFromSource{optional(configMapEnv("abc", ""))},
			conflict: `PodPreset "p": envFrom configMapRef "abc" conflicts with the one in container "c"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := mergeList(testContainer, tc.orig, onePreset(settingsv1alpha1.PodPresetSpec{EnvFrom: tc.mod}), envFromList)
			checkMerge(t, got, tc.want, errs, tc.conflict)
		})
	}
}

func TestMergeVolumeMounts(t *testing.T) {
	mount := func(name, path string) corev1.VolumeMount { return corev1.VolumeMount{Name: name, MountPath: path} }
	cases := map[string]struct {
		orig, mod, want []corev1.VolumeMount
		conflict        string
	}{
		"empty original": {
			mod:  []corev1.VolumeMount{mount("simply-mounted-volume", "/opt/")},
			want: []corev1.VolumeMount{mount("simply-mounted-volume", "/opt/")},
		},
		"good merge": {
			orig: []corev1.VolumeMount{mount("etc-volume", "/etc/")},
			mod:  []corev1.VolumeMount{mount("simply-mounted-volume", "/opt/")},
			want: []corev1.VolumeMount{mount("etc-volume", "/etc/"), mount("simply-mounted-volume", "/opt/")},
		},
		"conflict": {
			orig:     []corev1.VolumeMount{mount("etc-volume", "/etc/")},
			mod:      []corev1.VolumeMount{mount("simply-mounted-volume", "/opt/"), mount("etc-volume", "/things/")},
			conflict: `volumeMount "etc-volume" conflicts with the one in container "c"`,
		},
		"conflict on mount path": {
			orig:     []corev1.VolumeMount{mount("etc-volume", "/etc/")},
			mod:      []corev1.VolumeMount{mount("simply-mounted-volume", "/opt/"), mount("things-volume", "/etc/")},
			conflict: `volumeMount at "/etc/" conflicts with the one in container "c"`,
		},
		"one is exact same": {
			orig: []corev1.VolumeMount{mount("etc-volume", "/etc/")},
			mod:  []corev1.VolumeMount{mount("simply-mounted-volume", "/opt/"), mount("etc-volume", "/etc/")},
			want: []corev1.VolumeMount{mount("etc-volume", "/etc/"), mount("simply-mounted-volume", "/opt/")},
		},
		"same name and path, different readOnly": {
			orig:     []corev1.VolumeMount{mount("etc-volume", "/etc/")},
			mod:      []corev1.VolumeMount{{Name: "etc-volume", MountPath: "/etc/", ReadOnly: true}},
			conflict: `volumeMount "etc-volume" conflicts`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := mergeList(testContainer, tc.orig, onePreset(settingsv1alpha1.PodPresetSpec{VolumeMounts: tc.mod}), mountList)
			checkMerge(t, got, tc.want, errs, tc.conflict)
		})
	}
}

func TestMergeVolumes(t *testing.T) {
	hostPath := corev1.Volume{Name: "vol3", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/apparmor.d"}}}
	cases := map[string]struct {
		orig, mod, want []corev1.Volume
		conflict        string
	}{
		"empty original": {
			mod:  []corev1.Volume{emptyDir("vol"), emptyDir("vol2")},
			want: []corev1.Volume{emptyDir("vol"), emptyDir("vol2")},
		},
		"good merge": {
			orig: []corev1.Volume{emptyDir("vol3"), emptyDir("vol4")},
			mod:  []corev1.Volume{emptyDir("vol"), emptyDir("vol2")},
			want: []corev1.Volume{emptyDir("vol3"), emptyDir("vol4"), emptyDir("vol"), emptyDir("vol2")},
		},
		"conflict": {
			orig:     []corev1.Volume{emptyDir("vol3"), emptyDir("vol4")},
			mod:      []corev1.Volume{hostPath, emptyDir("vol2")},
			conflict: `PodPreset "p": volume "vol3" conflicts with the one in the pod`,
		},
		"one is exact same": {
			orig: []corev1.Volume{emptyDir("vol3"), emptyDir("vol4")},
			mod:  []corev1.Volume{emptyDir("vol3"), emptyDir("vol2")},
			want: []corev1.Volume{emptyDir("vol3"), emptyDir("vol4"), emptyDir("vol2")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := mergeList(owner{kind: "the pod"}, tc.orig, onePreset(settingsv1alpha1.PodPresetSpec{Volumes: tc.mod}), volumeList)
			checkMerge(t, got, tc.want, errs, tc.conflict)
		})
	}
}

// Items an earlier preset appended count as already there: a second preset
// may repeat them but not contradict them, and says whose they are.
func TestMergeAcrossPresets(t *testing.T) {
	a := &preset{kind: podPresetKind, name: "a", spec: settingsv1alpha1.PodPresetSpec{
		Env: []corev1.EnvVar{{Name: "X", Value: "1"}}, EnvFrom: []corev1.EnvFromSource{configMapEnv("cm", "")},
	}}
	repeat := &preset{kind: clusterPodPresetKind, name: "b", spec: a.spec}
	contradict := &preset{kind: podPresetKind, name: "c", spec: settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "X", Value: "2"}}}}

	env, errs := mergeList(testContainer, nil, []*preset{a, repeat}, envList)
	checkMerge(t, env, a.spec.Env, errs, "")
	envFrom, errs := mergeList(testContainer, nil, []*preset{a, repeat}, envFromList)
	checkMerge(t, envFrom, a.spec.EnvFrom, errs, "")

	_, errs = mergeList(testContainer, nil, []*preset{a, contradict}, envList)
	checkMerge[corev1.EnvVar](t, nil, nil, errs, `PodPreset "c": env "X" conflicts with the one from PodPreset "a"`)
}

func TestMergeDoesNotTouchTheOriginal(t *testing.T) {
	orig := make([]corev1.EnvVar, 1, 4)
	orig[0] = corev1.EnvVar{Name: "A", Value: "a"}
	merged, errs := mergeList(testContainer, orig, onePreset(settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "B"}}}), envList)
	if len(errs) != 0 || len(merged) != 2 {
		t.Fatalf("merge = %v, %v", merged, errs)
	}
	if spare := orig[:2]; spare[1].Name != "" {
		t.Errorf("the merge wrote into the original's spare capacity: %v", spare)
	}
}

func checkMerge[T any](t *testing.T, got, want []T, errs []conflict, conflict string) {
	t.Helper()
	if conflict != "" {
		if len(errs) == 0 {
			t.Fatalf("expected a conflict containing %q, got %v", conflict, got)
		}
		if text := errs[0].err.Error(); !strings.Contains(text, conflict) {
			t.Fatalf("conflict %q does not contain %q", text, conflict)
		}
		return
	}
	if len(errs) != 0 {
		t.Fatalf("unexpected conflicts: %v", errs)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged list (-want +got):\n%s", diff)
	}
}

// The envFrom key must cover every field that tells sources apart: a source
// built from nothing but the key's fields is the original, optional aside.
func TestEnvFromMergeKey(t *testing.T) {
	filler := randfill.NewWithSeed(1).NilChance(0.5)
	for i := 0; i < 200; i++ {
		var orig corev1.EnvFromSource
		filler.Fill(&orig)
		clone := corev1.EnvFromSource{Prefix: orig.Prefix}
		if orig.ConfigMapRef != nil {
			clone.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: orig.ConfigMapRef.LocalObjectReference}
		}
		if orig.SecretRef != nil {
			clone.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: orig.SecretRef.LocalObjectReference}
		}
		if !envFromKey.same(&orig, &clone) {
			t.Fatalf("a source and its key-only clone have different keys: %+v", orig)
		}
		if orig.ConfigMapRef != nil {
			orig.ConfigMapRef.Optional = nil
		}
		if orig.SecretRef != nil {
			orig.SecretRef.Optional = nil
		}
		if diff := cmp.Diff(orig, clone); diff != "" {
			t.Fatalf("the key leaves out a field that tells sources apart (-orig +clone):\n%s", diff)
		}
	}
}
