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

// Package scalebenchtest measures how a cost grows with the size of its
// input: the benchmarks that use it run one operation at each of Sizes and
// report the cost per item, which must stay flat for a linear operation.
// Its CPUTime is the one source of the process's CPU time for every
// benchmark that reports one (plugin/webhook's too). Only tests import it.
package scalebenchtest

import (
	"testing"
)

// Sizes are the item counts every scale benchmark runs at: each is four
// times the one before, so a linear cost shows as a ratio near 4.
var Sizes = []int{1000, 4000, 16000}

// PerItem runs f in b's loop and reports its cost per item in wall time
// (ns/item) and in the process's CPU time (cpu-ns/item). On a shared
// machine the CPU time leaves out the time spent waiting for a core.
func PerItem(b *testing.B, n int, f func()) {
	b.ReportAllocs()
	before := CPUTime(b)
	for b.Loop() {
		f()
	}
	per := float64(b.N) * float64(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/item")
	b.ReportMetric(float64((CPUTime(b)-before).Nanoseconds())/per, "cpu-ns/item")
}
