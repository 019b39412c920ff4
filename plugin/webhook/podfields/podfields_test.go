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

package podfields

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/admitkit/admitkit/apis/settings"
)

// answering is a clientset whose pod creates get err, recording what was
// asked.
func answering(err error) (*fake.Clientset, *[]clienttesting.CreateActionImpl) {
	client := fake.NewClientset()
	var asked []clienttesting.CreateActionImpl
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		asked = append(asked, action.(clienttesting.CreateActionImpl))
		return true, nil, err
	})
	return client, &asked
}

func spec() *settings.PodPresetSpec {
	return &settings.PodPresetSpec{
		Env:          []corev1.EnvVar{{Name: "A", Value: "a"}},
		EnvFrom:      []corev1.EnvFromSource{{Prefix: "P_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
		Volumes:      []corev1.Volume{{Name: "v"}, {Name: "v"}},
		VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/a"}, {Name: "v", MountPath: "/a"}},
	}
}

func invalid(causes ...metav1.StatusCause) error {
	err := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "carrier", nil)
	err.ErrStatus.Details.Causes = causes
	return err
}

func TestDryRunAsksForACarrierPod(t *testing.T) {
	client, asked := answering(nil)
	if errs := DryRun(client, "admitkit-system", "admitkit-webhook")(spec(), field.NewPath("spec")); len(errs) != 0 {
		t.Fatalf("errors %v, want none", errs)
	}
	if len(*asked) != 1 {
		t.Fatalf("%d creates, want 1", len(*asked))
	}
	a := (*asked)[0]
	pod := a.GetObject().(*corev1.Pod)
	if a.GetNamespace() != "admitkit-system" || pod.Spec.ServiceAccountName != "admitkit-webhook" ||
		pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("carrier in %q as %q (automount %v), want admitkit-system, admitkit-webhook, no token", a.GetNamespace(), pod.Spec.ServiceAccountName, pod.Spec.AutomountServiceAccountToken)
	}
	if opts := a.CreateOptions; len(opts.DryRun) != 1 || opts.DryRun[0] != metav1.DryRunAll {
		t.Errorf("create options %+v, want a dry run", opts)
	}
	c := pod.Spec.Containers
	if len(c) != 1 || len(pod.Spec.Volumes) != 2 || len(c[0].Env) != 1 || len(c[0].EnvFrom) != 1 || len(c[0].VolumeMounts) != 2 {
		t.Errorf("carrier %+v does not hold the preset's fields", pod.Spec)
	}
}

// TestDryRunRefusesAtThePresetsFields: the causes within the preset's
// fields come back at the preset's own paths, printed as kube-apiserver
// printed them; others (the carrier's own container) are dropped.
func TestDryRunRefusesAtThePresetsFields(t *testing.T) {
	client, _ := answering(invalid(
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueDuplicate, Field: "spec.volumes[1].name", Message: `Duplicate value: "v"`},
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.containers[0].volumeMounts[1].mountPath", Message: `Invalid value: "/a": must be unique`},
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.containers[0].envFrom[0].prefix", Message: `Invalid value: "P_": bad`},
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.containers[0].env[0].valueFrom", Message: `Required value`},
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.containers[0].image", Message: `Required value`},
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "metadata.name", Message: `Invalid value: "x": bad`},
	))
	errs := DryRun(client, "admitkit-system", "admitkit-webhook")(spec(), field.NewPath("spec"))
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`spec.volumes[1].name: Duplicate value: "v"`,
		`spec.volumeMounts[1].mountPath: Invalid value: "/a": must be unique`,
		`spec.envFrom[0].prefix: Invalid value: "P_": bad`,
		`spec.env[0].valueFrom: Required value`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, e := range errs {
		if i < 2 && e.Type != []field.ErrorType{field.ErrorTypeDuplicate, field.ErrorTypeInvalid}[i] {
			t.Errorf("error %d type %s", i, e.Type)
		}
	}
}

func TestDryRunOtherAnswers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		refused bool
	}{
		{name: "refused by admission after validation", err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "carrier", errors.New("violates PodSecurity"))},
		{name: "not allowed to create pods", err: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden}}, refused: true},
		{name: "unreachable", err: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), refused: true},
		{name: "namespace missing", err: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "admitkit-system"), refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, _ := answering(tc.err)
			errs := DryRun(client, "admitkit-system", "admitkit-webhook")(spec(), field.NewPath("spec"))
			if !tc.refused {
				if len(errs) != 0 {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal || errs[0].Field != "spec" ||
				!strings.Contains(errs[0].Error(), `dry-run create of a pod in namespace "admitkit-system"`) {
				t.Fatalf("errors %v, want one internal error at spec naming the dry run", errs)
			}
		})
	}
}
