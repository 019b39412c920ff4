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

package gatekeeper

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// percentile is the p-th percentile of d by nearest rank, the figure
// test/integration/framework's Percentile gives (this module cannot import
// test/'s without k8s.io/kubernetes entering Gatekeeper's graph).
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// latencyTable prints each scenario's p50, p90 and p99, what each adds to
// the first scenario's (no webhook), and, per percentile, what the second
// (admitkit) adds over what the third (Gatekeeper) adds.
func latencyTable(scenarios []*latencyScenario, run latencyRun) string {
	percentiles := []float64{50, 90, 99}
	values := make([][]time.Duration, len(scenarios))
	for i, s := range scenarios {
		for _, p := range percentiles {
			values[i] = append(values[i], percentile(s.latencies, p))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\npod create latency on the stock kube-apiserver, %d sequential creates per scenario in %d interleaved rounds (3 containers per pod)\n", run.perScenario, run.rounds)
	fmt.Fprintf(&b, "| %-34s | %8s | %8s | %8s | %9s | %9s | %9s |\n", "scenario", "p50", "p90", "p99", "+p50", "+p90", "+p99")
	fmt.Fprintf(&b, "|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 36), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 11), strings.Repeat("-", 11), strings.Repeat("-", 11))
	for i, s := range scenarios {
		v, base := values[i], values[0]
		fmt.Fprintf(&b, "| %-34s | %8s | %8s | %8s | %9s | %9s | %9s |\n", s.name, round(v[0]), round(v[1]), round(v[2]),
			round(v[0]-base[0]), round(v[1]-base[1]), round(v[2]-base[2]))
	}
	fmt.Fprintf(&b, "\nadded by %s / added by %s:", scenarios[1].name, scenarios[2].name)
	for j, p := range percentiles {
		ours, theirs := values[1][j]-values[0][j], values[2][j]-values[0][j]
		fmt.Fprintf(&b, " p%.0f %.2f", p, float64(ours)/float64(theirs))
	}
	b.WriteString(" (aim: at most 0.50)\n")
	return b.String()
}

func round(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
