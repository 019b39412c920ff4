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
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/compilertest"
	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
	"github.com/admitkit/admitkit/plugin/webhook/offline"
	"github.com/admitkit/admitkit/plugin/webhook/offline/defaults"
	settingsadmission "github.com/admitkit/admitkit/registry/settings/admission"
)

const diffNamespace = "fuzz"

// TestPresetsAgreeWithThePlugin generates presets, a namespace and a pod
// with the plugin's own fuzz generators, admits the pod once through the
// PodPreset plugin (the offline host, which runs it as the webhook host
// does) and once through the compiled policies (k8s.io/apiserver's own
// policy plugins), and wants the same pod or a refusal on both sides, the
// same warnings and the same audit annotations (the trials of presets in
// Warn and Audit mode), for every case whose presets all compiled.
func TestPresetsAgreeWithThePlugin(t *testing.T) {
	cases := 120
	if testing.Short() {
		cases = 30
	}
	for _, variant := range []struct {
		name string
		// compilable turns every preset into one the compiler takes on
		// its own: no mounts for PresetWins, and enforced unless trials.
		compilable, trials bool
	}{{"as generated", false, false}, {"compilable policies, enforced", true, false}, {"compilable policies and modes", true, true}} {
		t.Run(variant.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(45, 1))
			type testCase struct {
				n         int
				objs      []runtime.Object
				namespace *corev1.Namespace
				pod       *corev1.Pod
			}
			var all []testCase
			for n := 0; n < cases; n++ {
				data := make([]byte, 64)
				for i := range data {
					data[i] = byte(rng.IntN(256))
				}
				namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: diffNamespace, Labels: map[string]string{"team": []string{"a", "b"}[n%2]}}}
				g := &fuzzobjectstest.PodPresets{Source: fuzzobjectstest.NewSource(data), Namespace: diffNamespace,
					NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}
				objs := g.Presets()
				for _, obj := range objs {
					spec := specOf(obj)
					makeValid(spec)
					if variant.compilable {
						makeCompilable(spec, variant.trials)
					}
				}
				all = append(all, testCase{n, objs, namespace, g.Pod()})
			}
			// Both hosts spend most of a case waiting for their caches:
			// cases run side by side.
			var f figures
			work := make(chan testCase)
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for c := range work {
						agreeOn(t, c.n, &f, c.objs, c.namespace, c.pod)
					}
				}()
			}
			for _, c := range all {
				work <- c
			}
			close(work)
			wg.Wait()
			t.Logf("%d cases generated, %d valid, %d compiled whole (%d with at least one preset, %d with one in Warn or Audit mode), "+
				"%d agreed (%d changed by presets, %d warned, %d with a trial in the audit annotation, %d refused on both sides)",
				cases, f.valid, f.compiled, f.withPresets, f.withTrials, f.agreed, f.changed, f.warned, f.audited, f.refusedBoth)
			if f.withPresets == 0 {
				t.Error("no case with presets compiled")
			}
		})
	}
}

// figures count the cases; agreeOn adds to them from several goroutines.
type figures struct {
	mu                                                            sync.Mutex
	valid, compiled, withPresets, withTrials, agreed, refusedBoth int
	changed, warned, audited                                      int
}

func (f *figures) add(counter *int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*counter++
}

// agreeOn admits pod with the presets objs through the plugin and, when
// they all compile, through the policies, and counts the outcome in f. It
// only reports errors, so that it can run off the test's goroutine.
func agreeOn(t *testing.T, n int, f *figures, objs []runtime.Object, namespace *corev1.Namespace, pod *corev1.Pod) {
	src, in := sourcesOf(objs)
	want, wantWarnings, wantAudit, wantErr := admitWithPresetPlugin(in, namespace, pod)
	if input := (*offline.InputError)(nil); errors.As(wantErr, &input) {
		t.Errorf("case %d: a generated preset is invalid: %v", n, wantErr)
		return
	}
	f.add(&f.valid)
	result := compiler.Compile(src)
	if len(result.Refused) > 0 {
		return
	}
	f.add(&f.compiled)
	if len(result.Compiled) > 0 {
		f.add(&f.withPresets)
	}
	if slices.ContainsFunc(objs, func(obj runtime.Object) bool { m := specOf(obj).Mode; return m == "Warn" || m == "Audit" }) {
		f.add(&f.withTrials)
	}
	got, gotWarnings, gotAudit, gotErr := admitWithPolicies(result, namespace, pod)
	// The plugin's audit annotation, as a webhook named after its domain
	// returns it, is the policy's of the same name.
	pluginAudit := map[string]string{}
	for name, value := range wantAudit {
		pluginAudit[strings.Split(podpreset.UnenforcedAnnotationKey, "/")[0]+"/"+name] = value
	}
	if diff := cmp.Diff(pluginAudit, gotAudit, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("case %d: the audit annotations differ (-plugin +policies):\n%s\npresets: %s\npod: %s", n, diff, dump(src), dump(pod))
		return
	}
	if len(gotAudit) > 0 {
		f.add(&f.audited)
	}
	// A policy's warning is the plugin's, after a prefix naming the
	// policy; policies warn in no set order among themselves.
	if diff := cmp.Diff(sorted(wantWarnings), sorted(withoutPolicyPrefix(gotWarnings)), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("case %d: the warnings differ (-plugin +policies):\n%s\npresets: %s\npod: %s", n, diff, dump(src), dump(pod))
		return
	}
	if len(wantWarnings) > 0 {
		f.add(&f.warned)
	}
	switch {
	case wantErr != nil || gotErr != nil:
		if wantErr == nil || gotErr == nil || !strings.HasSuffix(gotErr.Error(), pluginMessage(wantErr)) {
			t.Errorf("case %d: plugin: %v\npolicies: %v\npresets: %s\npod: %s", n, wantErr, gotErr, dump(src), dump(pod))
			return
		}
		f.add(&f.refusedBoth)
	default:
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("case %d: the pods differ (-plugin +policies):\n%s\npresets: %s\npod: %s", n, diff, dump(src), dump(pod))
			return
		}
		for key := range want.Annotations {
			if strings.HasPrefix(key, "podpreset.admission.kubernetes.io/podpreset-") || strings.HasPrefix(key, "podpreset.admission.kubernetes.io/clusterpodpreset-") {
				f.add(&f.changed)
				break
			}
		}
	}
	f.add(&f.agreed)
}

func specOf(obj runtime.Object) *settingsv1alpha1.PodPresetSpec {
	if p, ok := obj.(*settingsv1alpha1.PodPreset); ok {
		return &p.Spec
	}
	return &obj.(*settingsv1alpha1.ClusterPodPreset).Spec.PodPresetSpec
}

// makeValid drops what the API refuses from a generated preset: a second
// volume of a name, a mount of a volume the preset lacks or at a path
// already mounted, a container named twice, an exclude with no names; and
// gives a preset left with no item an env var.
func makeValid(spec *settingsv1alpha1.PodPresetSpec) {
	volumes := map[string]bool{}
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool {
		dup := volumes[v.Name]
		volumes[v.Name] = true
		return dup
	})
	paths := map[string]bool{}
	spec.VolumeMounts = slices.DeleteFunc(spec.VolumeMounts, func(m corev1.VolumeMount) bool {
		drop := !volumes[m.Name] || paths[m.MountPath]
		paths[m.MountPath] = true
		return drop
	})
	for _, sel := range []*settingsv1alpha1.ContainerSelector{spec.Containers, spec.InitContainers} {
		if sel == nil {
			continue
		}
		slices.Sort(sel.Names)
		sel.Names = slices.Compact(sel.Names)
		if len(sel.Names) == 0 {
			sel.Exclude = false
		}
	}
	if len(spec.Env)+len(spec.EnvFrom)+len(spec.Volumes)+len(spec.VolumeMounts) == 0 {
		spec.Env = []corev1.EnvVar{{Name: "E0", Value: "v0"}}
	}
}

// makeCompilable makes a generated preset one the compiler takes: no
// mounts in a PresetWins preset, and Enforce mode unless trials.
func makeCompilable(spec *settingsv1alpha1.PodPresetSpec, trials bool) {
	if !trials {
		spec.Mode = ""
	}
	if spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyPresetWins {
		spec.VolumeMounts = nil
		if len(spec.Env)+len(spec.EnvFrom)+len(spec.Volumes) == 0 {
			spec.Env = []corev1.EnvVar{{Name: "E0", Value: "v0"}}
		}
	}
}

// policyPrefix is what kube-apiserver puts before a policy's warning.
var policyPrefix = regexp.MustCompile(`^Validation failed for ValidatingAdmissionPolicy '[^']*' with binding '[^']*': `)

func withoutPolicyPrefix(warnings []string) []string {
	out := make([]string, len(warnings))
	for i, w := range warnings {
		out[i] = policyPrefix.ReplaceAllString(w, "")
	}
	return out
}

func sorted(ss []string) []string { return slices.Sorted(slices.Values(ss)) }

// pluginMessage is the plugin's refusal without the status's prefix
// (`pods "fuzz" is forbidden: `), which the policy's denial shares.
func pluginMessage(err error) string {
	_, msg, _ := strings.Cut(err.Error(), "is forbidden: ")
	return msg
}

// sourcesOf returns the presets as the compiler and the plugin's host take
// them. Of two with the same kind and name the later is kept, as the API
// keeps it after an update.
func sourcesOf(objs []runtime.Object) (compiler.Sources, offline.Inputs) {
	var src compiler.Sources
	var in offline.Inputs
	kept := map[string]int{}
	for i, obj := range objs {
		accessor := obj.(metav1.Object)
		accessor.SetResourceVersion(fmt.Sprint(i + 1))
		kept[fmt.Sprintf("%T/%s", obj, accessor.GetName())] = i
	}
	for i, obj := range objs {
		if kept[fmt.Sprintf("%T/%s", obj, obj.(metav1.Object).GetName())] != i {
			continue
		}
		switch p := obj.(type) {
		case *settingsv1alpha1.PodPreset:
			src.PodPresets = append(src.PodPresets, *p)
			in.Presets = append(in.Presets, p)
		case *settingsv1alpha1.ClusterPodPreset:
			src.ClusterPodPresets = append(src.ClusterPodPresets, *p)
			in.ClusterPresets = append(in.ClusterPresets, p)
		}
	}
	return src, in
}

// admitWithPresetPlugin admits pod through the PodPreset plugin, as the webhook
// host runs it. An error is a refusal, or an *offline.InputError for a
// preset the API would refuse.
func admitWithPresetPlugin(in offline.Inputs, namespace *corev1.Namespace, pod *corev1.Pod) (*corev1.Pod, []string, map[string]string, error) {
	registry := admission.NewPlugins()
	plugin.RegisterAllAdmissionPlugins(registry)
	settingsadmission.Register(registry, nil)
	gate := featuregate.NewFeatureGate()
	if err := noderestriction.AddFeatureGates(gate); err != nil {
		return nil, nil, nil, err
	}
	in.Namespaces = []*corev1.Namespace{namespace}
	a, err := offline.New(context.Background(), offline.Options{Inputs: in, Plugins: registry, FeatureGates: gate,
		EffectiveVersion: utilcompatibility.DefaultBuildEffectiveVersion(), Defaulter: defaults.NewScheme()})
	if err != nil {
		return nil, nil, nil, err
	}
	defer a.Close()
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return nil, nil, nil, err
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	res, err := a.Admit(context.Background(), u, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if res.Refusal != nil {
		return nil, nil, nil, errors.New(res.Refusal.Message)
	}
	out := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(res.Object.Object, out); err != nil {
		return nil, nil, nil, err
	}
	out.TypeMeta = metav1.TypeMeta{}
	return out, res.Warnings, res.AuditAnnotations, nil
}

// admitWithPolicies admits pod through result's policies. An error is a
// refusal, or the runner's own failure.
func admitWithPolicies(result compiler.Result, namespace *corev1.Namespace, pod *corev1.Pod) (*corev1.Pod, []string, map[string]string, error) {
	r, err := compilertest.New(result, namespace)
	if err != nil {
		return nil, nil, nil, err
	}
	defer r.Close()
	obj, warnings, annotations, err := r.Admit(context.Background(), pod, admission.Create, namespace.Name)
	// The policy plugins refuse requests until they have loaded the
	// policies, as kube-apiserver's do; under load that can outlast the
	// runner's start. Clients retry such a refusal, and so does the test.
	for tries := 0; err != nil && strings.Contains(err.Error(), "not yet ready to handle request") && tries < 100; tries++ {
		time.Sleep(50 * time.Millisecond)
		obj, warnings, annotations, err = r.Admit(context.Background(), pod, admission.Create, namespace.Name)
	}
	if err != nil {
		return nil, warnings, annotations, err
	}
	out, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil, nil, fmt.Errorf("the runner returned a %T", obj)
	}
	out.TypeMeta = metav1.TypeMeta{}
	return out, warnings, annotations, nil
}

// TestPresetCasesAgreeWithThePlugin runs what the generators never make
// through both sides: mirror pods, excluded pods, a pod named by its
// generateName refused by a Reject preset, a namespace the
// ClusterPodPreset does not select.
func TestPresetCasesAgreeWithThePlugin(t *testing.T) {
	reject := database()
	reject.Spec.ConflictPolicy = settingsv1alpha1.ConflictPolicyReject
	proxy := clusterPreset("proxy", "")
	frontend := func(edit func(*corev1.Pod)) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: map[string]string{"role": "frontend"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}, {Name: "istio-proxy", Image: "proxy"}}}}
		edit(pod)
		return pod
	}
	winner := clusterPreset("proxy", settingsv1alpha1.ConflictPolicyPresetWins)
	winner.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}
	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a"}}}
	noTeam := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	for _, tt := range []struct {
		name      string
		presets   []runtime.Object
		namespace *corev1.Namespace
		pod       *corev1.Pod
		changed   bool
		refused   bool
	}{{
		name:      "the README's preset and a cluster preset",
		presets:   []runtime.Object{ptr.To(database()), &proxy},
		namespace: team,
		pod:       frontend(func(*corev1.Pod) {}),
		changed:   true,
	}, {
		name:      "a namespace the cluster preset does not select",
		presets:   []runtime.Object{&proxy},
		namespace: noTeam,
		pod:       frontend(func(*corev1.Pod) {}),
	}, {
		name:      "a mirror pod",
		presets:   []runtime.Object{ptr.To(database()), &proxy},
		namespace: team,
		pod:       frontend(func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }),
	}, {
		name:      "an excluded pod",
		presets:   []runtime.Object{ptr.To(database()), &proxy},
		namespace: team,
		pod: frontend(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"podpreset.admission.kubernetes.io/exclude": "true", "keep": "me"}
		}),
	}, {
		name:      "exclude is only ever true",
		presets:   []runtime.Object{ptr.To(database())},
		namespace: team,
		pod: frontend(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"podpreset.admission.kubernetes.io/exclude": "True"}
		}),
		changed: true,
	}, {
		name:      "a PresetWins preset replaces the pod's first item and drops the others that differ",
		presets:   []runtime.Object{&winner},
		namespace: team,
		pod: frontend(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "HTTPS_PROXY", Value: "x"}, {Name: "B", Value: "2"},
				{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}, {Name: "HTTPS_PROXY", Value: "y"}}
			p.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}),
		changed: true,
	}, {
		name:      "a preset whose volume differs from a PresetWins preset's conflicts with it",
		presets:   []runtime.Object{ptr.To(database()), &winner},
		namespace: team,
		pod:       frontend(func(*corev1.Pod) {}),
	}, {
		name:      "a pod named by generateName, refused by a Reject preset",
		presets:   []runtime.Object{&reject},
		namespace: team,
		pod: frontend(func(p *corev1.Pod) {
			p.Name, p.GenerateName = "", "web-"
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PORT", Value: "5432"}}
			p.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "tmp", MountPath: "/cache"}}
			p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}),
		refused: true,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			var f figures
			agreeOn(t, 0, &f, tt.presets, tt.namespace, tt.pod)
			if f.agreed != 1 {
				t.Fatalf("the sides disagree: %d of 1 agreed", f.agreed)
			}
			if changed := f.changed == 1; changed != tt.changed {
				t.Errorf("presets changed the pod: %v, want %v", changed, tt.changed)
			}
			if refused := f.refusedBoth == 1; refused != tt.refused {
				t.Errorf("refused: %v, want %v", refused, tt.refused)
			}
		})
	}
}

// TestPresetTrialsAgreeWithThePlugin runs through both sides the trials
// of presets in Warn and Audit mode that the generators seldom make: more
// warnings than the plugin sends, more changes than a warning lists, each
// kind of outcome, a trial that fails as the enforced presets fail, a pod
// the enforced presets refuse, items a pod holds twice, and a pod named by
// its generateName. Each case also wants the plugin to say what it tests.
func TestPresetTrialsAgreeWithThePlugin(t *testing.T) {
	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a"}}}
	env := func(pairs ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, corev1.EnvVar{Name: pairs[i], Value: pairs[i+1]})
		}
		return out
	}
	pod := func(edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: map[string]string{"role": "frontend"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
		edit(p)
		return p
	}
	preset := func(name string, mode settingsv1alpha1.Mode, policy settingsv1alpha1.ConflictPolicy, items []corev1.EnvVar) *settingsv1alpha1.PodPreset {
		p := tracing(mode, name)
		p.Spec.ConflictPolicy, p.Spec.Env = policy, items
		return &p
	}
	var many []runtime.Object
	for i := range 7 {
		many = append(many, preset(fmt.Sprintf("try%d", i), settingsv1alpha1.ModeWarn, "", env(fmt.Sprintf("T%d", i), "x")))
	}
	var ten []string
	for i := range 10 {
		ten = append(ten, fmt.Sprintf("V%d", i), "x")
	}
	for _, tt := range []struct {
		name    string
		presets []runtime.Object
		pod     *corev1.Pod
		// says is in the plugin's audit annotation or a warning of its;
		// "" wants neither.
		says    string
		refused bool
	}{{
		name:    "more presets in Warn mode than warnings sent",
		presets: many,
		pod:     pod(func(*corev1.Pod) {}),
		says:    "more presets in Warn mode would change Pod shop/web: the audit log lists them",
	}, {
		name:    "more changes than a warning lists",
		presets: []runtime.Object{preset("wide", settingsv1alpha1.ModeWarn, "", env(ten...))},
		pod:     pod(func(*corev1.Pod) {}),
		says:    `env "V7" in container "app" and 2 more in Pod shop/web`,
	}, {
		name:    "a Reject preset in Audit mode would refuse the pod",
		presets: []runtime.Object{preset("strict", settingsv1alpha1.ModeAudit, settingsv1alpha1.ConflictPolicyReject, env("DB_PORT", "6379"))},
		pod:     pod(func(p *corev1.Pod) { p.Spec.Containers[0].Env = env("DB_PORT", "5432") }),
		says:    `PodPreset "strict" (Audit) would refuse the pod: PodPreset "strict": env "DB_PORT" conflicts with the one in container "app"`,
	}, {
		name: "a preset in Warn mode would leave every preset out",
		presets: []runtime.Object{preset("database", "", "", env("DB_HOST", "db")),
			preset("port", settingsv1alpha1.ModeWarn, "", env("DB_PORT", "6379"))},
		pod:  pod(func(p *corev1.Pod) { p.Spec.Containers[0].Env = env("DB_PORT", "5432") }),
		says: `would leave every preset out of the pod, conflicting: PodPreset "port": env "DB_PORT" conflicts with the one in container "app"`,
	}, {
		name: "a trial that fails as the enforced presets fail says nothing",
		presets: []runtime.Object{preset("database", "", "", env("DB_PORT", "6379")),
			preset("tracing", settingsv1alpha1.ModeWarn, "", env("OTEL", "on"))},
		pod: pod(func(p *corev1.Pod) { p.Spec.Containers[0].Env = env("DB_PORT", "5432") }),
	}, {
		name: "a trial that fails more than the enforced presets names every conflict",
		presets: []runtime.Object{preset("database", "", "", env("DB_PORT", "6379")),
			preset("tracing", settingsv1alpha1.ModeWarn, "", env("OTEL", "on"))},
		pod:  pod(func(p *corev1.Pod) { p.Spec.Containers[0].Env = env("DB_PORT", "5432", "OTEL", "off") }),
		says: `[PodPreset "database": env "DB_PORT" conflicts with the one in container "app", PodPreset "tracing": env "OTEL" conflicts`,
	}, {
		name: "a pod the enforced presets refuse is tried by none",
		presets: []runtime.Object{preset("database", "", settingsv1alpha1.ConflictPolicyReject, env("DB_PORT", "6379")),
			preset("tracing", settingsv1alpha1.ModeWarn, "", env("OTEL", "on"))},
		pod:     pod(func(p *corev1.Pod) { p.Spec.Containers[0].Env = env("DB_PORT", "5432") }),
		refused: true,
	}, {
		name: "a PresetWins preset in Warn mode takes the place of items the pod holds twice",
		presets: []runtime.Object{preset("database", "", "", env("DB_HOST", "db")),
			preset("winner", settingsv1alpha1.ModeWarn, settingsv1alpha1.ConflictPolicyPresetWins, env("A", "3"))},
		pod:  pod(func(p *corev1.Pod) { p.Spec.Containers[0].Env = env("A", "1", "B", "1", "A", "3", "B", "2", "A", "2") }),
		says: `PodPreset "winner" (Warn) would set env "A" in container "app", env "A" in container "app", env "B" in container "app"`,
	}, {
		name: "a PodWins preset in Audit mode whose items the enforced presets set says nothing",
		presets: []runtime.Object{preset("database", "", "", env("DB_HOST", "db")),
			preset("loser", settingsv1alpha1.ModeAudit, settingsv1alpha1.ConflictPolicyPodWins, env("DB_HOST", "other"))},
		pod: pod(func(*corev1.Pod) {}),
	}, {
		name: "a PodWins preset in Audit mode after a PodWins enforced one with its key says nothing",
		presets: []runtime.Object{preset("database", "", settingsv1alpha1.ConflictPolicyPodWins, env("DB_HOST", "db")),
			preset("loser", settingsv1alpha1.ModeAudit, settingsv1alpha1.ConflictPolicyPodWins, env("DB_HOST", "other", "DB_USER", "app"))},
		pod:  pod(func(*corev1.Pod) {}),
		says: `PodPreset "loser" (Audit) would set env "DB_USER" in container "app"`,
	}, {
		name:    "a pod named by its generateName",
		presets: []runtime.Object{preset("tracing", settingsv1alpha1.ModeWarn, "", env("OTEL", "on"))},
		pod:     pod(func(p *corev1.Pod) { p.Name, p.GenerateName = "", "web-" }),
		says:    `PodPreset "tracing" is in Warn mode; enforced, it would set env "OTEL" in container "app" in Pod shop/web-*`,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			_, in := sourcesOf(tt.presets)
			_, warnings, audit, _ := admitWithPresetPlugin(in, team, tt.pod)
			said := strings.Join(append(warnings, audit["unenforced-presets"]), "\n")
			if tt.says == "" && audit["unenforced-presets"] != "" || !strings.Contains(said, tt.says) {
				t.Fatalf("the plugin said %q, want %q", said, tt.says)
			}
			var f figures
			agreeOn(t, 0, &f, tt.presets, team, tt.pod)
			if f.compiled != 1 || f.agreed != 1 {
				t.Fatalf("compiled whole %d of 1, the sides agree on %d of 1", f.compiled, f.agreed)
			}
			if refused := f.refusedBoth == 1; refused != tt.refused {
				t.Errorf("refused: %v, want %v", refused, tt.refused)
			}
		})
	}
}
