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

package framework

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/klog/v2"
)

// ServerLog is the file that a test binary's in-process servers log into:
// they log a lot, and a test's output must stay readable.
type ServerLog struct{ file *os.File }

// LogToFile sends klog's output, errors included, to a new temporary file
// named after pattern (as os.CreateTemp takes it).
func LogToFile(pattern string) (*ServerLog, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, err
	}
	// Without a lowered threshold klog would still copy errors to stderr.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("alsologtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(f)
	return &ServerLog{file: f}, nil
}

// Name is the log file's path.
func (l *ServerLog) Name() string { return l.file.Name() }

// Finish closes the log after the tests ended with code: it names the file
// on stderr when they failed and removes it when they passed.
func (l *ServerLog) Finish(code int) {
	l.file.Close()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "server log: %s\n", l.file.Name())
	} else {
		os.Remove(l.file.Name())
	}
}
