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
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Kubectl returns a kubectl binary: $KUBECTL if set, otherwise one built
// by BuildCommand from this module's k8s.io/kubernetes, the same version as
// the server, without the race detector (see clients).
func Kubectl() (string, error) {
	if path := os.Getenv("KUBECTL"); path != "" {
		return path, nil
	}
	return BuildCommand("kubectl")
}

// KubectlResult is what one kubectl run printed.
type KubectlResult struct {
	Stdout, Stderr string
	Err            error
}

// RunKubectl runs kubectl with kubeconfig and args, feeding it stdin.
func RunKubectl(kubeconfig, stdin string, args ...string) KubectlResult {
	path, err := Kubectl()
	if err != nil {
		return KubectlResult{Err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return KubectlResult{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}
