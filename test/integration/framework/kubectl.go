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
	"path/filepath"
	"strings"
	"sync"
	"time"
)

var (
	kubectlOnce sync.Once
	kubectlPath string
	kubectlErr  error
)

// Kubectl returns a kubectl binary: $KUBECTL if set, otherwise one built
// once from this module (k8s.io/kubernetes/cmd/kubectl, the same version
// as the server) into test/_output/bin. The go build cache makes the
// build after the first one a matter of seconds.
func Kubectl() (string, error) {
	kubectlOnce.Do(func() {
		if path := os.Getenv("KUBECTL"); path != "" {
			kubectlPath = path
			return
		}
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			kubectlErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		path := filepath.Join(root, "_output", "bin", "kubectl")
		build := exec.Command("go", "build", "-o", path, "k8s.io/kubernetes/cmd/kubectl")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			kubectlErr = fmt.Errorf("building kubectl: %w\n%s", err, out)
			return
		}
		kubectlPath = path
	})
	return kubectlPath, kubectlErr
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
