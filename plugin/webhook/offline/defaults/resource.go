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
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func addResource(s *runtime.Scheme) {
	add(s, resourceClaim)
	add(s, eachItem(func(l *resourcev1.ResourceClaimList) []resourcev1.ResourceClaim { return l.Items }, resourceClaim))
	add(s, resourceClaimTemplate)
	add(s, eachItem(func(l *resourcev1.ResourceClaimTemplateList) []resourcev1.ResourceClaimTemplate { return l.Items }, resourceClaimTemplate))
	add(s, resourceSlice)
	add(s, eachItem(func(l *resourcev1.ResourceSliceList) []resourcev1.ResourceSlice { return l.Items }, resourceSlice))
	add(s, deviceTaintRule)
	add(s, eachItem(func(l *resourcev1.DeviceTaintRuleList) []resourcev1.DeviceTaintRule { return l.Items }, deviceTaintRule))
}

func resourceClaim(c *resourcev1.ResourceClaim) {
	deviceClaim(&c.Spec.Devices)
	if a := c.Status.Allocation; a != nil {
		for i := range a.Devices.Results {
			tolerations(a.Devices.Results[i].Tolerations)
		}
	}
}

func resourceClaimTemplate(t *resourcev1.ResourceClaimTemplate) {
	deviceClaim(&t.Spec.Spec.Devices)
}

func deviceClaim(d *resourcev1.DeviceClaim) {
	for i := range d.Requests {
		r := &d.Requests[i]
		if r.Exactly != nil {
			allocation(&r.Exactly.AllocationMode, &r.Exactly.Count)
			tolerations(r.Exactly.Tolerations)
		}
		for j := range r.FirstAvailable {
			sub := &r.FirstAvailable[j]
			allocation(&sub.AllocationMode, &sub.Count)
			tolerations(sub.Tolerations)
		}
	}
}

// allocation: a request asks for exactly one device unless it says how
// many or asks for all.
func allocation(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

// tolerations: a toleration with a value matches that value exactly
// unless it says Exists.
func tolerations(list []resourcev1.DeviceToleration) {
	for i := range list {
		if list[i].Operator == "" {
			list[i].Operator = resourcev1.DeviceTolerationOpEqual
		}
	}
}

func resourceSlice(s *resourcev1.ResourceSlice) {
	for i := range s.Spec.Devices {
		for j := range s.Spec.Devices[i].Taints {
			taintTime(&s.Spec.Devices[i].Taints[j])
		}
	}
}

func deviceTaintRule(r *resourcev1.DeviceTaintRule) {
	taintTime(&r.Spec.Taint)
}

// taintTime stamps a device taint with when it was added, to the second
// as the API stores times; offline that is when the object is defaulted.
func taintTime(t *resourcev1.DeviceTaint) {
	if t.TimeAdded == nil {
		t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
}
