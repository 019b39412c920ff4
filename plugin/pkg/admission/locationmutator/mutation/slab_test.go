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

import "testing"

// A cleared slab refers to nothing any walk since the last clear put in
// it, however many chunks the busiest walk filled.
func TestSlabClear(t *testing.T) {
	var s slab[*int]
	x := new(int)
	for _, n := range []int{3, slabChunk + 5, 2} { // three walks
		s.reset()
		for range n {
			*s.next() = x
		}
	}
	s.clear()
	if s.used != 0 || s.peak != 0 {
		t.Fatalf("used %d, peak %d after clear", s.used, s.peak)
	}
	for c, chunk := range s.chunks {
		for i, p := range chunk {
			if p != nil {
				t.Errorf("chunk %d value %d still refers to a value", c, i)
			}
		}
	}
}
