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
