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
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokenKind is the class of a lexical token.
type tokenKind int

// The token kinds of the location language.
const (
	// tokEOF marks the end of the input; the scanner keeps returning it.
	tokEOF tokenKind = iota
	// tokError is an invalid character or an unterminated quoted string.
	tokError
	// tokIdent is a bare identifier or any quoted string.
	tokIdent
	// tokInt is a run of decimal digits.
	tokInt
	// tokSeparator is `.`.
	tokSeparator
	// tokLBracket is `[`.
	tokLBracket
	// tokRBracket is `]`.
	tokRBracket
	// tokGlob is `*`.
	tokGlob
	// tokColon is `:`.
	tokColon
)

var kindNames = [...]string{
	tokEOF:       "EOF",
	tokError:     "ERROR",
	tokIdent:     "IDENT",
	tokInt:       "INT",
	tokSeparator: "SEPARATOR",
	tokLBracket:  "LBRACKET",
	tokRBracket:  "RBRACKET",
	tokGlob:      "GLOB",
	tokColon:     "COLON",
}

// String names the kind the way error messages show it.
func (k tokenKind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// token is one lexical unit. text is the unquoted, unescaped content for
// tokIdent tokens, the digits for tokInt tokens and a description for
// tokError tokens.
type token struct {
	kind tokenKind
	text string
}

// String shows the token in error messages.
func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "EOF"
	case tokError:
		return fmt.Sprintf("ERROR(%s)", t.text)
	default:
		return fmt.Sprintf("%s(%q)", t.kind, t.text)
	}
}

// scanner splits a location string into tokens. It never fails: problems
// become tokError tokens so that the parser can report them with context.
type scanner struct {
	input string
	pos   int
}

// newScanner returns a scanner over input.
func newScanner(input string) *scanner {
	return &scanner{input: input}
}

// isIdentChar reports whether c may appear in a bare identifier.
func isIdentChar(c rune) bool {
	return c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c)
}

func isDigit(c rune) bool { return c >= '0' && c <= '9' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// next returns the next token, or tokEOF once the input is used up.
func (s *scanner) next() token {
	for s.pos < len(s.input) && isSpace(s.input[s.pos]) {
		s.pos++
	}
	if s.pos >= len(s.input) {
		return token{kind: tokEOF}
	}
	c := s.input[s.pos]
	if k, ok := punctuation(c); ok {
		s.pos++
		return token{kind: k, text: s.input[s.pos-1 : s.pos]}
	}
	if c == '"' || c == '\'' {
		return s.quoted(c)
	}
	if isDigit(rune(c)) {
		// An identifier may not start with a digit, so a leading digit
		// always begins an integer, even when letters follow.
		start := s.pos
		for s.pos < len(s.input) && isDigit(rune(s.input[s.pos])) {
			s.pos++
		}
		return token{kind: tokInt, text: s.input[start:s.pos]}
	}
	if isIdentChar(rune(c)) {
		start := s.pos
		for s.pos < len(s.input) && isIdentChar(rune(s.input[s.pos])) {
			s.pos++
		}
		return token{kind: tokIdent, text: s.input[start:s.pos]}
	}
	r, size := utf8.DecodeRuneInString(s.input[s.pos:])
	s.pos += size
	return token{kind: tokError, text: fmt.Sprintf("invalid character %q", r)}
}

// punctuation returns the kind of a one-character token.
func punctuation(c byte) (tokenKind, bool) {
	switch c {
	case '.':
		return tokSeparator, true
	case '[':
		return tokLBracket, true
	case ']':
		return tokRBracket, true
	case '*':
		return tokGlob, true
	case ':':
		return tokColon, true
	}
	return tokError, false
}

// quoted reads a string opened by quote. A backslash takes the next character
// literally (there are no \n-style escapes), which keeps quoting reversible.
func (s *scanner) quoted(quote byte) token {
	s.pos++ // opening quote
	var b strings.Builder
	for s.pos < len(s.input) {
		c := s.input[s.pos]
		switch c {
		case quote:
			s.pos++
			return token{kind: tokIdent, text: b.String()}
		case '\\':
			s.pos++
			if s.pos < len(s.input) {
				_, size := utf8.DecodeRuneInString(s.input[s.pos:])
				b.WriteString(s.input[s.pos : s.pos+size])
				s.pos += size
			}
		default:
			b.WriteByte(c)
			s.pos++
		}
	}
	return token{kind: tokError, text: "unterminated string"}
}
