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
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// Upstream: a conflicting preset of another namespace is not even looked at.
func TestAdmitConflictWithDifferentNamespaceShouldDoNothing(t *testing.T) {
	pp := podPreset("hello", securityS2, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "abc", Value: "value"}}})
	pp.Namespace = "othernamespace"
	p, recorder := newTestPlugin(t, pp)
	pod := testPod()
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	assertUnchanged(t, testPod(), pod)
	assertNoEvent(t, recorder)
}

func TestAdmitConflictWithNonMatchingLabelsShouldNotError(t *testing.T) {
	p, recorder := newTestPlugin(t, podPreset("hello", securityS3, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "abc", Value: "value"}}}))
	pod := testPod()
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	assertUnchanged(t, testPod(), pod)
	assertNoEvent(t, recorder)
}

// All or nothing: a conflict in one item leaves the whole pod as it was, no
// annotation included, and the pod is admitted.
func TestAdmitConflictShouldNotModifyPod(t *testing.T) {
	p, recorder := newTestPlugin(t, podPreset("hello", securityS2, settingsv1alpha1.PodPresetSpec{
		Volumes: []corev1.Volume{emptyDir("vol")},
		Env:     []corev1.EnvVar{{Name: "abc", Value: "value"}, {Name: "ABC", Value: "value"}},
	}))
	pod := testPod()
	ctx, warnings := withWarnings()
	if err := admitPod(t, p, pod, func(o *admitOptions) { o.ctx = ctx }); err != nil {
		t.Fatal(err)
	}
	assertUnchanged(t, testPod(), pod)
	want := `pod presets not applied to Pod namespace/mypod because they conflict (none of PodPreset "hello" was applied): [PodPreset "hello": env "abc" conflicts with the one in init container "init"`
	if len(*warnings) == 0 || !strings.HasPrefix((*warnings)[0], want) {
		t.Errorf("warnings = %q, want one starting %q", *warnings, want)
	}
	for _, item := range []string{`env "ABC" conflicts with the one in container "app"`, `init container "init"`} {
		if !strings.Contains((*warnings)[0], item) {
			t.Errorf("warning %q does not name %s", (*warnings)[0], item)
		}
	}
	event := nextEvent(t, recorder)
	if !strings.HasPrefix(event, "Warning PodPresetConflict pod presets not applied to Pod namespace/mypod") {
		t.Errorf("event = %q", event)
	}
}

func TestAdmit(t *testing.T) {
	pp := podPreset("hello", securityS2, settingsv1alpha1.PodPresetSpec{
		Volumes:      []corev1.Volume{emptyDir("vol")},
		VolumeMounts: []corev1.VolumeMount{{Name: "vol", MountPath: "/vol"}},
		Env:          []corev1.EnvVar{{Name: "abcd", Value: "value"}, {Name: "ABC", Value: "value"}},
		EnvFrom:      []corev1.EnvFromSource{configMapEnv("abc", ""), configMapEnv("abc", "pre_")},
	})
	p, recorder := newTestPlugin(t, pp)
	pod := testPod()
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "abc", Value: "value2"}, {Name: "ABCD", Value: "value3"}}
	pod.Spec.InitContainers = nil
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	wantEnv := []corev1.EnvVar{{Name: "abc", Value: "value2"}, {Name: "ABCD", Value: "value3"}, {Name: "abcd", Value: "value"}, {Name: "ABC", Value: "value"}}
	if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(pp.Spec.EnvFrom, c.EnvFrom); diff != "" {
		t.Errorf("envFrom (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(pp.Spec.VolumeMounts, c.VolumeMounts); diff != "" {
		t.Errorf("volumeMounts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(pp.Spec.Volumes, pod.Spec.Volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	if got := pod.Annotations["podpreset.admission.kubernetes.io/podpreset-hello"]; got != "10hello" {
		t.Errorf("applied annotation = %q, want the preset's resourceVersion 10hello", got)
	}
	assertNoEvent(t, recorder)
}

func TestAdmitMirrorPod(t *testing.T) {
	p, _ := newTestPlugin(t, podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{
		Volumes: []corev1.Volume{emptyDir("vol")}, Env: []corev1.EnvVar{{Name: "A"}}, EnvFrom: []corev1.EnvFromSource{configMapEnv("abc", "")},
	}))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mirror", Namespace: testNamespace, Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "mirror"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
	}
	want := pod.DeepCopy()
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	assertUnchanged(t, want, pod)
}

func TestExclusion(t *testing.T) {
	p, _ := newTestPlugin(t, podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "A", Value: "a"}}}))
	for value, excluded := range map[string]bool{"true": true, "True": false, "yes": false, "": false} {
		t.Run(fmt.Sprintf("exclude=%q", value), func(t *testing.T) {
			pod := testPod()
			pod.Annotations = map[string]string{ExcludeAnnotation: value}
			want := pod.DeepCopy()
			if err := admitPod(t, p, pod); err != nil {
				t.Fatal(err)
			}
			if changed := !cmp.Equal(want, pod); changed == excluded {
				t.Errorf("pod changed = %v, want %v", changed, !excluded)
			}
		})
	}
}

// A pod sent without metadata.namespace gets the presets of the request's
// namespace and no other (kubernetes#49141).
func TestAdmitEmptyPodNamespace(t *testing.T) {
	elsewhere := podPreset("hello", securityS2, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "X", Value: "x"}}})
	elsewhere.Namespace = "different"
	p, _ := newTestPlugin(t, elsewhere)
	pod := testPod()
	pod.Namespace = ""
	want := pod.DeepCopy()
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	assertUnchanged(t, want, pod)

	// And the request's namespace does apply.
	here := elsewhere.DeepCopy()
	here.Namespace = testNamespace
	p, _ = newTestPlugin(t, here)
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Annotations[podPresetAnnotationPrefix+"hello"] == "" {
		t.Error("the request namespace's preset was not applied to a pod without metadata.namespace")
	}
}

func TestOnlyPodCreatesAreTouched(t *testing.T) {
	p, _ := newTestPlugin(t, podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "X", Value: "x"}}}))
	cases := []struct {
		name        string
		resource    string
		subresource string
		op          admission.Operation
	}{
		{name: "update", resource: "pods", op: admission.Update},
		{name: "status", resource: "pods", subresource: "status", op: admission.Create},
		{name: "ephemeral containers", resource: "pods", subresource: "ephemeralcontainers", op: admission.Update},
		{name: "another resource", resource: "replicasets", op: admission.Create},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			attrs := admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), testNamespace, pod.Name,
				corev1.SchemeGroupVersion.WithResource(tc.resource), tc.subresource, tc.op, nil, false, &user.DefaultInfo{})
			if err := p.Admit(context.Background(), attrs, nil); err != nil {
				t.Fatal(err)
			}
			assertUnchanged(t, testPod(), pod)
		})
	}
	if p.Handles(admission.Update) || !p.Handles(admission.Create) {
		t.Error("the plugin should handle CREATE only")
	}
}

func TestNotAPod(t *testing.T) {
	p, _ := newTestPlugin(t, podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "X", Value: "x"}}}))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: testNamespace}}
	err := admitPod(t, p, cm)
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "Resource was marked with kind Pod but was unable to be converted") {
		t.Fatalf("got %v, want a BadRequest", err)
	}
}

// Every container and init container gets the same items, restartable
// sidecars included; ephemeral containers never do.
func TestAllContainersButEphemeral(t *testing.T) {
	pp := podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{
		Volumes:      []corev1.Volume{emptyDir("shared")},
		VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}},
		Env:          []corev1.EnvVar{{Name: "X", Value: "x"}},
		EnvFrom:      []corev1.EnvFromSource{configMapEnv("cm", "")},
	})
	p, _ := newTestPlugin(t, pp)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: testNamespace},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "setup"},
				{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
			},
			Containers:          []corev1.Container{{Name: "a"}, {Name: "b"}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
		},
	}
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if !cmp.Equal(c.Env, pp.Spec.Env) || !cmp.Equal(c.EnvFrom, pp.Spec.EnvFrom) || !cmp.Equal(c.VolumeMounts, pp.Spec.VolumeMounts) {
			t.Errorf("container %q did not get the preset: %+v", c.Name, c)
		}
	}
	if e := pod.Spec.EphemeralContainers[0]; e.Env != nil || e.EnvFrom != nil || e.VolumeMounts != nil {
		t.Errorf("ephemeral container was injected: %+v", e)
	}
}

// A conflict on envFrom leaves the container's envFrom alone; upstream
// replaced it with an empty list.
func TestEnvFromConflictKeepsTheContainersEnvFrom(t *testing.T) {
	optional := configMapEnv("cm", "")
	optional.ConfigMapRef.Optional = ptr.To(true)
	p, recorder := newTestPlugin(t, podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{EnvFrom: []corev1.EnvFromSource{optional}}))
	pod := testPod()
	pod.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{configMapEnv("cm", "")}
	want := pod.DeepCopy()
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	assertUnchanged(t, want, pod)
	if event := nextEvent(t, recorder); !strings.Contains(event, `envFrom configMapRef "cm" conflicts with the one in container "app"`) {
		t.Errorf("event = %q", event)
	}
}

// Two presets carrying one envFrom source add it once (upstream added it
// twice).
func TestEnvFromNotDuplicatedAcrossPresets(t *testing.T) {
	spec := settingsv1alpha1.PodPresetSpec{EnvFrom: []corev1.EnvFromSource{configMapEnv("cm", "")}}
	p, _ := newTestPlugin(t, podPreset("a", everything, spec), podPreset("b", everything, spec))
	pod := testPod()
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	if got := pod.Spec.Containers[0].EnvFrom; len(got) != 1 {
		t.Errorf("envFrom = %v, want the one source once", got)
	}
}

// Presets apply in name order whatever order the cache returns them in.
func TestPresetsApplyInNameOrder(t *testing.T) {
	var objs []runtime.Object
	for _, name := range []string{"delta", "alpha", "charlie", "bravo"} {
		objs = append(objs, podPreset(name, everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: strings.ToUpper(name), Value: name}}}))
	}
	objs = append(objs, clusterPodPreset("aaa-cluster", everything, everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "CLUSTER", Value: "c"}}}))
	for i := 0; i < 10; i++ {
		p, _ := newTestPlugin(t, objs...)
		pod := testPod()
		pod.Spec.InitContainers = nil
		if err := admitPod(t, p, pod); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range pod.Spec.Containers[0].Env[2:] {
			names = append(names, e.Name)
		}
		// Namespaced presets by name, then cluster presets by name.
		if got, want := strings.Join(names, ","), "ALPHA,BRAVO,CHARLIE,DELTA,CLUSTER"; got != want {
			t.Fatalf("env order = %s, want %s", got, want)
		}
	}
}

// A preset is defaulted like the pod before it is compared: the pod's
// secret volume has defaultMode 0644 from kube-apiserver, the preset's has
// none written, and they are still the same volume.
func TestPresetsAreDefaultedBeforeComparing(t *testing.T) {
	pp := podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{
		Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}},
		Env:     []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
	})
	p, recorder := newTestPlugin(t, pp)
	pod := testPod()
	pod.Spec.Volumes = []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To[int32](0o644)}}}}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	assertNoEvent(t, recorder)
	if len(pod.Spec.Volumes) != 1 || len(pod.Spec.Containers[0].Env) != 1 {
		t.Errorf("identical items were not recognised: volumes %v, env %v", pod.Spec.Volumes, pod.Spec.Containers[0].Env)
	}
	if pod.Annotations[podPresetAnnotationPrefix+"hello"] == "" {
		t.Error("the preset was not recorded as applied")
	}
	// The cached preset itself is never changed.
	if pp.Spec.Volumes[0].Secret.DefaultMode != nil {
		t.Error("defaulting changed the cached preset")
	}
}

// The annotation is set even when the preset brought nothing new.
func TestAnnotationWhenNothingIsNew(t *testing.T) {
	p, _ := newTestPlugin(t, podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "abc", Value: "value2"}}}))
	pod := testPod()
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers[0].Env) != 2 || pod.Annotations[podPresetAnnotationPrefix+"hello"] != "10hello" {
		t.Errorf("env %v, annotations %v", pod.Spec.Containers[0].Env, pod.Annotations)
	}
}

func TestClusterPodPresets(t *testing.T) {
	teamA := metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	env := func(name string) settingsv1alpha1.PodPresetSpec {
		return settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: name, Value: "v"}}}
	}
	cases := []struct {
		name        string
		objs        []runtime.Object
		wantApplied []string
		wantErr     string
	}{
		{name: "empty namespace selector is every namespace",
			objs:        []runtime.Object{clusterPodPreset("all", everything, securityS2, env("ALL"))},
			wantApplied: []string{clusterPodPresetAnnotationPrefix + "all"}},
		{name: "namespace selector matches",
			objs:        []runtime.Object{namespace(testNamespace, map[string]string{"team": "a"}), clusterPodPreset("team-a", teamA, everything, env("A"))},
			wantApplied: []string{clusterPodPresetAnnotationPrefix + "team-a"}},
		{name: "namespace selector does not match",
			objs: []runtime.Object{namespace(testNamespace, map[string]string{"team": "b"}), clusterPodPreset("team-a", teamA, everything, env("A"))}},
		{name: "pod selector does not match",
			objs: []runtime.Object{namespace(testNamespace, map[string]string{"team": "a"}), clusterPodPreset("team-a", teamA, securityS3, env("A"))}},
		{name: "alongside a namespaced preset",
			objs: []runtime.Object{
				namespace(testNamespace, map[string]string{"team": "a"}),
				clusterPodPreset("team-a", teamA, everything, env("A")),
				podPreset("local", everything, env("LOCAL")),
			},
			wantApplied: []string{clusterPodPresetAnnotationPrefix + "team-a", podPresetAnnotationPrefix + "local"}},
		{name: "conflicting with a namespaced preset applies neither",
			objs: []runtime.Object{
				clusterPodPreset("all", everything, everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "X", Value: "cluster"}}}),
				podPreset("local", everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "X", Value: "local"}}}),
			}},
		{name: "namespace found nowhere",
			objs:    []runtime.Object{clusterPodPreset("team-a", teamA, everything, env("A"))},
			wantErr: `looking up namespace "namespace" for ClusterPodPreset namespace selectors`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newTestPlugin(t, tc.objs...)
			pod := testPod()
			err := admitPod(t, p, pod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var applied []string
			for key := range pod.Annotations {
				applied = append(applied, key)
			}
			if diff := cmp.Diff(tc.wantApplied, applied, sortStrings); diff != "" {
				t.Errorf("applied presets (-want +got):\n%s", diff)
			}
		})
	}
}

var sortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
})

// A namespace newer than the cache is read from the API server.
func TestClusterPodPresetNamespaceFromTheServer(t *testing.T) {
	p, _ := newTestPlugin(t, clusterPodPreset("team-a", metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, everything,
		settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "A", Value: "a"}}}))
	if _, err := p.client.CoreV1().Namespaces().Create(context.Background(), namespace(testNamespace, map[string]string{"team": "a"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := testPod()
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Annotations[clusterPodPresetAnnotationPrefix+"team-a"] != "20team-a" {
		t.Errorf("annotations = %v", pod.Annotations)
	}
}

func TestDryRunConflictHasNoEvent(t *testing.T) {
	p, recorder := newTestPlugin(t, podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "abc", Value: "other"}}}))
	ctx, warnings := withWarnings()
	pod := testPod()
	if err := admitPod(t, p, pod, dryRun, func(o *admitOptions) { o.ctx = ctx }); err != nil {
		t.Fatal(err)
	}
	assertUnchanged(t, testPod(), pod)
	assertNoEvent(t, recorder)
	if len(*warnings) == 0 {
		t.Error("a dry run still warns its client")
	}
}

func TestGenerateNamePodIsNamedByItsPrefix(t *testing.T) {
	p, recorder := newTestPlugin(t, podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "abc", Value: "other"}}}))
	pod := testPod()
	pod.Name, pod.GenerateName = "", "web-5d8f-"
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	if event := nextEvent(t, recorder); !strings.Contains(event, "Pod namespace/web-5d8f-* because") {
		t.Errorf("event = %q", event)
	}
	if got := eventTarget(testNamespace, pod).Name; got != "web-5d8f" {
		t.Errorf("the Event is about a pod named %q, want the prefix web-5d8f", got)
	}
}

func TestStoredInvalidSelectorRejectsTheCreate(t *testing.T) {
	bad := podPreset("bad", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}},
		settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "A"}}})
	p, _ := newTestPlugin(t, bad)
	err := admitPod(t, p, testPod())
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `filtering pod presets failed: PodPreset "bad": spec.selector: "Near" is not a valid label selector operator`) {
		t.Fatalf("error = %v", err)
	}
	// Another namespace's pods are not held up by it.
	if err := admitPod(t, p, testPod(), inNamespace("other")); err != nil {
		t.Errorf("pod in another namespace: %v", err)
	}
}

func TestStoredInvalidNamespaceSelectorRejectsTheCreate(t *testing.T) {
	bad := clusterPodPreset("bad", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn}}},
		everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "A"}}})
	p, _ := newTestPlugin(t, bad)
	err := admitPod(t, p, testPod())
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `filtering cluster pod presets failed: ClusterPodPreset "bad": spec.namespaceSelector: values: must be non-empty`) {
		t.Fatalf("error = %v", err)
	}
}

// Deleting or changing a preset takes effect on the next pod.
func TestIndexFollowsUpdatesAndDeletes(t *testing.T) {
	pp := podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "A", Value: "1"}}})
	p, _ := newTestPlugin(t, pp)
	changed := pp.DeepCopy()
	changed.ResourceVersion = "11"
	changed.Spec.Env[0].Value = "2"
	p.index.upsert(changed)
	pod := testPod()
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	if got := pod.Spec.Containers[0].Env[2]; got.Value != "2" || pod.Annotations[podPresetAnnotationPrefix+"hello"] != "11" {
		t.Errorf("after update: env %v, annotations %v", got, pod.Annotations)
	}
	p.index.remove(cache.DeletedFinalStateUnknown{Key: "namespace/hello", Obj: changed})
	pod = testPod()
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	assertUnchanged(t, testPod(), pod)
}

// Before the caches have synced a create is refused with an error clients
// retry, never admitted without its presets.
func TestNotSyncedIsRetriable(t *testing.T) {
	p, _ := newTestPlugin(t, podPreset("hello", everything, settingsv1alpha1.PodPresetSpec{Env: []corev1.EnvVar{{Name: "X", Value: "x"}}}))
	synced := false
	p.synced = []cache.InformerSynced{func() bool { return synced }}
	pod := testPod()
	err := admitPod(t, p, pod)
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("error = %v, want ServiceUnavailable", err)
	}
	if delay, ok := apierrors.SuggestsClientDelay(err); !ok || delay != 1 {
		t.Errorf("retry delay = %d, %v; want 1 second", delay, ok)
	}
	assertUnchanged(t, testPod(), pod)

	synced = true
	if err := admitPod(t, p, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Annotations[podPresetAnnotationPrefix+"hello"] == "" {
		t.Error("preset not applied once synced")
	}
	// Mirror pods never wait for the cache.
	synced = false
	p.ready.Store(false)
	mirror := testPod()
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	if err := admitPod(t, p, mirror); err != nil {
		t.Errorf("mirror pod: %v", err)
	}
}

func assertUnchanged(t *testing.T, want, got *corev1.Pod) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod changed (-want +got):\n%s", diff)
	}
}

func assertNoEvent(t *testing.T, recorder *record.FakeRecorder) {
	t.Helper()
	select {
	case e := <-recorder.Events:
		t.Errorf("unexpected event %q", e)
	default:
	}
}

func nextEvent(t *testing.T, recorder *record.FakeRecorder) string {
	t.Helper()
	select {
	case e := <-recorder.Events:
		return e
	case <-time.After(time.Second):
		t.Fatal("no event recorded")
		return ""
	}
}

// warningRecorder collects the warnings a request's handler would send.
type warningRecorder struct{ warnings *[]string }

func (w warningRecorder) AddWarning(_, text string) { *w.warnings = append(*w.warnings, text) }

func withWarnings() (context.Context, *[]string) {
	var warnings []string
	return warning.WithWarningRecorder(context.Background(), warningRecorder{&warnings}), &warnings
}
