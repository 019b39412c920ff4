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

// differingPairs lists exactly the pairs a loop over every i < j would
// find to differ in type, in that loop's order.
func TestDifferingPairsMatchesReference(t *testing.T) {
	types := []impliedType{{kind: "object"}, {kind: "list", key: "name"}, {kind: "list", key: "key"}, {kind: "set"}, {kind: "string"}}
	r := rand.New(rand.NewPCG(15, 3))
	for i := 0; i < 2000; i++ {
		us := make([]schemaUse, r.IntN(12))
		kinds := 1 + r.IntN(len(types))
		for j := range us {
			us[j].t = types[r.IntN(kinds)]
		}
		var want [][2]int
		for a := range us {
			for b := a + 1; b < len(us); b++ {
				if us[a].t != us[b].t {
					want = append(want, [2]int{a, b})
				}
			}
		}
		if diff := cmp.Diff(want, differingPairs(us)); diff != "" {
			t.Fatalf("%s: (-want +got):\n%s", fmt.Sprint(us), diff)
		}
	}
}
