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

// Sentinel errors of Parse, for errors.Is. Only the first problem in a
// string is reported.
var (
	// ErrUnexpectedToken is a token the grammar does not allow where it
	// appears; scanner errors (bad characters, unterminated strings) are
	// reported this way too.
	ErrUnexpectedToken = errors.New("unexpected token")
	// ErrTrailingSeparator is a path ending in `.`.
	ErrTrailingSeparator = errors.New("trailing separator")
	// ErrInvalidInteger is a list key value that does not fit in an int64.
	ErrInvalidInteger = errors.New("invalid integer")
)

type parser struct {
	s   *Scanner
	tok Token
}

func (p *parser) advance() { p.tok = p.s.Next() }

func unexpected(got Token, want string) error {
	return fmt.Errorf("%w: expected %s, got %s", ErrUnexpectedToken, want, got)
}

// Parse reads a location string. An empty (or all-blank) string gives a Path
// with no nodes and no error; callers that need a location reject it.
func Parse(s string) (Path, error) {
	p := &parser{s: NewScanner(s)}
	p.advance()
	if p.tok.Kind == EOF {
		return Path{}, nil
	}
	var nodes []Node
	for {
		if p.tok.Kind != Ident {
			return Path{}, unexpected(p.tok, "a field name")
		}
		nodes = append(nodes, Object{Reference: p.tok.Text})
		p.advance()
		if p.tok.Kind == LBracket {
			l, err := p.list()
			if err != nil {
				return Path{}, err
			}
			nodes = append(nodes, l)
		}
		switch p.tok.Kind {
		case EOF:
			return Path{Nodes: nodes}, nil
		case Separator:
			p.advance()
			if p.tok.Kind == EOF {
				return Path{}, fmt.Errorf("%w: %q ends in %q", ErrTrailingSeparator, s, ".")
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
	if p.tok.Kind != Ident {
		return List{}, unexpected(p.tok, "a key field")
	}
	l := List{KeyField: p.tok.Text}
	p.advance()
	if p.tok.Kind != Colon {
		return List{}, unexpected(p.tok, `":"`)
	}
	p.advance()
	switch p.tok.Kind {
	case Glob:
		l.Glob = true
	case Ident:
		l.KeyValue = p.tok.Text
	case Int:
		n, err := strconv.ParseInt(p.tok.Text, 10, 64)
		if err != nil {
			return List{}, fmt.Errorf("%w: %s: %v", ErrInvalidInteger, p.tok.Text, err)
		}
		l.KeyValue = n
	default:
		return List{}, unexpected(p.tok, `a key value or "*"`)
	}
	p.advance()
	if p.tok.Kind != RBracket {
		return List{}, unexpected(p.tok, `"]"`)
	}
	p.advance()
	return l, nil
}
