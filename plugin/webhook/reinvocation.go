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

package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/admission"
)

// kube-apiserver calls a mutating webhook a second time on one request
// when something after it changed the object (reinvocationPolicy
// IfNeeded), but gives each call a new UID and says nothing of it being a
// second call. In-process, every call of a plugin on a request shares one
// reinvocation context, where the plugin notes what it has counted, warned
// about and recorded, so that a second call adds none of it again. The
// host gives a review that context when it recognizes the request:
//
//   - the review has the fingerprint of an earlier one of the same plugin:
//     the same operation, resource, subresource, namespace, name, user,
//     dry run, options and old object, everything kube-apiserver keeps the
//     same between the calls, and
//   - the earlier review changed the object, and the object now holds
//     every value that change wrote: kube-apiserver sends the object as
//     the earlier call left it, plus what came after.
//
// A new request of the same fingerprint (a controller's next, identical
// pod) arrives without the plugin's changes, so it is a request of its
// own. A call whose earlier call changed nothing, or whose changes a later
// webhook overwrote, cannot be told from a new request: its plugin counts
// it again (kube-apiserver still shows a warning text once).
//
// reinvocations keeps the requests' state by fingerprint: at most
// maxPerFingerprint states for each (concurrent identical requests), a
// bounded number of fingerprints, each for a limited time that outlasts
// any request kube-apiserver is still working on.
type reinvocations struct {
	mu    sync.Mutex
	cache *cache.LRUExpireCache
	ttl   time.Duration
}

const maxPerFingerprint = 8

func newReinvocations(size int, ttl time.Duration) *reinvocations {
	return &reinvocations{cache: cache.NewLRUExpireCache(size), ttl: ttl}
}

// requestState is what the plugin keeps about one request across its
// reviews.
type requestState struct {
	// mu serializes the reviews of one request: the plugins' records are
	// not safe for concurrent use.
	mu     sync.Mutex
	values map[string]any
	// reinvoked is set once the plugin's Admit ran a second time.
	reinvoked bool
	// written are the values the plugin's patches wrote, which a
	// reinvocation's object holds.
	written []writtenValue
	// input hashes the object of the last mutating review. An object the
	// same as that is not a second call, which comes only after a change:
	// it is a new request just like the first (a controller's next pod),
	// told apart without decoding it.
	input uint64
}

// writtenValue is a value at a path a patch wrote; removed for a path it
// removed.
type writtenValue struct {
	path    string
	value   []byte
	removed bool
}

var fingerprintSeed = maphash.MakeSeed()

// requestKey is the context key of WithRequest.
type requestKey struct{}

// WithRequest tells Review which request of the caller's its reviews
// belong to, for a caller that knows (offline, which admits each input
// object as a request of its own): reviews under different requests never
// share a request state, even when the objects look alike, and the
// reviews of one request share it as kube-apiserver's calls of one request
// do. kube-apiserver's reviews carry none; the host recognizes them.
func WithRequest(ctx context.Context, request string) context.Context {
	return context.WithValue(ctx, requestKey{}, request)
}

func requestOf(ctx context.Context) string {
	request, _ := ctx.Value(requestKey{}).(string)
	return request
}

// fingerprint hashes what kube-apiserver sends the same on every call of
// one request to the plugin's webhook.
func fingerprint(plugin, request string, req *admissionv1.AdmissionRequest) uint64 {
	var h maphash.Hash
	h.SetSeed(fingerprintSeed)
	field := func(s string) {
		_, _ = h.WriteString(strconv.Itoa(len(s)))
		_, _ = h.WriteString(":")
		_, _ = h.WriteString(s)
	}
	field(plugin)
	field(request)
	field(string(req.Operation))
	field(req.Resource.String())
	field(req.SubResource)
	field(req.Namespace)
	field(req.Name)
	field(req.UserInfo.Username)
	field(req.UserInfo.UID)
	field(strings.Join(req.UserInfo.Groups, "\x00"))
	for _, k := range sortedKeys(req.UserInfo.Extra) {
		field(k)
		field(strings.Join(req.UserInfo.Extra[k], "\x00"))
	}
	field(strconv.FormatBool(req.DryRun != nil && *req.DryRun))
	field(string(req.Options.Raw))
	field(string(req.OldObject.Raw))
	return h.Sum64()
}

// state returns the state of the request req is a review of, and whether
// an earlier review of the plugin's made it. Only mutating reviews leave a
// state behind: a validating review comes after them.
func (r *reinvocations) state(plugin, request string, req *admissionv1.AdmissionRequest, mutating bool) (*requestState, bool) {
	key := fingerprint(plugin, request, req)
	r.mu.Lock()
	var earlier []*requestState
	if v, ok := r.cache.Get(key); ok {
		earlier = v.([]*requestState)
	}
	r.mu.Unlock()
	if s := recognize(earlier, req.Object.Raw, inputHash(req)); s != nil {
		return s, true
	}
	s := &requestState{}
	if mutating {
		r.mu.Lock()
		states := earlier
		if v, ok := r.cache.Get(key); ok {
			states = v.([]*requestState)
		}
		if len(states) >= maxPerFingerprint {
			states = states[1:]
		}
		r.cache.Add(key, append(states[:len(states):len(states)], s), r.ttl)
		r.mu.Unlock()
	}
	return s, false
}

func inputHash(req *admissionv1.AdmissionRequest) uint64 {
	return maphash.Bytes(fingerprintSeed, req.Object.Raw)
}

// recognize returns the newest state whose written values object holds.
func recognize(states []*requestState, object []byte, input uint64) *requestState {
	var doc any
	decoded := false
	for i := len(states) - 1; i >= 0; i-- {
		s := states[i]
		s.mu.Lock()
		written, seen := s.written, s.input == input
		s.mu.Unlock()
		if len(written) == 0 || seen {
			continue
		}
		if !decoded {
			if decodeNumbers(object, &doc) != nil {
				return nil
			}
			decoded = true
		}
		if holds(doc, written) {
			return s
		}
	}
	return nil
}

func holds(doc any, written []writtenValue) bool {
	for _, w := range written {
		v, found := resolve(doc, pointerTokens(w.path))
		if w.removed {
			if found {
				return false
			}
			continue
		}
		var value any
		if !found || decodeNumbers(w.value, &value) != nil || !contains(v, value) {
			return false
		}
	}
	return true
}

// contains reports whether v holds want: every key of an object (a later
// webhook may have added others, such as an annotation beside the
// plugin's), every element of a list of the same length, an equal scalar.
func contains(v, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			if mv, ok := m[k]; !ok || !contains(mv, wv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := v.([]any)
		if !ok || len(l) != len(w) {
			return false
		}
		for i := range w {
			if !contains(l[i], w[i]) {
				return false
			}
		}
		return true
	}
	return v == want
}

// resolve follows a JSON Pointer's tokens into doc.
func resolve(doc any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch node := doc.(type) {
		case map[string]any:
			v, ok := node[t]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			doc = node[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// wrote notes the values a patch of the plugin's wrote. A path written
// again, or one under or over it, keeps only the newer value.
func (s *requestState) wrote(ops []patchOperation) {
	kept := s.written[:0:0]
	for _, w := range s.written {
		if !overlapsAny(w.path, ops) {
			kept = append(kept, w)
		}
	}
	for _, op := range ops {
		// A copy: op.Value is a slice of the whole encoded object.
		kept = append(kept, writtenValue{path: op.Path, value: bytes.Clone(op.Value), removed: op.Op == "remove"})
	}
	s.written = kept
}

func overlapsAny(path string, ops []patchOperation) bool {
	for _, op := range ops {
		if within(path, op.Path) || within(op.Path, path) {
			return true
		}
	}
	return false
}

// within reports whether path is at or under parent.
func within(path, parent string) bool {
	return path == parent || strings.HasPrefix(path, parent+"/")
}

func pointerTokens(path string) []string {
	if path == "" {
		return nil
	}
	tokens := strings.Split(path[1:], "/")
	for i, t := range tokens {
		tokens[i] = pointerUnescaper.Replace(t)
	}
	return tokens
}

var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// decodeNumbers decodes JSON keeping numbers as their text, so that values
// compare as kube-apiserver and the host both encode them.
func decodeNumbers(data []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// begin starts a review of the request and returns its reinvocation
// context. Call it with s.mu held.
func (s *requestState) begin(req *admissionv1.AdmissionRequest, mutating, recognized bool) *reinvocationContext {
	if mutating {
		s.input = inputHash(req)
		if recognized {
			s.reinvoked = true
		}
	}
	return &reinvocationContext{state: s, isReinvoke: s.reinvoked}
}

// reinvocationContext is one review's view of the request's state.
type reinvocationContext struct {
	state          *requestState
	isReinvoke     bool
	shouldReinvoke bool
}

var _ admission.ReinvocationContext = &reinvocationContext{}

func (rc *reinvocationContext) IsReinvoke() bool { return rc.isReinvoke }

func (rc *reinvocationContext) SetIsReinvoke() { rc.isReinvoke = true }

// ShouldReinvoke reports what the plugin asked for; kube-apiserver decides
// itself whether to call a webhook again, from how the object changed.
func (rc *reinvocationContext) ShouldReinvoke() bool { return rc.shouldReinvoke }

func (rc *reinvocationContext) SetShouldReinvoke() { rc.shouldReinvoke = true }

func (rc *reinvocationContext) Value(plugin string) any { return rc.state.values[plugin] }

func (rc *reinvocationContext) SetValue(plugin string, v any) {
	if rc.state.values == nil {
		rc.state.values = map[string]any{}
	}
	rc.state.values[plugin] = v
}
