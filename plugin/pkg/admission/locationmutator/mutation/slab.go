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

// slabChunk is how many values a slab allocates at once.
const slabChunk = 16

// slab hands out pointers to values in chunks it keeps. The walker passes
// objects, slots and lists through interfaces, and each one put there on
// its own would be an allocation; from a slab, a walk allocates a chunk
// now and then, and none once the chunks are there. A request takes one
// scratch of slabs and resets them before each walk: reset rewinds, so
// that the next walk overwrites the values the last one left (none is
// used after its walk), and frees nothing. clear, when the request ends,
// zeroes them, so that a scratch back in its pool holds on to no object.
type slab[T any] struct {
	chunks []*[slabChunk]T
	used   int
	// peak is the most values a finished walk used since the last clear,
	// kept by reset and clear rather than by every next.
	peak int
}

// next returns where the next value goes. It still holds what the last
// walk left there: the caller sets every field of it, one by one (see the
// constructors of typedScratch and jsonScratch). Storing a whole T here
// would be a typedmemmove, whose write barrier while the GC marks
// (bulkBarrierPreWrite) cost more than the rest of a typed walk; a store
// per field in the caller takes the compiler's buffered barrier instead.
func (s *slab[T]) next() *T {
	c := s.used / slabChunk
	if c == len(s.chunks) {
		s.chunks = append(s.chunks, new([slabChunk]T))
	}
	p := &s.chunks[c][s.used%slabChunk]
	s.used++
	return p
}

// reset rewinds s: the next put reuses the first value.
func (s *slab[T]) reset() {
	s.peak = max(s.peak, s.used)
	s.used = 0
}

// clear zeroes what was used, so that the slab refers to nothing, and
// resets it. Only what was used: zeroing values with pointers while the
// GC marks goes through its write barrier, value by value.
func (s *slab[T]) clear() {
	s.peak = max(s.peak, s.used)
	for i := 0; i < s.peak; i += slabChunk {
		clear(s.chunks[i/slabChunk][:min(slabChunk, s.peak-i)])
	}
	s.used, s.peak = 0, 0
}
