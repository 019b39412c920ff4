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
	"time"

	resourcev1 "k8s.io/api/resource/v1"
)

func TestResourceClaimDefaults(t *testing.T) {
	c := defaulted(t, &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{
			Name:    "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu", Tolerations: []resourcev1.DeviceToleration{{Key: "k"}}},
		}, {
			Name:           "any",
			FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "all", AllocationMode: resourcev1.DeviceAllocationModeAll}},
		}},
	}}})
	exact := c.Spec.Devices.Requests[0].Exactly
	if exact.AllocationMode != resourcev1.DeviceAllocationModeExactCount || exact.Count != 1 || exact.Tolerations[0].Operator != resourcev1.DeviceTolerationOpEqual {
		t.Errorf("exact request %+v: want ExactCount, count 1, toleration Equal", exact)
	}
	if sub := c.Spec.Devices.Requests[1].FirstAvailable[0]; sub.Count != 0 {
		t.Errorf("an All subrequest got count %d, want 0", sub.Count)
	}
}

func TestDeviceTaintTime(t *testing.T) {
	before := time.Now().Truncate(time.Second)
	r := defaulted(t, &resourcev1.DeviceTaintRule{})
	if added := r.Spec.Taint.TimeAdded; added == nil || added.Time.Before(before) || added.After(time.Now()) || added.Nanosecond() != 0 {
		t.Errorf("taint timeAdded = %v, want now, to the second", added)
	}
}
