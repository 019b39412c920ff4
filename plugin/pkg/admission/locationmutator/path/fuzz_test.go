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

import "testing"

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "spec.containers[name: *].image", `spec."foo bar"[k: 'v\'s']`, `"ünicode"`, "spec[x: 9223372036854775807]",
		"a..b", "spec.", `"\\"`, "[", "a[b: 0123].c", `metadata.labels."app.kubernetes.io/name"`, "\"a\nb\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
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
