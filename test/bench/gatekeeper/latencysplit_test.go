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
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// splitPart is one part of what a webhook adds to a pod create, as a mean
// per measured create: the sum of a histogram read before and after the
// creates, divided by their number (kube-apiserver runs its mutating
// admission webhooks plugin a second time on a create that a webhook
// changed, so the plugin's own count is not the creates'). The parts
// nest: kube-apiserver's admission webhooks plugins hold its call of the
// pods webhook, which holds the HTTP round trip, which holds the webhook
// server's own time.
type splitPart int

const (
	// partAdmission is kube-apiserver's admission plugins of webhooks and
	// policies (admissionPlugins): choosing the webhooks or policies
	// (rules, selectors, matchConditions), calling or applying them, and
	// on a changed object the mutating ones' second run.
	partAdmission splitPart = iota
	// partCall is kube-apiserver's call of the scenario's pods webhook:
	// the review encoded, the round trip, the response decoded and its
	// patch applied to the object. For compiled policies, their mutations
	// instead: each one's CEL evaluated and its patch applied.
	partCall
	// partRoundTrip is the call's HTTP round trip, from the request sent
	// to the response's body read, as kube-apiserver's client times it.
	partRoundTrip
	// partServer is the webhook server's own time per review, as its own
	// metrics give it.
	partServer
	// partRequestBytes and partResponseBytes are the mean sizes of the
	// review sent and of the response, per call.
	partRequestBytes
	partResponseBytes
	partCount
)

// histogramSum is the sum and count of a histogram's series, summed over
// the series a filter keeps.
type histogramSum struct{ sum, count float64 }

// splitProbe reads one part's histogram as it is now.
type splitProbe func(ctx context.Context) (histogramSum, error)

// perCreate is a time part over what happened between two reads, per
// create.
func perCreate(before, after histogramSum, creates int) (float64, bool) {
	if after.count-before.count <= 0 || creates == 0 {
		return 0, false
	}
	return (after.sum - before.sum) / float64(creates), true
}

// perCall is a size part over what happened between two reads, per call.
func perCall(before, after histogramSum) (float64, bool) {
	n := after.count - before.count
	if n <= 0 {
		return 0, false
	}
	return (after.sum - before.sum) / n, true
}

// readSplit reads every probe of probes.
func readSplit(ctx context.Context, probes [partCount]splitProbe) ([partCount]histogramSum, error) {
	var out [partCount]histogramSum
	for i, p := range probes {
		if p == nil {
			continue
		}
		v, err := p(ctx)
		if err != nil {
			return out, fmt.Errorf("part %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

// series is one line of the Prometheus text format: a metric's name, its
// labels and its value.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

// parseMetrics reads the Prometheus text format (comments skipped).
func parseMetrics(data []byte) ([]series, error) {
	var out []series
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s := series{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.name, rest = line[:i], line[i+1:]
			for !strings.HasPrefix(rest, "}") {
				eq := strings.Index(rest, `="`)
				if eq < 0 {
					return nil, fmt.Errorf("labels of %q", line)
				}
				key := strings.TrimPrefix(rest[:eq], ",")
				value, tail, err := unquoteLabel(rest[eq+1:])
				if err != nil {
					return nil, fmt.Errorf("label %s of %q: %w", key, line, err)
				}
				s.labels[key] = value
				rest = strings.TrimPrefix(tail, ",")
			}
			rest = rest[1:]
		} else {
			name, tail, _ := strings.Cut(line, " ")
			s.name, rest = name, tail
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("no value in %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("value of %q: %w", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// unquoteLabel reads a quoted label value at the start of s and returns it
// and what follows it.
func unquoteLabel(s string) (string, string, error) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			v, err := strconv.Unquote(s[:i+1])
			return v, s[i+1:], err
		}
	}
	return "", "", fmt.Errorf("unterminated value %q", s)
}

// histogramProbe reads the sum and count of histogram over the series
// keep keeps, from what scrape returns.
func histogramProbe(scrape func(context.Context) ([]byte, error), histogram string, keep func(labels map[string]string) bool) splitProbe {
	return func(ctx context.Context) (histogramSum, error) {
		data, err := scrape(ctx)
		if err != nil {
			return histogramSum{}, err
		}
		all, err := parseMetrics(data)
		if err != nil {
			return histogramSum{}, err
		}
		var h histogramSum
		for _, s := range all {
			switch {
			case s.name == histogram+"_sum" && keep(s.labels):
				h.sum += s.value
			case s.name == histogram+"_count" && keep(s.labels):
				h.count += s.value
			}
		}
		return h, nil
	}
}

// labelsAre keeps the series with every label of want.
func labelsAre(want map[string]string) func(map[string]string) bool {
	return func(labels map[string]string) bool {
		for k, v := range want {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
}

// apiserverScrape reads s's /metrics.
func (s *stockServer) apiserverScrape(ctx context.Context) ([]byte, error) {
	return s.client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
}

// apiserverProbes are the parts kube-apiserver times of a call of the pods
// webhook named hook at host (host:port, as its client labels it).
func (s *stockServer) apiserverProbes(hook, host string) [partCount]splitProbe {
	var p [partCount]splitProbe
	p[partAdmission] = histogramProbe(s.apiserverScrape, "apiserver_admission_controller_admission_duration_seconds",
		func(l map[string]string) bool {
			return l["operation"] == "CREATE" && slices.Contains(admissionPlugins, l["name"])
		})
	if hook == "" {
		return p
	}
	call := labelsAre(map[string]string{"name": hook, "type": "admit", "operation": "CREATE"})
	p[partCall] = histogramProbe(s.apiserverScrape, "apiserver_admission_webhook_admission_duration_seconds", call)
	post := labelsAre(map[string]string{"host": host, "verb": "POST"})
	p[partRoundTrip] = histogramProbe(s.apiserverScrape, "rest_client_request_duration_seconds", post)
	p[partRequestBytes] = histogramProbe(s.apiserverScrape, "rest_client_request_size_bytes", post)
	p[partResponseBytes] = histogramProbe(s.apiserverScrape, "rest_client_response_size_bytes", post)
	return p
}

// admissionPlugins are kube-apiserver's admission plugins that run
// webhooks and admission policies: every scenario's part in plugins is
// theirs, so that the baseline's is subtracted alike from a webhook's and
// from the compiled policies'.
var admissionPlugins = []string{"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "MutatingAdmissionPolicy", "ValidatingAdmissionPolicy"}

// policyProbes are the parts kube-apiserver times of the compiled
// policies: its admission plugins, and in them the policies' mutations
// (each mutation's CEL and patch, as MutatingAdmissionPolicy's own
// histogram times them, over every policy and binding).
func (s *stockServer) policyProbes() [partCount]splitProbe {
	p := s.apiserverProbes("", "")
	p[partCall] = histogramProbe(s.apiserverScrape, "apiserver_mutating_admission_policy_check_duration_seconds",
		func(map[string]string) bool { return true })
	return p
}

// policyChecks prints what kube-apiserver counted of the compiled
// policies' mutations, by policy and outcome (error_type no_error, or
// out_of_budget when a mutation's CEL ran out of its cost budget, or
// compile_error, invalid_error), and fails on any outcome but no_error:
// a policy that errs was not measured doing its work.
func policyChecks(t *testing.T, s *stockServer) string {
	t.Helper()
	data, err := s.apiserverScrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all, err := parseMetrics(data)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("\nkube-apiserver's count of the compiled policies' mutations (apiserver_mutating_admission_policy_check_total)\n")
	for _, m := range all {
		if m.name != "apiserver_mutating_admission_policy_check_total" {
			continue
		}
		fmt.Fprintf(&b, "policy %s, binding %s: %s %.0f\n", m.labels["policy"], m.labels["policy_binding"], m.labels["error_type"], m.value)
		if m.labels["error_type"] != "no_error" {
			t.Errorf("policy %s: %.0f mutations ended in %s", m.labels["policy"], m.value, m.labels["error_type"])
		}
	}
	return b.String()
}

// httpsScrape reads url, trusting ca.
func httpsScrape(url string, ca []byte) func(context.Context) ([]byte, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return io.ReadAll(resp.Body)
	}
}

// admitkitServerProbe is admitkit's webhook server's time on pods
// reviews, from its /metrics: a chain's review is shared out among its
// plugins, so PodPreset's part and LocationMutator's add up to it. It
// runs from the decoded request to the response, so leaves out the
// bodies' decoding and encoding (BenchmarkReview's Handler and Review in
// plugin/webhook tell them apart).
func admitkitServerProbe(metricsURL string, ca []byte) splitProbe {
	return histogramProbe(httpsScrape(metricsURL, ca), "admitkit_webhook_review_duration_seconds",
		labelsAre(map[string]string{"phase": "mutate"}))
}

// gatekeeperServerProbe is Gatekeeper's mutation webhook's time per
// review, from controller-runtime's histogram of its handler (the body
// read and decoded, the mutation, the response written).
func gatekeeperServerProbe(metricsURL string) splitProbe {
	scrape := func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	return histogramProbe(scrape, "controller_runtime_webhook_latency_seconds", labelsAre(map[string]string{"webhook": "/v1/mutate"}))
}

// allowingProbe is the allowing webhook's own time per review.
func (w *allowingWebhook) probe(context.Context) (histogramSum, error) {
	return histogramSum{sum: time.Duration(w.busy.Load()).Seconds(), count: float64(w.handled.Load())}, nil
}
