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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// profileSeconds is how long each scenario's kube-apiserver is profiled.
const profileSeconds = 20

// profile takes a CPU profile of the scenario's kube-apiserver (its
// /debug/pprof, on by default) over seconds of pod creates, one at a time
// as measured, and writes it into dir as <scenario>.pprof, for `go tool
// pprof` to say where kube-apiserver's time of a create goes. It runs
// after the measured rounds, one scenario at a time, so that the profiles
// cost the measurement nothing.
func (s *latencyScenario) profile(t *testing.T, dir string, seconds int) {
	t.Helper()
	ctx := context.Background()
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := s.srv.client.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(seconds)).DoRaw(ctx)
		done <- result{data, err}
	}()
	pods := s.srv.client.CoreV1().Pods(latencyNamespace)
	for i := 0; ; i++ {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("%s: profiling kube-apiserver: %v", s.name, r.err)
			}
			name := strings.NewReplacer(" ", "-", ":", "", ",", "", "/", "-").Replace(s.name)
			path := filepath.Join(dir, name+".pprof")
			if err := os.WriteFile(path, r.data, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d creates in the profile %s", s.name, i, path)
			return
		default:
		}
		if _, err := pods.Create(ctx, benchPod(fmt.Sprintf("profile-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
}
