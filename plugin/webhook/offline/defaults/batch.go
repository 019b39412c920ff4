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

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func addBatch(s *runtime.Scheme) {
	add(s, job)
	add(s, eachItem(func(l *batchv1.JobList) []batchv1.Job { return l.Items }, job))
	add(s, cronJob)
	add(s, eachItem(func(l *batchv1.CronJobList) []batchv1.CronJob { return l.Items }, cronJob))
}

func job(j *batchv1.Job) {
	spec := &j.Spec
	// A job that says neither how many completions nor how parallel is a
	// single pod run to completion once.
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
	// With a per-index limit the job-wide one would only get in its way.
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = ptr.To[int32](math.MaxInt32)
		} else {
			spec.BackoffLimit = ptr.To[int32](6)
		}
	}
	if spec.Template.Labels != nil && len(j.Labels) == 0 {
		j.Labels = spec.Template.Labels
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	// A pod failure policy judges failed pods, so their replacements wait
	// until they have failed; otherwise a terminating pod is replaced at
	// once.
	if spec.PodReplacementPolicy == nil {
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = ptr.To(false)
	}
	jobTemplateSpec(spec)
}

// jobTemplateSpec defaults what a Job's spec shares with a CronJob's job
// template; the Job's own defaults above are applied only when the
// CronJob creates the Job.
func jobTemplateSpec(spec *batchv1.JobSpec) {
	if spec.PodFailurePolicy != nil {
		for i := range spec.PodFailurePolicy.Rules {
			for k := range spec.PodFailurePolicy.Rules[i].OnPodConditions {
				cond := &spec.PodFailurePolicy.Rules[i].OnPodConditions[k]
				// A rule on a pod condition means the condition holds.
				if cond.Status == "" {
					cond.Status = corev1.ConditionTrue
				}
			}
		}
	}
	podTemplateSpec(&spec.Template.Spec)
}

func cronJob(cj *batchv1.CronJob) {
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	jobTemplateSpec(&spec.JobTemplate.Spec)
}
