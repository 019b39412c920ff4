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

// Command admitkit-tagprovider serves the tests' tag-to-digest provider
// (test/integration/framework/tagprovider) for hack/local-up.sh's
// walkthrough: an external data provider in Gatekeeper's wire format, on a loopback
// address over HTTPS with a certificate authority of its own. It writes
// the Provider object that names it (URL and caBundle) to --provider-file
// and serves until it is stopped.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/admitkit/admitkit/test/integration/framework/tagprovider"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8943", "loopback address to serve on")
	name := flag.String("name", "tag-to-digest", "name of the Provider object written")
	providerFile := flag.String("provider-file", "", "where to write the Provider object (required)")
	var digests stringList
	flag.Var(&digests, "digest", "tag=pinned reference the provider answers (repeatable)")
	flag.Parse()
	if *providerFile == "" {
		fmt.Fprintln(os.Stderr, "admitkit-tagprovider: --provider-file is required")
		os.Exit(2)
	}
	table := map[string]string{}
	for _, d := range digests {
		tag, pinned, ok := strings.Cut(d, "=")
		if !ok || tag == "" || pinned == "" {
			fmt.Fprintf(os.Stderr, "admitkit-tagprovider: --digest %q is not tag=reference\n", d)
			os.Exit(2)
		}
		table[tag] = pinned
	}
	tp, err := tagprovider.Serve(*listen, table)
	if err != nil {
		fmt.Fprintf(os.Stderr, "admitkit-tagprovider: %v\n", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*providerFile, []byte(tp.Manifest(*name, 3)), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "admitkit-tagprovider: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("admitkit-tagprovider serves %d tags at %s; Provider object in %s\n", len(table), tp.URL(), *providerFile)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = tp.Close()
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
