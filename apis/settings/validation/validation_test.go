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
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/apis/settings"
)

// validPreset is a preset every rule accepts; each case breaks one thing.
func validPreset() *settings.PodPreset {
	return &settings.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "sample", ResourceVersion: "1"},
		Spec: settings.PodPresetSpec{
			Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "security", Operator: metav1.LabelSelectorOpIn, Values: []string{"S2"}},
			}},
			Volumes: []corev1.Volume{{Name: "vol", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Env:     []corev1.EnvVar{{Name: "abc", Value: "value"}, {Name: "ABC", Value: "value"}},
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "abc"}}},
				{Prefix: "pre_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "abc"}}},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "vol", MountPath: "/foo"}},
		},
	}
}

func TestValidatePodPreset(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*settings.PodPreset)
		// want lists substrings of the aggregated error text; nil means valid.
		want []string
	}{
		{name: "valid with mounts", mutate: func(*settings.PodPreset) {}},
		{name: "valid without mounts", mutate: func(pp *settings.PodPreset) { pp.Spec.VolumeMounts = nil }},
		{name: "empty selector is valid", mutate: func(pp *settings.PodPreset) { pp.Spec.Selector = metav1.LabelSelector{} }},
		{name: "only an explicitly empty list is enough", mutate: func(pp *settings.PodPreset) {
			pp.Spec = settings.PodPresetSpec{Env: []corev1.EnvVar{}}
		}},
		{name: "generated name", mutate: func(pp *settings.PodPreset) { pp.Name, pp.GenerateName = "hello-x7k2p", "hello-" }},
		{name: "generateName prefix not a DNS subdomain", mutate: func(pp *settings.PodPreset) { pp.GenerateName = "Hello_" },
			want: []string{"metadata.generateName: Invalid value"}},
		{name: "empty object", mutate: func(pp *settings.PodPreset) { *pp = settings.PodPreset{} }, want: []string{
			"metadata.name: Required value: name or generateName is required",
			"metadata.namespace: Required value",
			"spec.volumes.env.envFrom.volumeMounts: Required value: must specify at least one",
		}},
		{name: "nothing to inject", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Env, pp.Spec.EnvFrom, pp.Spec.Volumes, pp.Spec.VolumeMounts = nil, nil, nil, nil
		}, want: []string{"must specify at least one"}},
		{name: "name not a DNS subdomain", mutate: func(pp *settings.PodPreset) { pp.Name = "Hello_World" }, want: []string{"metadata.name: Invalid value"}},
		{name: "selector In without values", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Selector.MatchExpressions[0].Values = nil
		}, want: []string{"spec.selector.matchExpressions[0].values: Required value"}},
		{name: "selector Exists with values", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Selector.MatchExpressions[0].Operator = metav1.LabelSelectorOpExists
		}, want: []string{"spec.selector.matchExpressions[0].values: Forbidden"}},
		{name: "selector unknown operator", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Selector.MatchExpressions[0].Operator = "Near"
		}, want: []string{"not a valid selector operator"}},
		{name: "selector bad label value", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Selector.MatchLabels = map[string]string{"app": "not valid!"}
		}, want: []string{"spec.selector.matchLabels: Invalid value"}},
		{name: "mount of an undeclared volume", mutate: func(pp *settings.PodPreset) { pp.Spec.VolumeMounts[0].Name = "dne" },
			want: []string{`spec.volumeMounts[0].name: Not found: "dne"`}},
		{name: "mount without name", mutate: func(pp *settings.PodPreset) { pp.Spec.VolumeMounts[0].Name = "" },
			want: []string{"spec.volumeMounts[0].name: Required value"}},
		{name: "mount without path", mutate: func(pp *settings.PodPreset) { pp.Spec.VolumeMounts[0].MountPath = "" },
			want: []string{"spec.volumeMounts[0].mountPath: Required value"}},
		{name: "two mounts at one path", mutate: func(pp *settings.PodPreset) {
			pp.Spec.VolumeMounts = append(pp.Spec.VolumeMounts, corev1.VolumeMount{Name: "vol", MountPath: "/foo"})
		}, want: []string{`spec.volumeMounts[1].mountPath: Invalid value: "/foo": must be unique`}},
		{name: "absolute subPath", mutate: func(pp *settings.PodPreset) { pp.Spec.VolumeMounts[0].SubPath = "/etc" },
			want: []string{"spec.volumeMounts[0].subPath: Invalid value: \"/etc\": must be a relative path"}},
		{name: "subPath climbing out", mutate: func(pp *settings.PodPreset) { pp.Spec.VolumeMounts[0].SubPath = "a/../../b" },
			want: []string{"spec.volumeMounts[0].subPath: Invalid value: \"a/../../b\": must not contain '..'"}},
		{name: "subPath and subPathExpr together", mutate: func(pp *settings.PodPreset) {
			pp.Spec.VolumeMounts[0].SubPath, pp.Spec.VolumeMounts[0].SubPathExpr = "a", "$(POD)"
		}, want: []string{"spec.volumeMounts[0].subPathExpr: Invalid value: \"$(POD)\": subPathExpr and subPath are mutually exclusive"}},
		{name: "subPathExpr climbing out", mutate: func(pp *settings.PodPreset) { pp.Spec.VolumeMounts[0].SubPathExpr = "../x" },
			want: []string{"spec.volumeMounts[0].subPathExpr: Invalid value: \"../x\": must not contain '..'"}},
		{name: "unknown propagation", mutate: func(pp *settings.PodPreset) {
			pp.Spec.VolumeMounts[0].MountPropagation = ptr.To(corev1.MountPropagationMode("Sideways"))
		}, want: []string{`spec.volumeMounts[0].mountPropagation: Unsupported value: "Sideways"`}},
		{name: "bidirectional is left to pod validation", mutate: func(pp *settings.PodPreset) {
			pp.Spec.VolumeMounts[0].MountPropagation = ptr.To(corev1.MountPropagationBidirectional)
		}},
		{name: "recursive read-only needs readOnly", mutate: func(pp *settings.PodPreset) {
			pp.Spec.VolumeMounts[0].RecursiveReadOnly = ptr.To(corev1.RecursiveReadOnlyEnabled)
		}, want: []string{"spec.volumeMounts[0].recursiveReadOnly: Forbidden: may only be specified when readOnly is true"}},
		{name: "recursive read-only with propagation", mutate: func(pp *settings.PodPreset) {
			pp.Spec.VolumeMounts[0].ReadOnly = true
			pp.Spec.VolumeMounts[0].RecursiveReadOnly = ptr.To(corev1.RecursiveReadOnlyIfPossible)
			pp.Spec.VolumeMounts[0].MountPropagation = ptr.To(corev1.MountPropagationHostToContainer)
		}, want: []string{"may only be specified when mountPropagation is None or not specified"}},
		{name: "volume without name", mutate: func(pp *settings.PodPreset) { pp.Spec.Volumes[0].Name = "" },
			want: []string{"spec.volumes[0].name: Required value", `spec.volumeMounts[0].name: Not found: "vol"`}},
		{name: "volume name not a DNS label", mutate: func(pp *settings.PodPreset) { pp.Spec.Volumes[0].Name = "Vol.1"; pp.Spec.VolumeMounts = nil },
			want: []string{`spec.volumes[0].name: Invalid value: "Vol.1"`}},
		{name: "duplicate volume", mutate: func(pp *settings.PodPreset) { pp.Spec.Volumes = append(pp.Spec.Volumes, pp.Spec.Volumes[0]) },
			want: []string{`spec.volumes[1].name: Duplicate value: "vol"`}},
		{name: "volume without source", mutate: func(pp *settings.PodPreset) { pp.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{} },
			want: []string{"spec.volumes[0]: Required value: must specify a volume type"}},
		{name: "volume with two sources", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/etc"}
			// The first source in VolumeSource's field order is kept; the others are named.
		}, want: []string{"spec.volumes[0].emptyDir: Forbidden: may not specify more than 1 volume type"}},
		{name: "env without name", mutate: func(pp *settings.PodPreset) { pp.Spec.Env[0].Name = "" },
			want: []string{"spec.env[0].name: Required value"}},
		{name: "env name with =", mutate: func(pp *settings.PodPreset) { pp.Spec.Env[0].Name = "a=b" },
			want: []string{`spec.env[0].name: Invalid value: "a=b"`}},
		{name: "env with value and valueFrom", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Env[0].ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}
		}, want: []string{"spec.env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"}},
		{name: "env valueFrom empty", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Env[0] = corev1.EnvVar{Name: "x", ValueFrom: &corev1.EnvVarSource{}}
		}, want: []string{"spec.env[0].valueFrom: Invalid value: \"\": must specify one of"}},
		{name: "env valueFrom two sources", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Env[0] = corev1.EnvVar{Name: "x", ValueFrom: &corev1.EnvVarSource{
				FieldRef:     &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"},
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"},
			}}
		}, want: []string{"may not have more than one field specified at a time"}},
		{name: "env secret key missing", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Env[0] = corev1.EnvVar{Name: "x", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}},
			}}
		}, want: []string{"spec.env[0].valueFrom.secretKeyRef.key: Required value"}},
		{name: "env configmap name missing", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Env[0] = corev1.EnvVar{Name: "x", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"},
			}}
		}, want: []string{"spec.env[0].valueFrom.configMapKeyRef.name: Required value"}},
		{name: "env fieldRef without path", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Env[0] = corev1.EnvVar{Name: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1"}}}
		}, want: []string{"spec.env[0].valueFrom.fieldRef.fieldPath: Required value"}},
		{name: "envFrom without source", mutate: func(pp *settings.PodPreset) { pp.Spec.EnvFrom[0] = corev1.EnvFromSource{Prefix: "p_"} },
			want: []string{"spec.envFrom[0]: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"}},
		{name: "envFrom with both sources", mutate: func(pp *settings.PodPreset) {
			pp.Spec.EnvFrom[0].SecretRef = &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}
		}, want: []string{"spec.envFrom[0]: Invalid value: \"\": may not have more than one field specified at a time"}},
		{name: "envFrom bad prefix", mutate: func(pp *settings.PodPreset) { pp.Spec.EnvFrom[1].Prefix = "a=" },
			want: []string{`spec.envFrom[1].prefix: Invalid value: "a="`}},
		{name: "envFrom bad secret name", mutate: func(pp *settings.PodPreset) {
			pp.Spec.EnvFrom[0] = corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "Bad_Name"}}}
		}, want: []string{`spec.envFrom[0].secretRef.name: Invalid value: "Bad_Name"`}},
		{name: "errors accumulate", mutate: func(pp *settings.PodPreset) {
			pp.Spec.Env[0].Name = ""
			pp.Spec.VolumeMounts[0].Name = "dne"
		}, want: []string{"spec.env[0].name: Required value", `spec.volumeMounts[0].name: Not found: "dne"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pp := validPreset()
			tc.mutate(pp)
			assertErrors(t, ValidatePodPreset(pp, BuiltinPodFields).ToAggregate(), tc.want)
		})
	}
}

func assertErrors(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected errors: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("expected errors containing %q, got none", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err.Error(), w)
		}
	}
}

func TestValidatePodPresetUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*settings.PodPreset)
		want   []string
	}{
		{name: "spec change is allowed", mutate: func(pp *settings.PodPreset) { pp.Spec.Env[0].Value = "changed" }},
		{name: "labels change is allowed", mutate: func(pp *settings.PodPreset) { pp.Labels = map[string]string{"a": "b"} }},
		{name: "name is immutable", mutate: func(pp *settings.PodPreset) { pp.Name = "other" },
			want: []string{"metadata.name: Invalid value: \"other\": field is immutable"}},
		{name: "namespace is immutable", mutate: func(pp *settings.PodPreset) { pp.Namespace = "other" },
			want: []string{"metadata.namespace: Invalid value: \"other\": field is immutable"}},
		{name: "spec is still validated", mutate: func(pp *settings.PodPreset) { pp.Spec.VolumeMounts[0].Name = "dne" },
			want: []string{`spec.volumeMounts[0].name: Not found: "dne"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validPreset()
			pp := validPreset()
			tc.mutate(pp)
			errs := ValidatePodPresetUpdate(pp, old, BuiltinPodFields)
			assertErrors(t, errs.ToAggregate(), tc.want)
			// Each problem is reported once, not once per validator as upstream did.
			seen := map[string]bool{}
			for _, e := range errs {
				if seen[e.Error()] {
					t.Errorf("error reported twice: %v", e)
				}
				seen[e.Error()] = true
			}
		})
	}
}

func TestValidateClusterPodPreset(t *testing.T) {
	valid := func() *settings.ClusterPodPreset {
		pp := validPreset()
		return &settings.ClusterPodPreset{
			ObjectMeta: metav1.ObjectMeta{Name: "everywhere"},
			Spec: settings.ClusterPodPresetSpec{
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
				PodPresetSpec:     pp.Spec,
			},
		}
	}
	cases := []struct {
		name   string
		mutate func(*settings.ClusterPodPreset)
		want   []string
	}{
		{name: "valid", mutate: func(*settings.ClusterPodPreset) {}},
		{name: "namespace is forbidden", mutate: func(c *settings.ClusterPodPreset) { c.Namespace = "default" },
			want: []string{"metadata.namespace: Forbidden: not allowed on this type"}},
		{name: "bad namespace selector", mutate: func(c *settings.ClusterPodPreset) {
			c.Spec.NamespaceSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn}}
		}, want: []string{"spec.namespaceSelector.matchExpressions[0].values: Required value"}},
		{name: "spec fields sit directly under spec", mutate: func(c *settings.ClusterPodPreset) { c.Spec.VolumeMounts[0].Name = "dne" },
			want: []string{`spec.volumeMounts[0].name: Not found: "dne"`}},
		{name: "nothing to inject", mutate: func(c *settings.ClusterPodPreset) { c.Spec.PodPresetSpec = settings.PodPresetSpec{} },
			want: []string{"spec.volumes.env.envFrom.volumeMounts: Required value: must specify at least one"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mutate(c)
			assertErrors(t, ValidateClusterPodPreset(c, BuiltinPodFields).ToAggregate(), tc.want)
		})
	}
	t.Run("update keeps the name", func(t *testing.T) {
		old, c := valid(), valid()
		old.ResourceVersion, c.ResourceVersion = "1", "1"
		c.Name = "renamed"
		assertErrors(t, ValidateClusterPodPresetUpdate(c, old, BuiltinPodFields).ToAggregate(), []string{"metadata.name: Invalid value: \"renamed\": field is immutable"})
	})
}

// TestPodFieldsValidator runs the pod fields through the validator a server
// hands in, in place of the built-in rules (so nothing is reported twice),
// at the preset's own paths, while the preset's own rules still run.
func TestPodFieldsValidator(t *testing.T) {
	var gotPaths []string
	refuseHostPath := func(spec *settings.PodPresetSpec, fldPath *field.Path) field.ErrorList {
		gotPaths = append(gotPaths, fldPath.String())
		var errs field.ErrorList
		for i, v := range spec.Volumes {
			if v.HostPath != nil && v.HostPath.Path == "" {
				errs = append(errs, field.Required(fldPath.Child("volumes").Index(i).Child("hostPath", "path"), ""))
			}
		}
		return errs
	}
	pp := validPreset()
	pp.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}
	pp.Spec.VolumeMounts[0].Name = "not-checked-by-this-validator"
	pp.Spec.Selector.MatchExpressions[0].Values = nil
	errs := ValidatePodPreset(pp, refuseHostPath)
	assertErrors(t, errs.ToAggregate(), []string{
		"spec.selector.matchExpressions[0].values: Required value",
		"spec.volumes[0].hostPath.path: Required value",
	})
	if len(errs) != 2 {
		t.Errorf("got %d errors, want 2 (the built-in rules must not run beside the validator): %v", len(errs), errs)
	}

	cpp := &settings.ClusterPodPreset{ObjectMeta: metav1.ObjectMeta{Name: "everywhere"}, Spec: settings.ClusterPodPresetSpec{PodPresetSpec: validPreset().Spec}}
	cpp.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}
	assertErrors(t, ValidateClusterPodPreset(cpp, refuseHostPath).ToAggregate(), []string{"spec.volumes[0].hostPath.path: Required value"})
	if want := []string{"spec", "spec"}; !slices.Equal(gotPaths, want) {
		t.Errorf("validator called at %q, want %q", gotPaths, want)
	}

	// Without a validator the built-in rules run.
	assertErrors(t, ValidatePodPreset(pp, nil).ToAggregate(), []string{
		"spec.selector.matchExpressions[0].values: Required value",
		`spec.volumeMounts[0].name: Not found: "not-checked-by-this-validator"`,
	})
}
