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

// Kind is the class of a lexical token.
type Kind int

// The token kinds of the location language.
const (
	// EOF marks the end of the input; the scanner keeps returning it.
	EOF Kind = iota
	// Error is an invalid character or an unterminated quoted string.
	Error
	// Ident is a bare identifier or any quoted string.
	Ident
	// Int is a run of decimal digits.
	Int
	// Separator is `.`.
	Separator
	// LBracket is `[`.
	LBracket
	// RBracket is `]`.
	RBracket
	// Glob is `*`.
	Glob
	// Colon is `:`.
	Colon
)

var kindNames = [...]string{
	EOF:       "EOF",
	Error:     "ERROR",
	Ident:     "IDENT",
	Int:       "INT",
	Separator: "SEPARATOR",
	LBracket:  "LBRACKET",
	RBracket:  "RBRACKET",
	Glob:      "GLOB",
	Colon:     "COLON",
}

// String names the kind the way error messages show it.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// Token is one lexical unit. Text is the unquoted, unescaped content for
// Ident tokens, the digits for Int tokens and a description for Error tokens.
type Token struct {
	Kind Kind
	Text string
}

// String shows the token in error messages.
func (t Token) String() string {
	switch t.Kind {
	case EOF:
		return "EOF"
	case Error:
		return fmt.Sprintf("ERROR(%s)", t.Text)
	default:
		return fmt.Sprintf("%s(%q)", t.Kind, t.Text)
	}
}

// Scanner splits a location string into tokens. It never fails: problems
// become Error tokens so that the parser can report them with context.
type Scanner struct {
	input string
	pos   int
}

// NewScanner returns a Scanner over input.
func NewScanner(input string) *Scanner {
	return &Scanner{input: input}
}

// IsIdentChar reports whether c may appear in a bare identifier.
func IsIdentChar(c rune) bool {
	return c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c)
}

func isDigit(c rune) bool { return c >= '0' && c <= '9' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// Next returns the next token, or EOF once the input is used up.
func (s *Scanner) Next() Token {
	for s.pos < len(s.input) && isSpace(s.input[s.pos]) {
		s.pos++
	}
	if s.pos >= len(s.input) {
		return Token{Kind: EOF}
	}
	c := s.input[s.pos]
	if k, ok := punctuation(c); ok {
		s.pos++
		return Token{Kind: k, Text: s.input[s.pos-1 : s.pos]}
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
		return Token{Kind: Int, Text: s.input[start:s.pos]}
	}
	if IsIdentChar(rune(c)) {
		start := s.pos
		for s.pos < len(s.input) && IsIdentChar(rune(s.input[s.pos])) {
			s.pos++
		}
		return Token{Kind: Ident, Text: s.input[start:s.pos]}
	}
	r, size := utf8.DecodeRuneInString(s.input[s.pos:])
	s.pos += size
	return Token{Kind: Error, Text: fmt.Sprintf("invalid character %q", r)}
}

// punctuation returns the kind of a one-character token.
func punctuation(c byte) (Kind, bool) {
	switch c {
	case '.':
		return Separator, true
	case '[':
		return LBracket, true
	case ']':
		return RBracket, true
	case '*':
		return Glob, true
	case ':':
		return Colon, true
	}
	return Error, false
}

// quoted reads a string opened by quote. A backslash takes the next character
// literally (there are no \n-style escapes), which keeps quoting reversible.
func (s *Scanner) quoted(quote byte) Token {
	s.pos++ // opening quote
	var b strings.Builder
	for s.pos < len(s.input) {
		c := s.input[s.pos]
		switch c {
		case quote:
			s.pos++
			return Token{Kind: Ident, Text: b.String()}
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
	return Token{Kind: Error, Text: "unterminated string"}
}
