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

package defaults

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestJobDefaults(t *testing.T) {
	labels := map[string]string{"job": "x"}
	j := defaulted(t, &batchv1.Job{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}}}})
	want := batchv1.JobSpec{
		Completions:          ptr.To[int32](1),
		Parallelism:          ptr.To[int32](1),
		BackoffLimit:         ptr.To[int32](6),
		CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
		Suspend:              ptr.To(false),
		PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
		ManualSelector:       ptr.To(false),
		Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: defaultedTemplateSpec()},
	}
	if diff := cmp.Diff(want, j.Spec); diff != "" {
		t.Errorf("job spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(labels, j.Labels); diff != "" {
		t.Errorf("job labels from its template (-want +got):\n%s", diff)
	}
}

func TestJobDefaultsDependOnOtherFields(t *testing.T) {
	// Parallel work with a completion count: completions stay unset.
	parallel := defaulted(t, &batchv1.Job{Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](3)}})
	if parallel.Spec.Completions != nil {
		t.Errorf("completions = %d, want unset when parallelism is given", *parallel.Spec.Completions)
	}
	perIndex := defaulted(t, &batchv1.Job{Spec: batchv1.JobSpec{BackoffLimitPerIndex: ptr.To[int32](2)}})
	if got := *perIndex.Spec.BackoffLimit; got != math.MaxInt32 {
		t.Errorf("backoffLimit with a per-index limit = %d, want MaxInt32", got)
	}
	withPolicy := defaulted(t, &batchv1.Job{Spec: batchv1.JobSpec{PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:          batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
	}}}}})
	if got := *withPolicy.Spec.PodReplacementPolicy; got != batchv1.Failed {
		t.Errorf("podReplacementPolicy with a pod failure policy = %q, want Failed", got)
	}
	if got := withPolicy.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status; got != corev1.ConditionTrue {
		t.Errorf("pod condition pattern status = %q, want True", got)
	}
}

func TestCronJobDefaults(t *testing.T) {
	cj := defaulted(t, &batchv1.CronJob{})
	spec := cj.Spec
	if spec.ConcurrencyPolicy != batchv1.AllowConcurrent || !ptr.Equal(spec.Suspend, ptr.To(false)) ||
		*spec.SuccessfulJobsHistoryLimit != 3 || *spec.FailedJobsHistoryLimit != 1 {
		t.Errorf("cron job spec %+v: want Allow, not suspended, 3 and 1 kept", spec)
	}
	// The job template gets pod template defaults only: the Job's own are
	// applied when the CronJob creates it.
	if spec.JobTemplate.Spec.BackoffLimit != nil || spec.JobTemplate.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("job template backoffLimit %v, restartPolicy %q; want unset and Always",
			spec.JobTemplate.Spec.BackoffLimit, spec.JobTemplate.Spec.Template.Spec.RestartPolicy)
	}
}
