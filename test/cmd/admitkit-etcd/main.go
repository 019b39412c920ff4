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

// Command admitkit-etcd runs one member of an etcd cluster on loopback
// ports, for several admitkit-apiservers to share on one machine
// (HA=1 hack/local-up.sh). Member i of n listens for clients on
// port+2(i-1) and for peers on the port after; the members are named
// etcd-1 to etcd-n and keep their data in <data-dir>/etcd-<i>. Run it once
// per member; run it again on the same data directory and it rejoins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/admitkit/admitkit/test/embeddedetcd"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "admitkit-etcd:", err)
		os.Exit(1)
	}
}

func run() error {
	dataDir := flag.String("data-dir", "", "Directory holding every member's data directory (etcd-1, etcd-2, ...). Required.")
	members := flag.Int("members", 3, "Number of members in the cluster.")
	member := flag.Int("member", 1, "Which member this is, from 1 to --members.")
	port := flag.Int("port", 2379, "Client port of member 1: member i listens for clients on port+2(i-1) and for peers on the next port.")
	noFsync := flag.Bool("unsafe-no-fsync", false, "Skip fsync. Faster, loses data on a crash.")
	flag.Parse()
	switch {
	case flag.NArg() > 0:
		return fmt.Errorf("no arguments expected, got %q", flag.Args())
	case *dataDir == "":
		return errors.New("--data-dir is required")
	case *members < 1:
		return fmt.Errorf("--members=%d: need at least one", *members)
	case *member < 1 || *member > *members:
		return fmt.Errorf("--member=%d: must be between 1 and --members=%d", *member, *members)
	case *port < 1 || *port+2**members-1 > 65535:
		return fmt.Errorf("--port=%d: the cluster needs ports %d to %d", *port, *port, *port+2**members-1)
	}

	ports := make([]embeddedetcd.Ports, *members)
	for i := range ports {
		ports[i] = embeddedetcd.Ports{Client: *port + 2*i, Peer: *port + 2*i + 1}
	}
	m := embeddedetcd.NewCluster(*dataDir, ports, *noFsync)[*member-1]

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := embeddedetcd.Start(m)
	if err != nil {
		return err
	}
	defer e.Close()
	// The other members may still be starting: a quorum takes a while.
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := embeddedetcd.Wait(waitCtx, e); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	fmt.Fprintf(os.Stderr, "etcd member %s serves %s (data and log in %s)\n", m.Name, m.ClientURL(), m.Dir)
	select {
	case <-ctx.Done():
		return nil
	case err := <-e.Err():
		return err
	}
}
