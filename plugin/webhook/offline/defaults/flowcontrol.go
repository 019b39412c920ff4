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
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func addFlowcontrol(s *runtime.Scheme) {
	add(s, flowSchema)
	add(s, eachItem(func(l *flowcontrolv1.FlowSchemaList) []flowcontrolv1.FlowSchema { return l.Items }, flowSchema))
	add(s, priorityLevel)
	add(s, eachItem(func(l *flowcontrolv1.PriorityLevelConfigurationList) []flowcontrolv1.PriorityLevelConfiguration {
		return l.Items
	}, priorityLevel))
}

// flowSchema: schemas that give no precedence sort in the middle of the
// suggested ones.
func flowSchema(fs *flowcontrolv1.FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = 1000
	}
}

// priorityLevel: a limited level gets 30 shares and lends none; its queues
// are 64 of at most 50 requests, each flow dealt a hand of 8. An exempt
// level has no shares and lends none.
func priorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = ptr.To[int32](30)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = ptr.To[int32](0)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			queuing(q)
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = ptr.To[int32](0)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = ptr.To[int32](0)
		}
	}
}

func queuing(q *flowcontrolv1.QueuingConfiguration) {
	if q.HandSize == 0 {
		q.HandSize = 8
	}
	if q.Queues == 0 {
		q.Queues = 64
	}
	if q.QueueLengthLimit == 0 {
		q.QueueLengthLimit = 50
	}
}
