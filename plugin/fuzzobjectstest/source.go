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

// Package fuzzobjectstest turns fuzz input into the objects admitkit's plugins
// judge: pods, PodPresets and ClusterPodPresets, and LocationMutator
// mutators, over small alphabets so that names, paths and values collide
// often. It is for tests only: the plugins' fuzz targets and differential
// tests, and test/integration's TestOfflineIsTheServer, which lives in the
// test module and so cannot import a package under an internal directory
// (as it imports plugin/noderestrictiontest for the same reason).
package fuzzobjectstest

// Source hands out small choices from fuzz input, then zeros.
type Source struct{ b []byte }

// NewSource reads its choices from data.
func NewSource(data []byte) *Source { return &Source{b: data} }

// Next is a choice in [0, n): the next byte modulo n, or 0 once the input
// is used up or when n is not positive.
func (s *Source) Next(n int) int {
	if len(s.b) == 0 || n <= 0 {
		return 0
	}
	v := int(s.b[0]) % n
	s.b = s.b[1:]
	return v
}
