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

package warnlimit

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/warning"
)

type recorder struct{ got []string }

func (r *recorder) AddWarning(_, text string) { r.got = append(r.got, text) }

func TestSender(t *testing.T) {
	for _, n := range []int{0, 1, Max, Max + 1, Max + 7} {
		r := &recorder{}
		s := New(warning.WithWarningRecorder(context.Background(), r), "more")
		for i := range n {
			s.Add(func() string { return fmt.Sprint(i) })
		}
		var want []string
		for i := range min(n, Max) {
			want = append(want, fmt.Sprint(i))
		}
		if n > Max {
			want = append(want, "more")
		}
		if !slices.Equal(r.got, want) {
			t.Errorf("%d warnings: sent %q, want %q", n, r.got, want)
		}
	}
}
