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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// ControllerManager is Kubernetes' own kube-controller-manager running as a
// process beside a server.
type ControllerManager struct {
	// Log is the file of its output.
	Log  string
	cmd  *exec.Cmd
	done chan error
}

// StartControllerManager runs k8s.io/kubernetes/cmd/kube-controller-manager
// as a process against srv as the admin, with args after --kubeconfig, its
// output in kube-controller-manager.log in srv's data directory. A second
// one cannot run in a process that runs one already (kube-controller-manager
// registers its /configz page process-wide), hence the process. It does not
// wait for the controllers: what they do shows a moment later.
func StartControllerManager(srv *Server, args ...string) (*ControllerManager, error) {
	binary, err := BuildCommand("kube-controller-manager")
	if err != nil {
		return nil, err
	}
	kubeconfig, err := srv.Kubeconfig("kube-controller-manager", AdminToken)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(srv.DataDir, "kube-controller-manager.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	c := &ControllerManager{Log: logPath, cmd: cmd, done: make(chan error, 1)}
	go func() {
		err := cmd.Wait()
		log.Close()
		c.done <- err
	}()
	return c, nil
}

// Stop ends it (SIGTERM) and waits until it has exited.
func (c *ControllerManager) Stop() error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		// It exits non-zero on a signal; the exit is what was asked for.
		return nil
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("kube-controller-manager did not stop within a minute (log: %s)", c.Log)
	}
}
