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
)

// TestUncoveredLeftAsGiven checks that each kind Uncovered lists is one
// the scheme knows, and that Default leaves an empty one of it untouched.
func TestUncoveredLeftAsGiven(t *testing.T) {
	s := NewScheme()
	for _, gvk := range Uncovered() {
		obj, err := s.New(gvk)
		if err != nil {
			t.Errorf("Uncovered lists %s, which the scheme does not know: %v", gvk, err)
			continue
		}
		before := obj.DeepCopyObject()
		s.Default(obj)
		if diff := cmp.Diff(before, obj); diff != "" {
			t.Errorf("Default changed an uncovered %s (-given +defaulted):\n%s", gvk, diff)
		}
	}
}
