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
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors of Parse, which its tests tell apart with errors.Is; no
// caller outside the package does, so they stay unexported. Only the first
// problem in a string is reported.
var (
	// errUnexpectedToken is a token the grammar does not allow where it
	// appears; scanner errors (bad characters, unterminated strings) are
	// reported this way too.
	errUnexpectedToken = errors.New("unexpected token")
	// errTrailingSeparator is a path ending in `.`.
	errTrailingSeparator = errors.New("trailing separator")
	// errInvalidInteger is a list key value that does not fit in an int64.
	errInvalidInteger = errors.New("invalid integer")
)

type parser struct {
	s   *scanner
	tok token
}

func (p *parser) advance() { p.tok = p.s.next() }

func unexpected(got token, want string) error {
	return fmt.Errorf("%w: expected %s, got %s", errUnexpectedToken, want, got)
}

// Parse reads a location string. An empty (or all-blank) string gives a Path
// with no nodes and no error; callers that need a location reject it.
func Parse(s string) (Path, error) {
	p := &parser{s: newScanner(s)}
	p.advance()
	if p.tok.kind == tokEOF {
		return Path{}, nil
	}
	var nodes []Node
	for {
		if p.tok.kind != tokIdent {
			return Path{}, unexpected(p.tok, "a field name")
		}
		nodes = append(nodes, Object{Reference: p.tok.text})
		p.advance()
		if p.tok.kind == tokLBracket {
			l, err := p.list()
			if err != nil {
				return Path{}, err
			}
			nodes = append(nodes, l)
		}
		switch p.tok.kind {
		case tokEOF:
			return Path{Nodes: nodes}, nil
		case tokSeparator:
			p.advance()
			if p.tok.kind == tokEOF {
				return Path{}, fmt.Errorf("%w: %q ends in %q", errTrailingSeparator, s, ".")
			}
		default:
			return Path{}, unexpected(p.tok, `"." or EOF`)
		}
	}
}

// list reads `[key: value]` with p.tok on the `[` and leaves p.tok on the
// token after `]`.
func (p *parser) list() (List, error) {
	p.advance()
	if p.tok.kind != tokIdent {
		return List{}, unexpected(p.tok, "a key field")
	}
	l := List{KeyField: p.tok.text}
	p.advance()
	if p.tok.kind != tokColon {
		return List{}, unexpected(p.tok, `":"`)
	}
	p.advance()
	switch p.tok.kind {
	case tokGlob:
		l.Glob = true
	case tokIdent:
		l.KeyValue = p.tok.text
	case tokInt:
		n, err := strconv.ParseInt(p.tok.text, 10, 64)
		if err != nil {
			return List{}, fmt.Errorf("%w: %s: %v", errInvalidInteger, p.tok.text, err)
		}
		l.KeyValue = n
	default:
		return List{}, unexpected(p.tok, `a key value or "*"`)
	}
	p.advance()
	if p.tok.kind != tokRBracket {
		return List{}, unexpected(p.tok, `"]"`)
	}
	p.advance()
	return l, nil
}
