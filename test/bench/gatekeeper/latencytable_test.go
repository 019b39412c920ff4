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
	"strconv"
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

// latencyRatio is a comparison latencyTable prints: what ours adds to the
// baseline over what theirs adds, per percentile, against an aim.
type latencyRatio struct {
	ours, theirs *latencyScenario
	aim          float64
}

// latencyTable prints each scenario's p50, p90 and p99, what each adds to
// the first scenario's (no webhook, no policy), and each ratio's quotients.
func latencyTable(scenarios []*latencyScenario, run latencyRun, ratios []latencyRatio) string {
	percentiles := []float64{50, 90, 99}
	values := make(map[*latencyScenario][]time.Duration, len(scenarios))
	for _, s := range scenarios {
		for _, p := range percentiles {
			values[s] = append(values[s], percentile(s.latencies, p))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\npod create latency on the stock kube-apiserver, %d sequential creates per scenario in %d interleaved rounds (3 containers per pod)\n", run.perScenario, run.rounds)
	fmt.Fprintf(&b, "| %-34s | %8s | %8s | %8s | %9s | %9s | %9s |\n", "scenario", "p50", "p90", "p99", "+p50", "+p90", "+p99")
	fmt.Fprintf(&b, "|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 36), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 11), strings.Repeat("-", 11), strings.Repeat("-", 11))
	base := values[scenarios[0]]
	for _, s := range scenarios {
		v := values[s]
		fmt.Fprintf(&b, "| %-34s | %8s | %8s | %8s | %9s | %9s | %9s |\n", s.name, round(v[0]), round(v[1]), round(v[2]),
			round(v[0]-base[0]), round(v[1]-base[1]), round(v[2]-base[2]))
	}
	for _, r := range ratios {
		fmt.Fprintf(&b, "\nadded by %s / added by %s:", r.ours.name, r.theirs.name)
		for j, p := range percentiles {
			ours, theirs := values[r.ours][j]-base[j], values[r.theirs][j]-base[j]
			fmt.Fprintf(&b, " p%.0f %.2f", p, float64(ours)/float64(theirs))
		}
		fmt.Fprintf(&b, " (aim: at most %.2f)", r.aim)
	}
	b.WriteString("\n")
	return b.String()
}

func round(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }

// latencySplit prints, per scenario, the mean create and what its webhook
// call is made of, per measured create, in µs: what the
// scenario adds to the first's (no webhook) mean; of that, what is added
// inside kube-apiserver's admission webhook and policy plugins and what elsewhere
// (the create's other steps on a pod the webhook made bigger: validation,
// storage, the response); inside the plugins, choosing the webhooks and
// the rest of the plugins' work, and the call of the pods webhook; in the
// call, kube-apiserver's own work around the round trip (the review
// encoded, the response decoded, the patch applied), the transport (TLS,
// HTTP, the bodies), and the webhook server's own time; and the mean
// review and response sizes.
func latencySplit(scenarios []*latencyScenario) string {
	type split struct {
		mean  float64
		parts [partCount]float64
		known [partCount]bool
	}
	splits := make([]split, len(scenarios))
	for i, s := range scenarios {
		var sum time.Duration
		for _, d := range s.latencies {
			sum += d
		}
		if len(s.latencies) > 0 {
			splits[i].mean = (sum / time.Duration(len(s.latencies))).Seconds()
		}
		for p := range partCount {
			if p == partRequestBytes || p == partResponseBytes {
				splits[i].parts[p], splits[i].known[p] = perCall(s.before[p], s.after[p])
			} else {
				splits[i].parts[p], splits[i].known[p] = perCreate(s.before[p], s.after[p], len(s.latencies))
			}
		}
	}
	us := func(v float64, ok bool) string {
		if !ok {
			return "-"
		}
		return strconv.FormatFloat(v*1e6, 'f', 0, 64)
	}
	bytes := func(v float64, ok bool) string {
		if !ok {
			return "-"
		}
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	var b strings.Builder
	b.WriteString(cpuSplit(scenarios))
	b.WriteString("\nwhat each webhook or policy set adds, per create in µs (means): added = elsewhere + in the admission webhook and policy plugins;" +
		" those = choosing + call (for compiled policies: their mutations); call = around + transport + server; review and response in bytes\n")
	header := []string{"scenario", "mean", "added", "elsewhere", "in plugins", "choosing", "call", "around", "transport", "server", "review", "response"}
	fmt.Fprintf(&b, "| %-34s |", header[0])
	for _, h := range header[1:] {
		fmt.Fprintf(&b, " %10s |", h)
	}
	b.WriteString("\n|" + strings.Repeat("-", 36) + "|" + strings.Repeat(strings.Repeat("-", 12)+"|", len(header)-1) + "\n")
	base := splits[0]
	for i, s := range scenarios {
		sp := splits[i]
		p, k := sp.parts, sp.known
		added := sp.mean - base.mean
		inPlugins := p[partAdmission] - base.parts[partAdmission]
		cells := []string{
			us(sp.mean, true), us(added, i > 0),
			us(added-inPlugins, i > 0 && k[partAdmission] && base.known[partAdmission]),
			us(inPlugins, i > 0 && k[partAdmission] && base.known[partAdmission]),
			us(inPlugins-p[partCall], i > 0 && k[partAdmission] && base.known[partAdmission] && k[partCall]),
			us(p[partCall], k[partCall]),
			us(p[partCall]-p[partRoundTrip], k[partCall] && k[partRoundTrip]),
			us(p[partRoundTrip]-p[partServer], k[partRoundTrip] && k[partServer]),
			us(p[partServer], k[partServer]),
			bytes(p[partRequestBytes], k[partRequestBytes]),
			bytes(p[partResponseBytes], k[partResponseBytes]),
		}
		fmt.Fprintf(&b, "| %-34s |", s.name)
		for _, c := range cells {
			fmt.Fprintf(&b, " %10s |", c)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// cpuSplit prints the CPU time per measured create of each scenario's
// processes, in µs: kube-apiserver, etcd, and the webhook server when it
// is a process of its own. It counts all a process did while the
// scenario's own creates ran (for a webhook server its garbage collection
// and its informers too, not only its reviews).
func cpuSplit(scenarios []*latencyScenario) string {
	var b strings.Builder
	b.WriteString("\nCPU time per create in µs (process times, 10 ms steps)\n")
	fmt.Fprintf(&b, "| %-34s | %14s | %10s | %14s |\n", "scenario", "kube-apiserver", "etcd", "webhook server")
	b.WriteString("|" + strings.Repeat("-", 36) + "|" + strings.Repeat("-", 16) + "|" + strings.Repeat("-", 12) + "|" + strings.Repeat("-", 16) + "|\n")
	for _, s := range scenarios {
		n := time.Duration(max(1, len(s.latencies)))
		cell := func(i int) string {
			if i == 2 && s.webhook == nil {
				return "-"
			}
			return strconv.FormatInt((s.cpuUsed[i] / n).Microseconds(), 10)
		}
		fmt.Fprintf(&b, "| %-34s | %14s | %10s | %14s |\n", s.name, cell(0), cell(1), cell(2))
	}
	return b.String()
}
