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
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/admitkit/admitkit/test/apiserver"
	"github.com/admitkit/admitkit/test/embeddedetcd"
)

// etcdReadyTimeout bounds a member's start: a new cluster elects a leader
// within seconds, a restarted member catches up from the others' log.
const etcdReadyTimeout = time.Minute

// EtcdCluster is an etcd cluster of embedded members on loopback ports,
// each with its own data directory, that tests stop and restart one member
// at a time.
type EtcdCluster struct {
	members []embeddedetcd.Member

	mu      sync.Mutex
	running []*embed.Etcd // nil for a stopped member
}

// StartEtcdCluster starts n members with their data under dir (etcd-1,
// etcd-2, ...) and waits until all serve.
func StartEtcdCluster(dir string, n int) (*EtcdCluster, error) {
	ports, err := apiserver.FreePorts(2 * n)
	if err != nil {
		return nil, err
	}
	memberPorts := make([]embeddedetcd.Ports, n)
	for i := range memberPorts {
		memberPorts[i] = embeddedetcd.Ports{Client: ports[2*i], Peer: ports[2*i+1]}
	}
	c := &EtcdCluster{members: embeddedetcd.NewCluster(dir, memberPorts, true), running: make([]*embed.Etcd, n)}
	// A new member is ready only once a quorum runs: start all, then wait.
	for i, m := range c.members {
		e, err := embeddedetcd.Start(m)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.running[i] = e
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdReadyTimeout)
	defer cancel()
	for _, e := range c.running {
		if err := embeddedetcd.Wait(ctx, e); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// ClientURLs are every member's client URL, for --etcd-servers.
func (c *EtcdCluster) ClientURLs() []string {
	urls := make([]string, len(c.members))
	for i, m := range c.members {
		urls[i] = m.ClientURL()
	}
	return urls
}

// Member is member i's configuration (its name, ports, data directory).
func (c *EtcdCluster) Member(i int) embeddedetcd.Member { return c.members[i] }

// Leader returns the index of the member that leads, as the running
// members see it.
func (c *EtcdCluster) Leader() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.running {
		if e == nil {
			continue
		}
		lead := e.Server.Leader()
		for i, other := range c.running {
			if other != nil && other.Server.MemberID() == lead {
				return i, nil
			}
		}
	}
	return 0, errors.New("no running etcd member knows a leader")
}

// Stop stops member i; its data directory stays for Restart.
func (c *EtcdCluster) Stop(i int) {
	c.mu.Lock()
	e := c.running[i]
	c.running[i] = nil
	c.mu.Unlock()
	if e != nil {
		e.Close()
	}
}

// Restart starts stopped member i on its data and waits until it serves:
// it rejoins the cluster and catches up from the others.
func (c *EtcdCluster) Restart(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[i] != nil {
		return fmt.Errorf("etcd member %s is running", c.members[i].Name)
	}
	e, err := embeddedetcd.Start(c.members[i])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdReadyTimeout)
	defer cancel()
	if err := embeddedetcd.Wait(ctx, e); err != nil {
		e.Close()
		return err
	}
	c.running[i] = e
	return nil
}

// Close stops every member.
func (c *EtcdCluster) Close() {
	for i := range c.running {
		c.Stop(i)
	}
}
