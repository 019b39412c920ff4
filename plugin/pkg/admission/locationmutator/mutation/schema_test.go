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
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The index finds exactly the conflicts comparing every pair of mutators
// finds, with the same reasons, in every order of adding them.
func TestSchemaIndexMatchesEveryPair(t *testing.T) {
	nodes := []string{"spec", "c", "c[name: a]", "c[name: *]", "c[image: b]", "x"}
	r := rand.New(rand.NewPCG(15, 3))
	for round := 0; round < 300; round++ {
		var ms []*Mutator
		for i := range 2 + r.IntN(8) {
			loc := "spec"
			for range 1 + r.IntN(3) {
				loc += "." + nodes[1+r.IntN(len(nodes)-1)]
			}
			loc += ".v"
			ms = append(ms, assign(t, fmt.Sprintf("m%d", i), loc, "1"))
		}
		var want []Conflict
		for i := range ms {
			for j := i + 1; j < len(ms); j++ {
				if c, ok := conflictBetween(ms[i], ms[j]); ok {
					want = append(want, c)
				}
			}
		}
		sortConflicts(want)
		r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		if diff := cmp.Diff(want, FindConflicts(ms)); diff != "" {
			t.Fatalf("(-every pair +index):\n%s", diff)
		}
	}
}
