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

package path

import (
	"flag"
	"sync/atomic"
	"testing"
)

// FuzzParse checks that a parsed path prints to a string that parses back
// to the same path, and prints the same again. The seeds must reach that
// check: a Parse that refused everything, or returned an empty path for
// everything, would pass it, so at least a quarter of the inputs of a run
// (seeds and corpus files alike) must parse to a path of some nodes.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"", "spec.containers[name: *].image", `spec."foo bar"[k: 'v\'s']`, `"ünicode"`, "spec[x: 9223372036854775807]",
		"a..b", "spec.", `"\\"`, "[", "a[b: 0123].c", `metadata.labels."app.kubernetes.io/name"`, "\"a\nb\"",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	var inputs, parsed atomic.Int64
	f.Cleanup(func() {
		// A fuzzing worker sees a part of the inputs; a -run that picks
		// one input leaves too few to count.
		if fuzzing := flag.Lookup("test.fuzz"); fuzzing != nil && fuzzing.Value.String() != "" {
			return
		}
		if inputs.Load() >= int64(len(seeds)) && parsed.Load() < inputs.Load()/4 {
			f.Errorf("only %d of %d inputs parsed to a path of some nodes: the round trip checks too little", parsed.Load(), inputs.Load())
		}
	})
	f.Fuzz(func(t *testing.T, s string) {
		inputs.Add(1)
		p, err := Parse(s)
		if err != nil {
			return
		}
		if len(p.Nodes) > 0 {
			parsed.Add(1)
		}
		printed := p.String()
		again, err := Parse(printed)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its printed form %q fails: %v", s, printed, err)
		}
		if !again.Equal(p) {
			t.Fatalf("Parse(%q) = %#v; printed %q parses to %#v", s, p.Nodes, printed, again.Nodes)
		}
		if again.String() != printed {
			t.Fatalf("printing is not stable: %q then %q", printed, again.String())
		}
	})
}
