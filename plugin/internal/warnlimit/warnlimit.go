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

// Package warnlimit bounds the admission warnings a plugin sends about one
// object: many mutators or presets in Warn mode must not give a client a
// response header of unbounded size. What is left out is in the audit log.
package warnlimit

import (
	"context"

	"k8s.io/apiserver/pkg/warning"
)

// Max is how many warnings a client is sent about one object, before the
// one that points at the audit log.
const Max = 5

// Sender sends the warnings of one object.
type Sender struct {
	ctx  context.Context
	more string
	n    int
}

// New returns a Sender whose last warning, sent once when there are more
// than Max, is more.
func New(ctx context.Context, more string) *Sender { return &Sender{ctx: ctx, more: more} }

// Add sends the warning msg makes, while fewer than Max were sent, and
// more in place of the first one past them.
func (s *Sender) Add(msg func() string) {
	s.n++
	switch {
	case s.n <= Max:
		warning.AddWarning(s.ctx, "", msg())
	case s.n == Max+1:
		warning.AddWarning(s.ctx, "", s.more)
	}
}
