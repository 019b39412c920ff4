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
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
)

// dump is v as YAML, for a failure's message.
func dump(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v (%v)", v, err)
	}
	return "\n" + string(out)
}

// database is the PodPreset of the plugin's README.
func database() settingsv1alpha1.PodPreset {
	return settingsv1alpha1.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "database", Namespace: "shop", ResourceVersion: "7"},
		Spec: settingsv1alpha1.PodPresetSpec{
			Selector:     metav1.LabelSelector{MatchLabels: map[string]string{"role": "frontend"}},
			Env:          []corev1.EnvVar{{Name: "DB_PORT", Value: "6379"}},
			Volumes:      []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}},
		},
	}
}

// tracing is a preset of the README's kind, with its own env var, in
// mode.
func tracing(mode settingsv1alpha1.Mode, name string) settingsv1alpha1.PodPreset {
	return settingsv1alpha1.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", ResourceVersion: "9"},
		Spec: settingsv1alpha1.PodPresetSpec{
			Mode:     mode,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "frontend"}},
			Env:      []corev1.EnvVar{{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://collector.observability:4317"}},
		},
	}
}

func clusterPreset(name string, policy settingsv1alpha1.ConflictPolicy) settingsv1alpha1.ClusterPodPreset {
	return settingsv1alpha1.ClusterPodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "3"},
		Spec: settingsv1alpha1.ClusterPodPresetSpec{
			NamespaceSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpExists}}},
			PodPresetSpec: settingsv1alpha1.PodPresetSpec{
				Env:            []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}},
				ConflictPolicy: policy,
				Containers:     &settingsv1alpha1.ContainerSelector{Names: []string{"istio-proxy"}, Exclude: true},
			},
		},
	}
}

// TestPresetPolicies checks what the compiler makes of presets it takes:
// one mutating policy and its binding for all of them, a validating one
// only when a preset refuses pods, and every expression compiling with
// kube-apiserver's own CEL environment.
func TestPresetPolicies(t *testing.T) {
	for _, tt := range []struct {
		name           string
		src            compiler.Sources
		wantCompiled   []compiler.Source
		wantValidating bool
		// wantTrials wants the policy of the presets in Warn or Audit mode.
		wantTrials bool
	}{{
		name:         "the README's preset",
		src:          compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{database()}},
		wantCompiled: []compiler.Source{{Kind: "PodPreset", Namespace: "shop", Name: "database"}},
	}, {
		name: "namespaced before cluster, each by name",
		src: compiler.Sources{
			ClusterPodPresets: []settingsv1alpha1.ClusterPodPreset{clusterPreset("b-proxy", ""), clusterPreset("a-proxy", settingsv1alpha1.ConflictPolicySkipAll)},
			PodPresets:        []settingsv1alpha1.PodPreset{database()},
		},
		wantCompiled: []compiler.Source{{Kind: "PodPreset", Namespace: "shop", Name: "database"},
			{Kind: "ClusterPodPreset", Name: "a-proxy"}, {Kind: "ClusterPodPreset", Name: "b-proxy"}},
	}, {
		name: "Warn and Audit modes add the trial policy",
		src: compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{database(), tracing(settingsv1alpha1.ModeWarn, "tracing"),
			tracing(settingsv1alpha1.ModeAudit, "tracing-audit")}},
		wantCompiled: []compiler.Source{{Kind: "PodPreset", Namespace: "shop", Name: "database"},
			{Kind: "PodPreset", Namespace: "shop", Name: "tracing"}, {Kind: "PodPreset", Namespace: "shop", Name: "tracing-audit"}},
		wantTrials: true,
	}, {
		name:           "Reject adds the validating policy",
		src:            compiler.Sources{ClusterPodPresets: []settingsv1alpha1.ClusterPodPreset{clusterPreset("proxy", settingsv1alpha1.ConflictPolicyReject)}},
		wantCompiled:   []compiler.Source{{Kind: "ClusterPodPreset", Name: "proxy"}},
		wantValidating: true,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			r := compiler.Compile(tt.src)
			if len(r.Refused) > 0 {
				t.Fatalf("refused: %v", r.Refused)
			}
			if diff := cmp.Diff(tt.wantCompiled, r.Compiled); diff != "" {
				t.Errorf("compiled (-want +got):\n%s", diff)
			}
			if len(r.MutatingPolicies) != 1 || len(r.MutatingBindings) != 1 || r.MutatingBindings[0].Spec.PolicyName != r.MutatingPolicies[0].Name {
				t.Fatalf("want one mutating policy and its binding, got %s", dump(r))
			}
			compiles(t, &r.MutatingPolicies[0])
			// The warning of conflicts, and the refusal of Reject presets.
			want := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
			if tt.wantValidating {
				want = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Warn}
			}
			if tt.wantTrials {
				// The trials warn and write the plugin's audit annotation,
				// "<policy name>/<key>", and never refuse a pod.
				want = append(want, admissionregistrationv1.Warn)
				trials := r.ValidatingPolicies[len(r.ValidatingPolicies)-1]
				if key := trials.Name + "/" + trials.Spec.AuditAnnotations[0].Key; key != podpreset.UnenforcedAnnotationKey {
					t.Errorf("the trials' audit annotation is %s, want %s", key, podpreset.UnenforcedAnnotationKey)
				}
				if *trials.Spec.FailurePolicy != admissionregistrationv1.Ignore {
					t.Errorf("the trials' failurePolicy is %s, want Ignore", *trials.Spec.FailurePolicy)
				}
			}
			var got []admissionregistrationv1.ValidationAction
			for i, b := range r.ValidatingBindings {
				got = append(got, b.Spec.ValidationActions...)
				if b.Spec.PolicyName != r.ValidatingPolicies[i].Name {
					t.Errorf("binding %s binds %s, want %s", b.Name, b.Spec.PolicyName, r.ValidatingPolicies[i].Name)
				}
				validates(t, &r.ValidatingPolicies[i])
			}
			if !cmp.Equal(got, want) || len(r.ValidatingPolicies) != len(want) {
				t.Fatalf("validation actions %v, want %v: %s", got, want, dump(r))
			}
		})
	}
}

// compiles fails t unless every expression of policy compiles as
// kube-apiserver compiles it.
func compiles(t *testing.T, policy *admissionregistrationv1.MutatingAdmissionPolicy) {
	t.Helper()
	c := compilerWith(t, policy.Spec.Variables)
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true, HasPatchTypes: true}
	var errs []error
	for _, m := range policy.Spec.MatchConditions {
		errs = append(errs, c.CompileCondition([]plugincel.ExpressionAccessor{(*matchconditions.MatchCondition)(&m)}, opts, environment.StoredExpressions).CompilationErrors()...)
	}
	for _, m := range policy.Spec.Mutations {
		errs = append(errs, c.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, opts, environment.StoredExpressions).CompilationErrors()...)
	}
	for _, err := range errs {
		t.Errorf("%s: %v", policy.Name, err)
	}
}

func validates(t *testing.T, policy *admissionregistrationv1.ValidatingAdmissionPolicy) {
	t.Helper()
	c := compilerWith(t, policy.Spec.Variables)
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	for _, v := range policy.Spec.Validations {
		for _, err := range c.CompileCondition([]plugincel.ExpressionAccessor{
			&validating.ValidationCondition{Expression: v.Expression},
			&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression},
		}, opts, environment.StoredExpressions).CompilationErrors() {
			t.Errorf("%s: %v", policy.Name, err)
		}
	}
	for _, a := range policy.Spec.AuditAnnotations {
		for _, err := range c.CompileCondition([]plugincel.ExpressionAccessor{
			&validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression},
		}, opts, environment.StoredExpressions).CompilationErrors() {
			t.Errorf("%s: %v", policy.Name, err)
		}
	}
}

func compilerWith(t *testing.T, vars []admissionregistrationv1.Variable) *plugincel.CompositedCompiler {
	t.Helper()
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	accessors := make([]plugincel.NamedExpressionAccessor, len(vars))
	for i, v := range vars {
		accessors[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	c.CompileAndStoreVariables(accessors, opts, environment.StoredExpressions)
	for _, v := range vars {
		// A variable is compiled when it is first read: compile each
		// alone to name the one that does not.
		for _, err := range c.CompileCondition([]plugincel.ExpressionAccessor{&validating.Variable{Name: v.Name, Expression: v.Expression}}, opts, environment.StoredExpressions).CompilationErrors() {
			t.Errorf("variable %s: %v", v.Name, err)
		}
	}
	return c
}

// TestPresetRefusals checks what the compiler refuses, and that each
// refusal names the field.
func TestPresetRefusals(t *testing.T) {
	withPolicy := func(p settingsv1alpha1.PodPreset, policy settingsv1alpha1.ConflictPolicy) settingsv1alpha1.PodPreset {
		p.Spec.ConflictPolicy = policy
		return p
	}
	renamed := func(p settingsv1alpha1.PodPreset, namespace, name string) settingsv1alpha1.PodPreset {
		p.Namespace, p.Name = namespace, name
		return p
	}
	warned := database()
	warned.Name, warned.Spec.Mode = "trial", settingsv1alpha1.ModeWarn
	audited := database()
	audited.Name, audited.Spec.Mode = "audited", settingsv1alpha1.ModeAudit
	sized := database()
	sized.Spec.Volumes[0].EmptyDir.SizeLimit = ptr.To(resource.MustParse("1Gi"))
	badSelector := database()
	badSelector.Spec.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "role", Operator: "Near"}}}
	badCluster := clusterPreset("proxy", "")
	badCluster.Spec.Selector = badSelector.Spec.Selector
	sharing := database()
	sharing.Name = "port"
	sharing.Spec.Volumes, sharing.Spec.VolumeMounts = nil, nil
	sharing.Spec.Env = []corev1.EnvVar{{Name: "DB_PORT", Value: "6380"}}

	for _, tt := range []struct {
		name         string
		src          compiler.Sources
		wantRefused  map[string]string // "Kind namespace/name" to a part of its refusal
		wantCompiled int
	}{{
		name:        "PresetWins mounts are not compiled",
		src:         compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{withPolicy(database(), settingsv1alpha1.ConflictPolicyPresetWins)}},
		wantRefused: map[string]string{"PodPreset shop/database": `spec.volumeMounts: Forbidden: volumeMounts of a PresetWins preset are not compiled`},
	}, {
		name: "a preset in Warn mode sharing keys with an enforced one is refused, and takes it along",
		src:  compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{database(), warned}},
		wantRefused: map[string]string{
			"PodPreset shop/trial":    `spec.env[0]: Forbidden: name is also the name of PodPreset "database"'s spec.env[0], which is enforced`,
			"PodPreset shop/database": "can apply to the same pods as PodPreset shop/trial",
		},
	}, {
		name:         "a PodWins preset in Warn mode gives way to an enforced one's items",
		src:          compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{database(), withPolicy(warned, settingsv1alpha1.ConflictPolicyPodWins)}},
		wantCompiled: 2,
	}, {
		name: "a PodWins preset in Warn mode after a PodWins enforced one with its keys compiles",
		src: compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{withPolicy(database(), settingsv1alpha1.ConflictPolicyPodWins),
			withPolicy(warned, settingsv1alpha1.ConflictPolicyPodWins)}},
		wantCompiled: 2,
	}, {
		name: "a PodWins preset in Warn mode before a PodWins enforced one with its keys is refused: its items would go first",
		src: compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{withPolicy(database(), settingsv1alpha1.ConflictPolicyPodWins),
			withPolicy(renamed(warned, "shop", "a-trial"), settingsv1alpha1.ConflictPolicyPodWins)}},
		wantRefused: map[string]string{
			"PodPreset shop/a-trial":  `spec.env[0]: Forbidden: name is also the name of PodPreset "database"'s spec.env[0], which is enforced`,
			"PodPreset shop/database": "can apply to the same pods as PodPreset shop/a-trial",
		},
	}, {
		name:         "presets in Warn and Audit mode alone compile into the trial policy only",
		src:          compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{warned, audited}},
		wantCompiled: 2,
	}, {
		name: "a refused preset in Audit mode takes the presets it meets along",
		src:  compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{withPolicy(audited, settingsv1alpha1.ConflictPolicyPresetWins), renamed(database(), "shop", "other")}},
		wantRefused: map[string]string{
			"PodPreset shop/audited": `spec.volumeMounts: Forbidden`,
			"PodPreset shop/other":   "can apply to the same pods as PodPreset shop/audited",
		},
	}, {
		name: "a refused preset takes its namespace and the cluster presets with it, not other namespaces",
		src: compiler.Sources{
			PodPresets: []settingsv1alpha1.PodPreset{withPolicy(renamed(database(), "shop", "winner"), settingsv1alpha1.ConflictPolicyPresetWins),
				database(), renamed(database(), "other", "database")},
		},
		wantRefused: map[string]string{
			"PodPreset shop/winner":   `spec.volumeMounts: Forbidden`,
			"PodPreset shop/database": "can apply to the same pods as PodPreset shop/winner",
		},
		wantCompiled: 1,
	}, {
		name: "a refused cluster preset takes every preset with it",
		src: compiler.Sources{
			PodPresets:        []settingsv1alpha1.PodPreset{database(), renamed(database(), "other", "database")},
			ClusterPodPresets: []settingsv1alpha1.ClusterPodPreset{badCluster},
		},
		wantRefused: map[string]string{
			"ClusterPodPreset /proxy":  `spec.selector: Invalid value`,
			"PodPreset shop/database":  "can apply to the same pods as ClusterPodPreset proxy",
			"PodPreset other/database": "can apply to the same pods as ClusterPodPreset proxy",
		},
	}, {
		name:        "a quantity is compared by value",
		src:         compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{sized}},
		wantRefused: map[string]string{"PodPreset shop/database": "spec.volumes[0].emptyDir.sizeLimit: Forbidden"},
	}, {
		name:        "a selector that does not parse",
		src:         compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{badSelector}},
		wantRefused: map[string]string{"PodPreset shop/database": "spec.selector: Invalid value"},
	}, {
		name: "a Reject preset sharing a key with another preset",
		src:  compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{database(), withPolicy(sharing, settingsv1alpha1.ConflictPolicyReject)}},
		wantRefused: map[string]string{
			"PodPreset shop/port":     `spec.env[0]: Forbidden: name is also the name of PodPreset "database"'s spec.env[0]`,
			"PodPreset shop/database": "can apply to the same pods as PodPreset shop/port",
		},
	}, {
		name: "a Reject preset sharing a key with a PodWins preset, which gives way to it",
		src: compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{withPolicy(database(), settingsv1alpha1.ConflictPolicyPodWins),
			withPolicy(sharing, settingsv1alpha1.ConflictPolicyReject)}},
		wantCompiled: 2,
	}, {
		name: "PresetWins env and volumes compile",
		src: compiler.Sources{ClusterPodPresets: []settingsv1alpha1.ClusterPodPreset{clusterPreset("proxy", settingsv1alpha1.ConflictPolicyPresetWins)},
			PodPresets: []settingsv1alpha1.PodPreset{database()}},
		wantCompiled: 2,
	}, {
		name: "a Reject preset whose keys are its own",
		src: compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{withPolicy(database(), settingsv1alpha1.ConflictPolicyReject),
			renamed(withPolicy(sharing, settingsv1alpha1.ConflictPolicyReject), "other", "port")}},
		wantCompiled: 2,
	}, {
		name: "the later of two with one name is kept",
		src:  compiler.Sources{PodPresets: []settingsv1alpha1.PodPreset{database(), database()}},
		wantRefused: map[string]string{
			"PodPreset shop/database": "metadata.name: Duplicate value",
		},
		wantCompiled: 1,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			r := compiler.Compile(tt.src)
			got := map[string]string{}
			for _, refusal := range r.Refused {
				got[refusal.Source.Kind+" "+refusal.Source.Namespace+"/"+refusal.Source.Name] = refusal.Errs.ToAggregate().Error()
			}
			for key, want := range tt.wantRefused {
				if !strings.Contains(got[key], want) {
					t.Errorf("%s refused with %q, want it to say %q", key, got[key], want)
				}
			}
			if len(got) != len(tt.wantRefused) {
				t.Errorf("refused %v, want %d refusals", got, len(tt.wantRefused))
			}
			if len(r.Compiled) != tt.wantCompiled {
				t.Errorf("compiled %v, want %d", r.Compiled, tt.wantCompiled)
			}
			// Only enforced presets mutate.
			enforced := 0
			for _, p := range tt.src.PodPresets {
				if p.Spec.Mode == "" && slices.Contains(r.Compiled, compiler.Source{Kind: "PodPreset", Namespace: p.Namespace, Name: p.Name}) {
					enforced++
				}
			}
			for _, p := range tt.src.ClusterPodPresets {
				if p.Spec.Mode == "" && slices.Contains(r.Compiled, compiler.Source{Kind: "ClusterPodPreset", Name: p.Name}) {
					enforced++
				}
			}
			if (len(r.MutatingPolicies) > 0) != (enforced > 0) {
				t.Errorf("%d mutating policies for %d compiled enforced presets", len(r.MutatingPolicies), enforced)
			}
			for i := range r.MutatingPolicies {
				compiles(t, &r.MutatingPolicies[i])
			}
		})
	}
}
