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

package mutation

import (
	"fmt"
	"strings"
	"testing"
)

// Gatekeeper's shapes: a location of N `spec` segments set to "foo".
// "always" runs on an object already mutated once (the walk, the compare,
// no write: Gatekeeper writes the same value again); "never" adds a
// MustNotExist on the whole location; "create" starts from an empty object
// each time, so the parents are built and the value written.
func BenchmarkAssign(b *testing.B) {
	for _, depth := range []int{1, 2, 5, 10, 20} {
		loc := strings.TrimSuffix(strings.Repeat("spec.", depth), ".")
		always := assign(b, "a", loc, "foo")
		never := assign(b, "a", loc, "foo", "MustNotExist "+loc)
		mutated := map[string]any{}
		if _, err := always.mutate(mutated, requestMeta{}); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("always/depth-%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := always.mutate(mutated, requestMeta{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("never/depth-%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := never.mutate(mutated, requestMeta{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("create/depth-%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := always.mutate(map[string]any{}, requestMeta{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAssignMetadata(b *testing.B) {
	m := mustDecode(b, `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: foo}
spec:
  location: metadata.labels.foo
  parameters: {assign: {value: bar}}
`)
	b.Run("always", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.mutate(map[string]any{}, requestMeta{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	existing := map[string]any{"metadata": map[string]any{"labels": map[string]any{"foo": "bar"}}}
	b.Run("never", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.mutate(existing, requestMeta{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
