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

package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/test/embeddedetcd"
)

// startEtcd starts a single-member etcd with its data in dir and returns
// it with the URL kube-apiserver should use.
func startEtcd(dir string, noFsync bool) (*embed.Etcd, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("etcd data directory %s: %w", dir, err)
	}
	ports, err := loadEtcdPorts(dir)
	if err != nil {
		return nil, "", err
	}
	member := embeddedetcd.Member{Name: "admitkit", Dir: dir, ClientPort: ports.Client, PeerPort: ports.Peer, UnsafeNoFsync: noFsync}
	e, err := embeddedetcd.Start(member)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := embeddedetcd.Wait(ctx, e); err != nil {
		e.Close()
		return nil, "", err
	}
	klog.InfoS("Embedded etcd is ready", "dataDir", dir, "url", member.ClientURL())
	return e, member.ClientURL(), nil
}

// loadEtcdPorts reads the ports of an earlier run, or picks two free ones
// and records them: a restart on the same data must find its member again
// at the peer URL recorded in it.
func loadEtcdPorts(dir string) (embeddedetcd.Ports, error) {
	file := filepath.Join(dir, "ports.json")
	var ports embeddedetcd.Ports
	data, err := os.ReadFile(file)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &ports); err != nil {
			return ports, fmt.Errorf("%s: %w", file, err)
		}
		if ports.Client <= 0 || ports.Peer <= 0 {
			return ports, fmt.Errorf("%s: client and peer ports must be positive, got %d and %d", file, ports.Client, ports.Peer)
		}
		return ports, nil
	case !errors.Is(err, os.ErrNotExist):
		return ports, err
	}
	free, err := FreePorts(2)
	if err != nil {
		return ports, err
	}
	ports = embeddedetcd.Ports{Client: free[0], Peer: free[1]}
	data, err = json.Marshal(ports)
	if err != nil {
		return ports, err
	}
	return ports, os.WriteFile(file, data, 0o600)
}

// FreePorts returns n TCP ports on 127.0.0.1 that were free a moment ago.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		// Keep each listener open until all are chosen, so that the ports differ.
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
