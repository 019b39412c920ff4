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
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/internal/warnlimit"
)

// withMode returns a copy of a PodPreset or ClusterPodPreset fixture in
// another mode.
func withMode[T *settingsv1alpha1.PodPreset | *settingsv1alpha1.ClusterPodPreset](mode settingsv1alpha1.Mode, preset T) T {
	switch p := any(preset).(type) {
	case *settingsv1alpha1.PodPreset:
		p = p.DeepCopy()
		p.Spec.Mode = mode
		return any(p).(T)
	case *settingsv1alpha1.ClusterPodPreset:
		p = p.DeepCopy()
		p.Spec.Mode = mode
		return any(p).(T)
	}
	return preset
}

func TestUnenforcedModes(t *testing.T) {
	const (
		warn  = settingsv1alpha1.ModeWarn
		audit = settingsv1alpha1.ModeAudit
	)
	proxy := proxyPresetSpec()
	cases := []unenforcedModeCase{
		{
			name:     "a preset in Warn mode leaves the pod alone and says what it would set",
			presets:  []runtime.Object{withMode(warn, podPreset("proxy", securityS2, proxy))},
			warnings: []string{`PodPreset "proxy" is in Warn mode; enforced, it would set volume "certs", env "PROXY" in container "app", volumeMount at "/certs" in container "app" in Pod namespace/mypod`},
			audit:    `PodPreset "proxy" (Warn) would set volume "certs", env "PROXY" in container "app", volumeMount at "/certs" in container "app"`,
		},
		{
			name:    "a preset in Audit mode only leaves an audit annotation",
			presets: []runtime.Object{withMode(audit, clusterPodPreset("proxy", everything, everything, proxy))},
			audit:   `ClusterPodPreset "proxy" (Audit) would set volume "certs", env "PROXY" in container "app", volumeMount at "/certs" in container "app"`,
		},
		{
			name: "an enforced preset applies; the Warn one reports only what it adds to the result",
			presets: []runtime.Object{
				podPreset("enforced", securityS2, settingsv1alpha1.PodPresetSpec{Env: env("PROXY", "http://proxy")}),
				withMode(warn, podPreset("proxy", securityS2, proxy)),
			},
			applied:  []string{annotationPrefix + "/podpreset-enforced"},
			warnings: []string{`PodPreset "proxy" is in Warn mode; enforced, it would set volume "certs", volumeMount at "/certs" in container "app" in Pod namespace/mypod`},
			audit:    `PodPreset "proxy" (Warn) would set volume "certs", volumeMount at "/certs" in container "app"`,
		},
		{
			name:    "a preset in Warn mode whose items the pod already has says nothing",
			presets: []runtime.Object{withMode(warn, podPreset("same", securityS2, settingsv1alpha1.PodPresetSpec{Env: env("abc", "value2")}))},
		},
		{
			name: "a Warn preset that would replace the pod's value says so",
			presets: []runtime.Object{withMode(warn, podPreset("wins", securityS2,
				withPolicy(settingsv1alpha1.ConflictPolicyPresetWins, settingsv1alpha1.PodPresetSpec{Env: env("abc", "other")})))},
			warnings: []string{`PodPreset "wins" is in Warn mode; enforced, it would set env "abc" in init container "init", env "abc" in container "app" in Pod namespace/mypod`},
			audit:    `PodPreset "wins" (Warn) would set env "abc" in init container "init", env "abc" in container "app"`,
		},
		{
			name: "a Reject preset in Warn mode does not refuse the pod, it says it would",
			presets: []runtime.Object{withMode(warn, podPreset("strict", securityS2,
				withPolicy(settingsv1alpha1.ConflictPolicyReject, settingsv1alpha1.PodPresetSpec{Env: env("abc", "other")})))},
			warnings: []string{`PodPreset "strict" is in Warn mode; enforced, it would refuse the pod: `},
			audit:    `PodPreset "strict" (Warn) would refuse the pod: `,
		},
		{
			name: "a Warn preset conflicting with an enforced one would leave both out",
			presets: []runtime.Object{
				podPreset("enforced", securityS2, settingsv1alpha1.PodPresetSpec{Env: env("NEW", "1")}),
				withMode(audit, podPreset("other", securityS2, settingsv1alpha1.PodPresetSpec{Env: env("NEW", "2")})),
			},
			applied: []string{annotationPrefix + "/podpreset-enforced"},
			audit:   `PodPreset "other" (Audit) would leave every preset out of the pod, conflicting: `,
		},
		{
			name: "an enforced Reject still refuses the pod",
			presets: []runtime.Object{
				podPreset("strict", securityS2, withPolicy(settingsv1alpha1.ConflictPolicyReject, settingsv1alpha1.PodPresetSpec{Env: env("abc", "other")})),
				withMode(warn, podPreset("proxy", securityS2, proxy)),
			},
			refused: "conflictPolicy is Reject",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runUnenforcedMode(t, tc) })
	}
}

// proxyPresetSpec is a preset for the app container alone: an env var and
// a mounted volume.
func proxyPresetSpec() settingsv1alpha1.PodPresetSpec {
	return settingsv1alpha1.PodPresetSpec{
		Env:            env("PROXY", "http://proxy"),
		Volumes:        []corev1.Volume{emptyDir("certs")},
		VolumeMounts:   []corev1.VolumeMount{{Name: "certs", MountPath: "/certs"}},
		Containers:     &settingsv1alpha1.ContainerSelector{Names: []string{"app"}},
		InitContainers: &settingsv1alpha1.ContainerSelector{},
	}
}

// unenforcedModeCase is a case of TestUnenforcedModes.
type unenforcedModeCase struct {
	name    string
	presets []runtime.Object
	// applied lists the annotation keys the pod must end with.
	applied []string
	// warnings are the admission warnings, in order.
	warnings []string
	// audit is the audit annotation; empty when there must be none.
	audit string
	// refused is a substring of the Forbidden error; empty when admitted.
	refused string
}

// runUnenforcedMode admits testPod with tc's presets and checks what it
// got, refused or reported.
func runUnenforcedMode(t *testing.T, tc unenforcedModeCase) {
	p, recorder := newTestPlugin(t, tc.presets...)
	pod := testPod()
	before := pod.DeepCopy()
	ctx, warnings := withWarnings()
	annotations := map[string]string{}
	err := admitPod(t, p, pod, func(o *admitOptions) { o.ctx, o.audit = ctx, annotations })
	if tc.refused != "" {
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.refused) {
			t.Fatalf("error = %v, want Forbidden containing %q", err, tc.refused)
		}
		assertUnchanged(t, before, pod)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	assertNoEvent(t, recorder)
	if len(tc.applied) == 0 {
		assertUnchanged(t, before, pod)
	}
	assertApplied(t, pod, tc.applied)
	// Reported once, though the reinvocation tester admits twice.
	if len(*warnings) != len(tc.warnings) {
		t.Fatalf("warnings %q, want %d", *warnings, len(tc.warnings))
	}
	for i, w := range tc.warnings {
		if !strings.HasPrefix((*warnings)[i], w) {
			t.Errorf("warning %d = %q, want it to start with %q", i, (*warnings)[i], w)
		}
	}
	got, ok := annotations[UnenforcedAnnotationKey]
	if ok != (tc.audit != "") || !strings.HasPrefix(got, tc.audit) {
		t.Errorf("audit annotation %q (set: %v), want one starting with %q", got, ok, tc.audit)
	}
}

// The client gets a bounded number of warnings of bounded length; the
// audit annotation has everything.
func TestUnenforcedWarningsAreBounded(t *testing.T) {
	var presets []runtime.Object
	var manyEnv []string
	for i := range 20 {
		manyEnv = append(manyEnv, fmt.Sprintf("VAR%02d", i), "1")
	}
	for i := range warnlimit.Max + 2 {
		presets = append(presets, withMode(settingsv1alpha1.ModeWarn, podPreset(fmt.Sprintf("p%d", i), securityS2, settingsv1alpha1.PodPresetSpec{Env: env(manyEnv...)})))
	}
	p, _ := newTestPlugin(t, presets...)
	ctx, warnings := withWarnings()
	annotations := map[string]string{}
	if err := admitPod(t, p, testPod(), func(o *admitOptions) { o.ctx, o.audit = ctx, annotations }); err != nil {
		t.Fatal(err)
	}
	if len(*warnings) != warnlimit.Max+1 {
		t.Fatalf("%d warnings, want %d: %q", len(*warnings), warnlimit.Max+1, *warnings)
	}
	// Each preset would set 20 variables in each of two containers.
	if w := (*warnings)[0]; !strings.Contains(w, fmt.Sprintf("and %d more", 40-maxWarningChanges)) {
		t.Errorf("first warning %q does not fold what is over %d changes", w, maxWarningChanges)
	}
	if w := (*warnings)[warnlimit.Max]; !strings.Contains(w, "the audit log lists them") {
		t.Errorf("last warning %q does not point at the audit log", w)
	}
	audit := annotations[UnenforcedAnnotationKey]
	if n := strings.Count(audit, "(Warn)"); n != warnlimit.Max+2 {
		t.Errorf("audit annotation names %d presets, want %d: %q", n, warnlimit.Max+2, audit)
	}
	if !strings.Contains(audit, `env "VAR19" in container "app"`) {
		t.Errorf("audit annotation %q lacks the last change", audit)
	}
}
