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
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

func env(nameValues ...string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for i := 0; i+1 < len(nameValues); i += 2 {
		out = append(out, corev1.EnvVar{Name: nameValues[i], Value: nameValues[i+1]})
	}
	return out
}

func withPolicy(policy settingsv1alpha1.ConflictPolicy, spec settingsv1alpha1.PodPresetSpec) settingsv1alpha1.PodPresetSpec {
	spec.ConflictPolicy = policy
	return spec
}

// policyCase is one pod create against presets, and what must come of it.
type policyCase struct {
	name    string
	presets []runtime.Object
	// pod changes testPod() (init container "init" and container "app",
	// both with env abc=value2, ABC=value3).
	pod func(*corev1.Pod)
	// applied lists the annotation keys the pod must end with; nil when
	// none of its presets is applied.
	applied []string
	// appEnv and initEnv are the containers' env afterwards.
	appEnv, initEnv []corev1.EnvVar
	// refused is a substring of the Forbidden error; empty when admitted.
	refused string
	// conflict is a substring of the warning and the Event; empty when
	// there must be neither.
	conflict string
	check    func(*testing.T, *corev1.Pod)
}

var podEnv = env("abc", "value2", "ABC", "value3")

// assertApplied checks the annotation keys the pod records its presets
// under.
func assertApplied(t *testing.T, pod *corev1.Pod, want []string) {
	t.Helper()
	var applied []string
	for key := range pod.Annotations {
		if strings.HasPrefix(key, annotationPrefix+"/") {
			applied = append(applied, key)
		}
	}
	if diff := cmp.Diff(want, applied, sortStrings); diff != "" {
		t.Errorf("applied presets (-want +got):\n%s", diff)
	}
}

func runPolicyCases(t *testing.T, cases []policyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, recorder := newTestPlugin(t, tc.presets...)
			pod := testPod()
			if tc.pod != nil {
				tc.pod(pod)
			}
			before := pod.DeepCopy()
			ctx, warnings := withWarnings()
			err := admitPod(t, p, pod, func(o *admitOptions) { o.ctx = ctx })
			if tc.refused != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("error = %v, want Forbidden containing %q", err, tc.refused)
				}
				assertUnchanged(t, before, pod)
				assertNoEvent(t, recorder)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.conflict != "" {
				assertUnchanged(t, before, pod)
				// The reinvocation tester admits twice: one warning each time.
				if len(*warnings) == 0 || !strings.Contains((*warnings)[0], tc.conflict) {
					t.Errorf("warnings %q, want one containing %q", *warnings, tc.conflict)
				}
				if event := nextEvent(t, recorder); !strings.Contains(event, "Warning PodPresetConflict") || !strings.Contains(event, tc.conflict) {
					t.Errorf("event %q, want a PodPresetConflict containing %q", event, tc.conflict)
				}
				return
			}
			if len(*warnings) != 0 {
				t.Errorf("unexpected warnings %q", *warnings)
			}
			assertNoEvent(t, recorder)
			assertApplied(t, pod, tc.applied)
			if diff := cmp.Diff(tc.appEnv, pod.Spec.Containers[0].Env); diff != "" {
				t.Errorf("container app env (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.initEnv, pod.Spec.InitContainers[0].Env); diff != "" {
				t.Errorf("init container env (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, pod)
			}
		})
	}
}

// One preset whose env abc conflicts with both containers' own, under each
// policy.
func TestConflictPolicies(t *testing.T) {
	spec := settingsv1alpha1.PodPresetSpec{Env: env("abc", "preset", "NEW", "1")}
	hello := []string{podPresetAnnotationPrefix + "hello"}
	runPolicyCases(t, []policyCase{
		{name: "unset: none applied", presets: []runtime.Object{podPreset("hello", everything, spec)},
			conflict: `PodPreset "hello": env "abc" conflicts with the one in init container "init"`},
		{name: "SkipAll: none applied", presets: []runtime.Object{podPreset("hello", everything, withPolicy("SkipAll", spec))},
			conflict: `PodPreset "hello": env "abc" conflicts with the one in container "app"`},
		{name: "PodWins: the pod's value stays, the rest applies",
			presets: []runtime.Object{podPreset("hello", everything, withPolicy("PodWins", spec))},
			applied: hello,
			appEnv:  env("abc", "value2", "ABC", "value3", "NEW", "1"),
			initEnv: env("abc", "value2", "ABC", "value3", "NEW", "1")},
		{name: "PresetWins: the preset's value takes the pod's place",
			presets: []runtime.Object{podPreset("hello", everything, withPolicy("PresetWins", spec))},
			applied: hello,
			appEnv:  env("abc", "preset", "ABC", "value3", "NEW", "1"),
			initEnv: env("abc", "preset", "ABC", "value3", "NEW", "1")},
		{name: "Reject: the pod is refused", presets: []runtime.Object{podPreset("hello", everything, withPolicy("Reject", spec))},
			refused: `Pod namespace/mypod refused by pod presets whose conflictPolicy is Reject: [PodPreset "hello": env "abc" conflicts with the one in init container "init", PodPreset "hello": env "abc" conflicts with the one in container "app"]`},
		{name: "Reject without a conflict applies",
			presets: []runtime.Object{podPreset("hello", everything, withPolicy("Reject", settingsv1alpha1.PodPresetSpec{Env: env("abc", "value2", "NEW", "1")}))},
			applied: hello,
			appEnv:  env("abc", "value2", "ABC", "value3", "NEW", "1"),
			initEnv: env("abc", "value2", "ABC", "value3", "NEW", "1")},
		{name: "a ClusterPodPreset's policy works the same",
			presets: []runtime.Object{clusterPodPreset("hello", everything, everything, withPolicy("PresetWins", spec))},
			applied: []string{clusterPodPresetAnnotationPrefix + "hello"},
			appEnv:  env("abc", "preset", "ABC", "value3", "NEW", "1"),
			initEnv: env("abc", "preset", "ABC", "value3", "NEW", "1")},
	})
}

// Volumes and mounts follow the same policies as env; a mount is one item
// under two keys, its name and its path.
func TestConflictPoliciesOnVolumesAndMounts(t *testing.T) {
	hostPath := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data", Type: ptr.To(corev1.HostPathUnset)}}}
	spec := settingsv1alpha1.PodPresetSpec{
		Volumes:      []corev1.Volume{hostPath},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/srv"}},
	}
	pod := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{emptyDir("data"), emptyDir("logs")}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "logs", MountPath: "/srv"}, {Name: "data", MountPath: "/data"}}
	}
	hello := []string{podPresetAnnotationPrefix + "hello"}
	runPolicyCases(t, []policyCase{
		{name: "PodWins keeps the pod's volume and mounts", presets: []runtime.Object{podPreset("hello", everything, withPolicy("PodWins", spec))},
			pod: pod, applied: hello, appEnv: podEnv, initEnv: podEnv,
			check: func(t *testing.T, p *corev1.Pod) {
				if diff := cmp.Diff([]corev1.Volume{emptyDir("data"), emptyDir("logs")}, p.Spec.Volumes); diff != "" {
					t.Errorf("volumes (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]corev1.VolumeMount{{Name: "logs", MountPath: "/srv"}, {Name: "data", MountPath: "/data"}}, p.Spec.Containers[0].VolumeMounts); diff != "" {
					t.Errorf("app mounts (-want +got):\n%s", diff)
				}
				// The init container has no mount in the way.
				if diff := cmp.Diff(spec.VolumeMounts, p.Spec.InitContainers[0].VolumeMounts); diff != "" {
					t.Errorf("init mounts (-want +got):\n%s", diff)
				}
			}},
		{name: "PresetWins replaces the volume, and the mount both by path and by name",
			presets: []runtime.Object{podPreset("hello", everything, withPolicy("PresetWins", spec))},
			pod:     pod, applied: hello, appEnv: podEnv, initEnv: podEnv,
			check: func(t *testing.T, p *corev1.Pod) {
				if diff := cmp.Diff([]corev1.Volume{hostPath, emptyDir("logs")}, p.Spec.Volumes); diff != "" {
					t.Errorf("volumes (-want +got):\n%s", diff)
				}
				// The pod's mount at /srv gives the preset's its place; the
				// pod's other mount of "data" goes.
				if diff := cmp.Diff(spec.VolumeMounts, p.Spec.Containers[0].VolumeMounts); diff != "" {
					t.Errorf("app mounts (-want +got):\n%s", diff)
				}
			}},
		{name: "Reject names the volume and the mounts", presets: []runtime.Object{podPreset("hello", everything, withPolicy("Reject", spec))},
			pod: pod, refused: `volume "data" conflicts with the one in the pod`},
	})
}

// Several presets with different policies on one pod. Presets apply in
// name order, namespaced ones before cluster ones; a PodWins preset gives
// way to every other; two presets neither of which gives way conflict,
// and refuse the pod when either is Reject.
func TestSeveralPresetsWithPolicies(t *testing.T) {
	pp := func(name string, policy settingsv1alpha1.ConflictPolicy, nameValues ...string) runtime.Object {
		return podPreset(name, everything, withPolicy(policy, settingsv1alpha1.PodPresetSpec{Env: env(nameValues...)}))
	}
	annotations := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, podPresetAnnotationPrefix+n)
		}
		return out
	}
	runPolicyCases(t, []policyCase{
		{name: "a PodWins preset gives way to a later one",
			presets: []runtime.Object{pp("a-defaults", "PodWins", "X", "default", "A", "a"), pp("b-strict", "", "X", "strict")},
			applied: annotations("a-defaults", "b-strict"),
			appEnv:  append(env("abc", "value2", "ABC", "value3"), env("A", "a", "X", "strict")...),
			initEnv: append(env("abc", "value2", "ABC", "value3"), env("A", "a", "X", "strict")...)},
		{name: "and to an earlier one",
			presets: []runtime.Object{pp("a-strict", "Reject", "X", "strict"), pp("b-defaults", "PodWins", "X", "default")},
			applied: annotations("a-strict", "b-defaults"),
			appEnv:  append(env("abc", "value2", "ABC", "value3"), env("X", "strict")...),
			initEnv: append(env("abc", "value2", "ABC", "value3"), env("X", "strict")...)},
		{name: "between two PodWins presets the first keeps its item",
			presets: []runtime.Object{pp("b", "PodWins", "X", "b"), pp("a", "PodWins", "X", "a")},
			applied: annotations("a", "b"),
			appEnv:  append(env("abc", "value2", "ABC", "value3"), env("X", "a")...),
			initEnv: append(env("abc", "value2", "ABC", "value3"), env("X", "a")...)},
		{name: "PresetWins beats the pod and a PodWins preset",
			presets: []runtime.Object{pp("a", "PodWins", "abc", "a"), pp("b", "PresetWins", "abc", "b")},
			applied: annotations("a", "b"),
			appEnv:  env("abc", "b", "ABC", "value3"),
			initEnv: env("abc", "b", "ABC", "value3")},
		{name: "a preset that agrees with a PresetWins one does not conflict with the value it replaced",
			presets: []runtime.Object{pp("a", "", "abc", "b"), pp("b", "PresetWins", "abc", "b")},
			applied: annotations("a", "b"),
			appEnv:  env("abc", "b", "ABC", "value3"),
			initEnv: env("abc", "b", "ABC", "value3")},
		{name: "two PresetWins presets that disagree: none applied",
			presets:  []runtime.Object{pp("a", "PresetWins", "X", "a"), pp("b", "PresetWins", "X", "b")},
			conflict: `PodPreset "b": env "X" conflicts with the one from PodPreset "a"`},
		{name: "a SkipAll preset against a PresetWins one: none applied",
			presets:  []runtime.Object{pp("a", "PresetWins", "X", "a"), pp("b", "SkipAll", "X", "b")},
			conflict: `PodPreset "b": env "X" conflicts with the one from PodPreset "a"`},
		{name: "a Reject preset against a SkipAll one refuses, whichever comes first",
			presets: []runtime.Object{pp("a", "Reject", "X", "a"), pp("b", "", "X", "b")},
			refused: `PodPreset "b": env "X" conflicts with the one from PodPreset "a"`},
		{name: "a SkipAll preset against a Reject one refuses",
			presets: []runtime.Object{pp("a", "", "X", "a"), pp("b", "Reject", "X", "b")},
			refused: `PodPreset "b": env "X" conflicts with the one from PodPreset "a"`},
		{name: "a Reject conflict outweighs a SkipAll one",
			presets: []runtime.Object{pp("a", "", "abc", "a"), pp("b", "Reject", "ABC", "b")},
			refused: `PodPreset "b": env "ABC" conflicts with the one in`},
		{name: "an old preset's conflict with the pod still applies none, whatever the others say",
			presets:  []runtime.Object{pp("a", "PodWins", "abc", "a", "A", "a"), pp("b", "", "ABC", "b")},
			conflict: `none of PodPreset "a", PodPreset "b" was applied`},
		{name: "appended items keep name order across policies",
			presets: []runtime.Object{pp("a", "PodWins", "A", "1"), pp("b", "PresetWins", "B", "1"), pp("c", "", "C", "1"),
				clusterPodPreset("a-cluster", everything, everything, withPolicy("PresetWins", settingsv1alpha1.PodPresetSpec{Env: env("D", "1")}))},
			applied: append(annotations("a", "b", "c"), clusterPodPresetAnnotationPrefix+"a-cluster"),
			appEnv:  append(env("abc", "value2", "ABC", "value3"), env("A", "1", "B", "1", "C", "1", "D", "1")...),
			initEnv: append(env("abc", "value2", "ABC", "value3"), env("A", "1", "B", "1", "C", "1", "D", "1")...)},
	})
}

// Containers and init containers are picked by name, each list on its own.
func TestContainerTargeting(t *testing.T) {
	none := &settingsv1alpha1.ContainerSelector{}
	// sidecars adds a second container and a restartable init container.
	sidecars := func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "istio-proxy"})
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "log-shipper", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)})
	}
	withProxy := append(env("abc", "value2", "ABC", "value3"), env("PROXY", "http://proxy")...)
	hello := []string{podPresetAnnotationPrefix + "hello"}
	runPolicyCases(t, []policyCase{
		{name: "unset selectors: every container and init container",
			presets: []runtime.Object{podPreset("hello", everything, targetedSpec(nil, nil))}, pod: sidecars,
			applied: hello, appEnv: withProxy, initEnv: withProxy,
			check: func(t *testing.T, p *corev1.Pod) { checkTargeted(t, p, "init", "log-shipper", "app", "istio-proxy") }},
		{name: "one container by name, no init container",
			presets: []runtime.Object{podPreset("hello", everything, targetedSpec(pickNames("app"), none))}, pod: sidecars,
			applied: hello, appEnv: withProxy, initEnv: podEnv,
			check: func(t *testing.T, p *corev1.Pod) { checkTargeted(t, p, "app") }},
		{name: "every container but the sidecars",
			presets: []runtime.Object{podPreset("hello", everything, targetedSpec(pickAllBut("istio-proxy"), pickAllBut("log-shipper")))}, pod: sidecars,
			applied: hello, appEnv: withProxy, initEnv: withProxy,
			check: func(t *testing.T, p *corev1.Pod) { checkTargeted(t, p, "init", "app") }},
		{name: "a restartable sidecar is an init container to pick",
			presets: []runtime.Object{podPreset("hello", everything, targetedSpec(none, pickNames("log-shipper")))}, pod: sidecars,
			applied: hello, appEnv: podEnv, initEnv: podEnv,
			check: func(t *testing.T, p *corev1.Pod) { checkTargeted(t, p, "log-shipper") }},
		{name: "a container the pod lacks: the preset still applies to the pod",
			presets: []runtime.Object{podPreset("hello", everything, targetedSpec(pickNames("worker"), none))},
			applied: hello, appEnv: podEnv, initEnv: podEnv,
			check: func(t *testing.T, p *corev1.Pod) { checkTargeted(t, p) }},
		{name: "a container the preset leaves alone cannot conflict",
			presets: []runtime.Object{podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{Env: env("abc", "other", "PROXY", "http://proxy"), Containers: pickNames("istio-proxy"), InitContainers: none})},
			pod:     sidecars, applied: hello, appEnv: podEnv, initEnv: podEnv,
			check: func(t *testing.T, p *corev1.Pod) {
				if diff := cmp.Diff(env("abc", "other", "PROXY", "http://proxy"), p.Spec.Containers[1].Env); diff != "" {
					t.Errorf("istio-proxy env (-want +got):\n%s", diff)
				}
			}},
		{name: "presets picking different containers",
			presets: []runtime.Object{
				podPreset("a", everything, settingsv1alpha1.PodPresetSpec{Env: env("X", "app"), Containers: pickNames("app"), InitContainers: none}),
				podPreset("b", everything, settingsv1alpha1.PodPresetSpec{Env: env("X", "init"), Containers: none}),
			},
			applied: []string{podPresetAnnotationPrefix + "a", podPresetAnnotationPrefix + "b"},
			appEnv:  append(env("abc", "value2", "ABC", "value3"), env("X", "app")...),
			initEnv: append(env("abc", "value2", "ABC", "value3"), env("X", "init")...)},
	})
}

// targetedSpec is a preset of an env var and a mounted volume for the
// containers and init containers the selectors pick.
func targetedSpec(containers, initContainers *settingsv1alpha1.ContainerSelector) settingsv1alpha1.PodPresetSpec {
	return settingsv1alpha1.PodPresetSpec{
		Env:            env("PROXY", "http://proxy"),
		Volumes:        []corev1.Volume{emptyDir("certs")},
		VolumeMounts:   []corev1.VolumeMount{{Name: "certs", MountPath: "/certs"}},
		Containers:     containers,
		InitContainers: initContainers,
	}
}

// pickNames selects the containers named n.
func pickNames(n ...string) *settingsv1alpha1.ContainerSelector {
	return &settingsv1alpha1.ContainerSelector{Names: n}
}

// pickAllBut selects every container but those named n.
func pickAllBut(n ...string) *settingsv1alpha1.ContainerSelector {
	return &settingsv1alpha1.ContainerSelector{Names: n, Exclude: true}
}

// checkTargeted checks that the containers, init ones first, that have
// targetedSpec's env var and mount are want, and that the pod has its
// volume whatever the containers.
func checkTargeted(t *testing.T, p *corev1.Pod, want ...string) {
	t.Helper()
	var have []string
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		env := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "PROXY" })
		mount := len(c.VolumeMounts) > 0
		if env != mount {
			t.Errorf("container %s got env %v but mount %v", c.Name, env, mount)
		}
		if env {
			have = append(have, c.Name)
		}
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("containers injected (-want +got):\n%s", diff)
	}
	if len(p.Spec.Volumes) != 1 {
		t.Errorf("volumes %v, want the preset's whatever the containers", p.Spec.Volumes)
	}
}
