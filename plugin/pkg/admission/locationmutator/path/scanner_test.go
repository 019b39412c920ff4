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
	"testing"
)

func scanAll(s string) []Token {
	sc := NewScanner(s)
	var out []Token
	for i := 0; i < 1000; i++ {
		t := sc.Next()
		out = append(out, t)
		if t.Kind == EOF {
			break
		}
	}
	return out
}

func TestScanner(t *testing.T) {
	id := func(s string) Token { return Token{Kind: Ident, Text: s} }
	num := func(s string) Token { return Token{Kind: Int, Text: s} }
	sep := Token{Kind: Separator, Text: "."}
	eof := Token{Kind: EOF}
	errTok := Token{Kind: Error}
	tests := []struct {
		name  string
		input string
		want  []Token
	}{
		{"empty", "", []Token{eof}},
		{"blanks of every kind", " \t\r\n ", []Token{eof}},
		{"quoted then dots then bare", ` "foo bar"   . . baz`, []Token{id("foo bar"), sep, sep, id("baz"), eof}},
		{"leading zero integer", "0123", []Token{num("0123"), eof}},
		{"integer longer than int64", "123456789012345678901234567890", []Token{num("123456789012345678901234567890"), eof}},
		{"no hex", "0x1A", []Token{num("0"), id("x1A"), eof}},
		{"minus starts an identifier", "-1024", []Token{id("-1024"), eof}},
		{"plus is invalid", "+1024", []Token{errTok, num("1024"), eof}},
		{"no floats", "3.14", []Token{num("3"), sep, num("14"), eof}},
		{"digits then underscore", "0123_foobar_baz", []Token{num("0123"), id("_foobar_baz"), eof}},
		{"letters then digits", "Nexus6", []Token{id("Nexus6"), eof}},
		{"bare then quoted emoji", "ItWasTheSummerOf69'🎸'", []Token{id("ItWasTheSummerOf69"), id("🎸"), eof}},
		{"single and double quotes", `'a b'."c d"`, []Token{id("a b"), sep, id("c d"), eof}},
		{"empty quoted string", `..''`, []Token{sep, sep, id(""), eof}},
		{"punctuation soup", "][**:**][", []Token{
			{Kind: RBracket, Text: "]"}, {Kind: LBracket, Text: "["}, {Kind: Glob, Text: "*"}, {Kind: Glob, Text: "*"},
			{Kind: Colon, Text: ":"}, {Kind: Glob, Text: "*"}, {Kind: Glob, Text: "*"}, {Kind: RBracket, Text: "]"},
			{Kind: LBracket, Text: "["}, eof,
		}},
		{"two quoted strings", `"foo" "bar"`, []Token{id("foo"), id("bar"), eof}},
		{"two bare words", "foo bar", []Token{id("foo"), id("bar"), eof}},
		{"unterminated double", `"foo`, []Token{errTok, eof}},
		{"unterminated single", `'foo`, []Token{errTok, eof}},
		{"closing quote escaped", `"foo\"`, []Token{errTok, eof}},
		{"emoji inside quotes", `"🦋x🦄"`, []Token{id("🦋x🦄"), eof}},
		{"backslash before emoji is dropped", `"🦋bb\🐥aa🦄"`, []Token{id("🦋bb🐥aa🦄"), eof}},
		{"bare then emoji", "Moo🐙", []Token{id("Moo"), errTok, eof}},
		{"quoted newline kept", "\"a\nb\"", []Token{id("a\nb"), eof}},
		{"backslash n is just n", `"a\nb"`, []Token{id("anb"), eof}},
		{"escaped other quote", `'it\'s'`, []Token{id("it's"), eof}},
		{"quoted number is an identifier", `"123"`, []Token{id("123"), eof}},
		{"quoted glob is an identifier", `"*"`, []Token{id("*"), eof}},
		{"slash is invalid", "a/b", []Token{id("a"), errTok, id("b"), eof}},
		{"non-ASCII bare", "ü", []Token{errTok, eof}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := scanAll(tc.input)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i].Kind != tc.want[i].Kind || (got[i].Kind != Error && got[i].Text != tc.want[i].Text) {
					t.Fatalf("token %d: got %v, want %v (all: %v)", i, got[i], tc.want[i], got)
				}
			}
		})
	}
}

func TestScannerEOFIsSticky(t *testing.T) {
	sc := NewScanner("a")
	sc.Next()
	for i := 0; i < 3; i++ {
		if tok := sc.Next(); tok.Kind != EOF {
			t.Fatalf("call %d after the end: got %v", i, tok)
		}
	}
}

func TestKindString(t *testing.T) {
	if Glob.String() != "GLOB" || Kind(99).String() != "Kind(99)" {
		t.Fatalf("unexpected names %q %q", Glob, Kind(99))
	}
}
