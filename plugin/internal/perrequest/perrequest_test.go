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

package perrequest

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

type record struct {
	counted Once
	applied OncePer
}

func TestRecordIsSharedAcrossInvocations(t *testing.T) {
	a := admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{}, "", "", schema.GroupVersionResource{}, "", admission.Create, nil, false, nil)
	first := Record[record](a, "plugin")
	if !first.counted.First() || first.counted.First() {
		t.Fatal("Once: want true, then false")
	}
	if !first.applied.First("a") || first.applied.First("a") || !first.applied.First("b") {
		t.Fatal("OncePer: want true once per key")
	}
	again := Record[record](a, "plugin")
	if again != first || !again.counted.Done() {
		t.Error("a second invocation on the request must see the first one's record")
	}
	if other := Record[record](a, "other plugin"); other == first || other.counted.Done() {
		t.Error("another key must have a record of its own")
	}
}

type noReinvocation struct{ admission.Attributes }

func (noReinvocation) GetReinvocationContext() admission.ReinvocationContext { return nil }

func TestRecordWithoutReinvocationContext(t *testing.T) {
	a := noReinvocation{}
	r := Record[record](a, "plugin")
	r.counted.First()
	if Record[record](a, "plugin").counted.Done() {
		t.Error("without a reinvocation context, every call is a new request")
	}
}
