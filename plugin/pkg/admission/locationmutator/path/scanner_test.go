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

func scanAll(s string) []token {
	sc := newScanner(s)
	var out []token
	for i := 0; i < 1000; i++ {
		t := sc.next()
		out = append(out, t)
		if t.kind == tokEOF {
			break
		}
	}
	return out
}

func TestScanner(t *testing.T) {
	id := func(s string) token { return token{kind: tokIdent, text: s} }
	num := func(s string) token { return token{kind: tokInt, text: s} }
	sep := token{kind: tokSeparator, text: "."}
	eof := token{kind: tokEOF}
	errTok := token{kind: tokError}
	tests := []struct {
		name  string
		input string
		want  []token
	}{
		{"empty", "", []token{eof}},
		{"blanks of every kind", " \t\r\n ", []token{eof}},
		{"quoted then dots then bare", ` "foo bar"   . . baz`, []token{id("foo bar"), sep, sep, id("baz"), eof}},
		{"leading zero integer", "0123", []token{num("0123"), eof}},
		{"integer longer than int64", "123456789012345678901234567890", []token{num("123456789012345678901234567890"), eof}},
		{"no hex", "0x1A", []token{num("0"), id("x1A"), eof}},
		{"minus starts an identifier", "-1024", []token{id("-1024"), eof}},
		{"plus is invalid", "+1024", []token{errTok, num("1024"), eof}},
		{"no floats", "3.14", []token{num("3"), sep, num("14"), eof}},
		{"digits then underscore", "0123_foobar_baz", []token{num("0123"), id("_foobar_baz"), eof}},
		{"letters then digits", "Nexus6", []token{id("Nexus6"), eof}},
		{"bare then quoted emoji", "ItWasTheSummerOf69'🎸'", []token{id("ItWasTheSummerOf69"), id("🎸"), eof}},
		{"single and double quotes", `'a b'."c d"`, []token{id("a b"), sep, id("c d"), eof}},
		{"empty quoted string", `..''`, []token{sep, sep, id(""), eof}},
		{"punctuation soup", "][**:**][", []token{
			{kind: tokRBracket, text: "]"}, {kind: tokLBracket, text: "["}, {kind: tokGlob, text: "*"}, {kind: tokGlob, text: "*"},
			{kind: tokColon, text: ":"}, {kind: tokGlob, text: "*"}, {kind: tokGlob, text: "*"}, {kind: tokRBracket, text: "]"},
			{kind: tokLBracket, text: "["}, eof,
		}},
		{"two quoted strings", `"foo" "bar"`, []token{id("foo"), id("bar"), eof}},
		{"two bare words", "foo bar", []token{id("foo"), id("bar"), eof}},
		{"unterminated double", `"foo`, []token{errTok, eof}},
		{"unterminated single", `'foo`, []token{errTok, eof}},
		{"closing quote escaped", `"foo\"`, []token{errTok, eof}},
		{"emoji inside quotes", `"🦋x🦄"`, []token{id("🦋x🦄"), eof}},
		{"backslash before emoji is dropped", `"🦋bb\🐥aa🦄"`, []token{id("🦋bb🐥aa🦄"), eof}},
		{"bare then emoji", "Moo🐙", []token{id("Moo"), errTok, eof}},
		{"quoted newline kept", "\"a\nb\"", []token{id("a\nb"), eof}},
		{"backslash n is just n", `"a\nb"`, []token{id("anb"), eof}},
		{"escaped other quote", `'it\'s'`, []token{id("it's"), eof}},
		{"quoted number is an identifier", `"123"`, []token{id("123"), eof}},
		{"quoted glob is an identifier", `"*"`, []token{id("*"), eof}},
		{"slash is invalid", "a/b", []token{id("a"), errTok, id("b"), eof}},
		{"non-ASCII bare", "ü", []token{errTok, eof}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := scanAll(tc.input)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i].kind != tc.want[i].kind || (got[i].kind != tokError && got[i].text != tc.want[i].text) {
					t.Fatalf("token %d: got %v, want %v (all: %v)", i, got[i], tc.want[i], got)
				}
			}
		})
	}
}

func TestScannerEOFIsSticky(t *testing.T) {
	sc := newScanner("a")
	sc.next()
	for i := 0; i < 3; i++ {
		if tok := sc.next(); tok.kind != tokEOF {
			t.Fatalf("call %d after the end: got %v", i, tok)
		}
	}
}

func TestKindString(t *testing.T) {
	if tokGlob.String() != "GLOB" || tokenKind(99).String() != "Kind(99)" {
		t.Fatalf("unexpected names %q %q", tokGlob, tokenKind(99))
	}
}
