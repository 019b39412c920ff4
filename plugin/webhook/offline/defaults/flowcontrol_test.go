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
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/utils/ptr"
)

func TestPriorityLevelDefaults(t *testing.T) {
	pl := defaulted(t, &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
			Queuing: &flowcontrolv1.QueuingConfiguration{},
		}},
	}})
	want := &flowcontrolv1.LimitedPriorityLevelConfiguration{
		NominalConcurrencyShares: ptr.To[int32](30),
		LendablePercent:          ptr.To[int32](0),
		LimitResponse: flowcontrolv1.LimitResponse{
			Queuing: &flowcontrolv1.QueuingConfiguration{HandSize: 8, Queues: 64, QueueLengthLimit: 50},
		},
	}
	if diff := cmp.Diff(want, pl.Spec.Limited); diff != "" {
		t.Errorf("limited priority level (-want +got):\n%s", diff)
	}
	if got := defaulted(t, &flowcontrolv1.FlowSchema{}).Spec.MatchingPrecedence; got != 1000 {
		t.Errorf("flow schema matchingPrecedence = %d, want 1000", got)
	}
}
