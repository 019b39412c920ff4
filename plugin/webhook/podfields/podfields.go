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

// Package podfields checks the fields a preset puts into pods (env,
// envFrom, volumes, volumeMounts) for the webhook host on a stock cluster,
// by asking the cluster's own kube-apiserver: a server-side dry-run create
// of a carrier pod holding them, in the server's own namespace. The
// refusal's causes within those fields become the preset's field errors,
// at the preset's own paths, so a preset that would break every pod it
// selects is refused with kube-apiserver's own pod validation, by the
// cluster's own version, with no copy of it linked in. (The custom
// kube-apiserver build links kube's validation and calls it in-process.)
//
// Costs: one API round trip for every preset created or updated (presets
// change rarely); when the API cannot be reached the preset is refused
// with an error that says so (fail closed, as an unvalidated preset could
// break every pod it selects); the dry run needs `create` on pods in the
// server's namespace, and it meets that namespace's admission: kube-apiserver
// validates the pod before its validating admission (Pod Security, quota),
// so their refusals mean the fields passed, but a mutating webhook of
// another product that refuses pods there hides what validation would have
// said (the preset is accepted, and its pods meet the validation instead).
package podfields

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/validation"
)

// DefaultNamespace is the namespace the shipped manifests run the server in;
// the webhook configurations leave it out, so admitkit's own webhooks never
// see the carrier.
const DefaultNamespace = "admitkit-system"

// DefaultServiceAccount is the shipped manifests' service account of the
// server, which exists wherever the server runs.
const DefaultServiceAccount = "admitkit-webhook"

// Timeout bounds one dry run: SettingsValidation answers within the
// webhook's own timeout.
const Timeout = 5 * time.Second

// The carrier's single container, which holds the preset's env, envFrom and
// volumeMounts.
const (
	carrierContainer = "carrier"
	carrierImage     = "carrier"
)

// carrierFields are where the carrier holds the preset's fields, with the
// preset's field each comes from.
var carrierFields = []struct{ carrier, preset string }{
	{"spec.volumes", "volumes"},
	{"spec.containers[0].envFrom", "envFrom"},
	{"spec.containers[0].env", "env"},
	{"spec.containers[0].volumeMounts", "volumeMounts"},
}

// DryRun returns a validator that asks client's kube-apiserver to validate
// a preset's pod fields with a dry-run create of a carrier pod in namespace,
// running as serviceAccount: kube-apiserver's ServiceAccount admission,
// which runs before validation, refuses a pod whose service account does
// not exist, so the carrier names one that does, the server's own.
func DryRun(client kubernetes.Interface, namespace, serviceAccount string) validation.PodFieldsValidator {
	return func(spec *settings.PodPresetSpec, fldPath *field.Path) field.ErrorList {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		_, err := client.CoreV1().Pods(namespace).Create(ctx, carrier(spec, namespace, serviceAccount), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		var status apierrors.APIStatus
		switch {
		case err == nil:
			return nil
		case apierrors.IsInvalid(err) && errors.As(err, &status):
			return presetErrors(status.Status(), fldPath)
		case apierrors.IsForbidden(err) && errors.As(err, &status) && status.Status().Details != nil:
			// Refused by admission after validation passed (Pod Security,
			// quota): the fields are valid. A 403 with no details is the
			// authorizer's (RBAC missing), which says nothing of them.
			return nil
		}
		return field.ErrorList{field.InternalError(fldPath, fmt.Errorf("cannot check the pod fields: a dry-run create of a pod in namespace %q failed: %w", namespace, err))}
	}
}

// carrier is a pod of one container holding the preset's pod fields, as
// the PodPreset plugin puts them into a pod. It is only ever dry-run.
func carrier(spec *settings.PodPresetSpec, namespace, serviceAccount string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "admitkit-preset-check-", Namespace: namespace},
		Spec: corev1.PodSpec{
			ServiceAccountName: serviceAccount,
			// No token volume is added beside the preset's.
			AutomountServiceAccountToken: ptr.To(false),
			Volumes:                      spec.Volumes,
			Containers: []corev1.Container{{
				Name:         carrierContainer,
				Image:        carrierImage,
				Env:          spec.Env,
				EnvFrom:      spec.EnvFrom,
				VolumeMounts: spec.VolumeMounts,
			}},
		},
	}
}

// presetErrors are the causes of a 422 that fall within the carrier's
// fields from the preset, at the preset's own paths under fldPath.
func presetErrors(status metav1.Status, fldPath *field.Path) field.ErrorList {
	if status.Details == nil {
		return nil
	}
	var errs field.ErrorList
	for _, cause := range status.Details.Causes {
		path, ok := presetPath(cause.Field, fldPath)
		if !ok {
			continue
		}
		errType := field.ErrorType(cause.Type)
		// The cause's message is the error's body: its type's text, then
		// what kube-apiserver said of the value. Kept whole as the detail
		// after the type, the error prints as kube-apiserver's did.
		detail := strings.TrimPrefix(strings.TrimPrefix(cause.Message, errType.String()), ": ")
		errs = append(errs, &field.Error{Type: errType, Field: path, BadValue: field.OmitValueType{}, Detail: detail})
	}
	return errs
}

// presetPath maps a carrier field path into the preset's, under fldPath.
func presetPath(carrierPath string, fldPath *field.Path) (string, bool) {
	for _, f := range carrierFields {
		rest, ok := strings.CutPrefix(carrierPath, f.carrier)
		// "env" is a prefix of "envFrom": the carrier's field must end
		// where an index or a child begins.
		if ok && (rest == "" || rest[0] == '[' || rest[0] == '.') {
			return fldPath.Child(f.preset).String() + rest, true
		}
	}
	return "", false
}
