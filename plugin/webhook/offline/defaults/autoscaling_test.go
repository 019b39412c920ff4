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
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
)

func TestHorizontalPodAutoscalerDefaults(t *testing.T) {
	if got := *defaulted(t, &autoscalingv1.HorizontalPodAutoscaler{}).Spec.MinReplicas; got != 1 {
		t.Errorf("v1 minReplicas = %d, want 1", got)
	}
	h := defaulted(t, &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)},
		},
	}})
	if got := h.Spec.Metrics; len(got) != 1 || got[0].Resource == nil || *got[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("metrics = %+v, want one: 80%% CPU utilization", got)
	}
	wantDown := &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To[int32](60),
		SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
	if diff := cmp.Diff(wantDown, h.Spec.Behavior.ScaleDown); diff != "" {
		t.Errorf("scaleDown, the given window kept and the rest defaulted (-want +got):\n%s", diff)
	}
	if got := h.Spec.Behavior.ScaleUp; got == nil || *got.StabilizationWindowSeconds != 0 || len(got.Policies) != 2 {
		t.Errorf("scaleUp = %+v, want the default: no window, 4 pods or 100%% per 15 s", got)
	}
	if got := defaulted(t, &autoscalingv2.HorizontalPodAutoscaler{}).Spec.Behavior; got != nil {
		t.Errorf("an autoscaler with no behavior got %+v; it must stay unset", got)
	}
}
