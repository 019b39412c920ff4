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

// Package embeddedetcd starts etcd members inside the calling process, on
// loopback ports: the single member the custom kube-apiserver embeds, or
// the members of a cluster that several kube-apiservers share. It does not
// import kube-apiserver, so a binary that only runs etcd links quickly.
package embeddedetcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.etcd.io/etcd/server/v3/embed"
)

// Member says how to run one etcd member.
type Member struct {
	// Name is the member's name in the cluster.
	Name string
	// Dir holds the member's data ("data") and its log ("etcd.log").
	Dir string
	// ClientPort and PeerPort are its ports on 127.0.0.1.
	ClientPort, PeerPort int
	// Cluster lists every member of the cluster, this one included, as
	// they were when the cluster was first started. Empty means a cluster
	// of this member alone.
	Cluster []Peer
	// UnsafeNoFsync skips fsync: faster, loses data on a crash (tests).
	UnsafeNoFsync bool
}

// Peer is a member as the others know it.
type Peer struct {
	Name     string
	PeerPort int
}

// Ports are a member's client and peer ports on 127.0.0.1, as the custom
// kube-apiserver records its own member's in ports.json.
type Ports struct {
	Client int `json:"client"`
	Peer   int `json:"peer"`
}

// NewCluster describes a cluster of one member per ports entry, named
// etcd-1, etcd-2, ..., each with its data in dir/<name>.
func NewCluster(dir string, ports []Ports, unsafeNoFsync bool) []Member {
	peers := make([]Peer, len(ports))
	for i, p := range ports {
		peers[i] = Peer{Name: "etcd-" + strconv.Itoa(i+1), PeerPort: p.Peer}
	}
	members := make([]Member, len(ports))
	for i, p := range ports {
		members[i] = Member{
			Name:          peers[i].Name,
			Dir:           filepath.Join(dir, peers[i].Name),
			ClientPort:    p.Client,
			PeerPort:      p.Peer,
			Cluster:       peers,
			UnsafeNoFsync: unsafeNoFsync,
		}
	}
	return members
}

// ClientURL is the URL clients such as kube-apiserver use.
func (m Member) ClientURL() string {
	u := loopbackURL(m.ClientPort)
	return u.String()
}

// Start starts the member and returns at once: the first members of a new
// cluster cannot be ready before a quorum of them runs, so callers start
// all of them and then Wait for each. A member whose data directory already
// holds a member rejoins its cluster (ClusterState "existing") and catches
// up from the others.
func Start(m Member) (*embed.Etcd, error) {
	if m.Name == "" {
		return nil, errors.New("an etcd member needs a name")
	}
	if err := os.MkdirAll(m.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("etcd member %s data directory %s: %w", m.Name, m.Dir, err)
	}
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = filepath.Join(m.Dir, "data")
	cfg.UnsafeNoFsync = m.UnsafeNoFsync
	clientURL, peerURL := loopbackURL(m.ClientPort), loopbackURL(m.PeerPort)
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cluster := m.Cluster
	if len(cluster) == 0 {
		cluster = []Peer{{Name: m.Name, PeerPort: m.PeerPort}}
	}
	cfg.InitialCluster = InitialCluster(cluster)
	if len(cluster) > 1 {
		// Members of different test clusters on one machine must never
		// join each other by a reused port.
		cfg.InitialClusterToken = "admitkit-" + strconv.Itoa(cluster[0].PeerPort)
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "member", "wal")); err == nil {
		cfg.ClusterState = embed.ClusterStateFlagExisting
	}
	// etcd logs a lot at info; keep its log beside its data.
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{filepath.Join(m.Dir, "etcd.log")}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting etcd member %s in %s: %w", m.Name, m.Dir, err)
	}
	return e, nil
}

// Wait waits until the member serves clients, which for a cluster means a
// quorum runs and has a leader, or until ctx ends.
func Wait(ctx context.Context, e *embed.Etcd) error {
	cfg := e.Config()
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("etcd member %s: %w", cfg.Name, err)
	case <-ctx.Done():
		return fmt.Errorf("etcd member %s was not ready (see %s): %w", cfg.Name, strings.Join(cfg.LogOutputs, ", "), context.Cause(ctx))
	}
}

// InitialCluster is etcd's --initial-cluster value for peers.
func InitialCluster(peers []Peer) string {
	parts := make([]string, len(peers))
	for i, p := range peers {
		u := loopbackURL(p.PeerPort)
		parts[i] = p.Name + "=" + u.String()
	}
	return strings.Join(parts, ",")
}

func loopbackURL(port int) url.URL {
	return url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
}
