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
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// binaries are the executables the latency comparison runs as processes.
type binaries struct {
	kubeAPIServer, etcd, admitkit, gatekeeper string
}

// buildBinaries builds, without -race (they are the servers being
// measured), upstream's kube-apiserver, an etcd member and admitkit's
// webhook server from test/'s module, and Gatekeeper's manager in its own
// module, with the dependency versions of its release: this module's graph
// raises k8s.io/apiserver to v0.37.2, against which its k8scel driver, which
// main imports, does not compile.
// With ADMITKIT_BENCH_BIN set, it builds nothing and takes them from that
// directory instead (README.md says how to build them there), since
// linking kube-apiserver takes minutes on a busy machine.
func buildBinaries(t *testing.T) binaries {
	t.Helper()
	dir, prebuilt := os.LookupEnv("ADMITKIT_BENCH_BIN")
	if !prebuilt {
		dir = t.TempDir()
	}
	bins := binaries{
		kubeAPIServer: filepath.Join(dir, "kube-apiserver"),
		etcd:          filepath.Join(dir, "admitkit-etcd"),
		admitkit:      filepath.Join(dir, "admitkit"),
		gatekeeper:    filepath.Join(dir, "gatekeeper-manager"),
	}
	builds := []struct{ dir, out, pkg string }{
		{"../..", bins.kubeAPIServer, "./cmd/kube-apiserver"},
		{"../..", bins.etcd, "./cmd/admitkit-etcd"},
		{"../../..", bins.admitkit, "./plugin/cmd/admitkit"},
		{moduleDir(t, gatekeeperModule), bins.gatekeeper, "."},
	}
	if prebuilt {
		return bins
	}
	// One at a time: each link of these takes most of the machine.
	for _, b := range builds {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Dir = b.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s in %s: %v\n%s", b.pkg, b.dir, err, out)
		}
	}
	return bins
}

// process is a server this test started, its output in a log file.
type process struct {
	name string
	log  string
	pid  int
	done chan error
}

// startProcess runs binary with args and env (on top of this process's),
// its output in <dir>/<name>.log, and kills it when the test ends.
func startProcess(t *testing.T, dir, name, binary string, env []string, args ...string) *process {
	t.Helper()
	p := &process{name: name, log: filepath.Join(dir, name+".log"), done: make(chan error, 1)}
	log, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p.pid = cmd.Process.Pid
	go func() {
		p.done <- cmd.Wait()
		log.Close()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ,
// which Linux fixes at 100 for what it shows user space.
const userHZ = 100

// cpu is the CPU time p has used so far, in user and system mode, from
// /proc/<pid>/stat (Linux only), in steps of 1/userHZ s.
func (p *process) cpu() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted from 3 on follow the last ')'.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("%s: short /proc/%d/stat", p.name, p.pid)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime and stime, fields 14 and 15
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: /proc/%d/stat: %w", p.name, p.pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// exited says whether p has stopped.
func (p *process) exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// failure describes why p is not serving: its exit if it stopped, and the
// end of its log.
func (p *process) failure() string {
	state := "still running"
	select {
	case err := <-p.done:
		p.done <- err
		state = fmt.Sprintf("stopped: %v", err)
	default:
	}
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return fmt.Sprintf("%s %s; the end of %s:\n%s", p.name, state, p.log, strings.Join(lines[max(0, len(lines)-15):], "\n"))
}

// freePorts returns n consecutive free ports on 127.0.0.1 (an etcd member
// takes its peer port right after its client port).
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		first := l.Addr().(*net.TCPAddr).Port
		held := []net.Listener{l}
		for i := 1; i < n; i++ {
			next, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(first+i))
			if err != nil {
				break
			}
			held = append(held, next)
		}
		for _, h := range held {
			h.Close()
		}
		if len(held) == n {
			return first
		}
	}
	t.Fatalf("no %d consecutive free ports on 127.0.0.1", n)
	return 0
}
