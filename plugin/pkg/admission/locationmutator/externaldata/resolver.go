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

package externaldata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/klog/v2"
)

// Defaults of the answer cache. The TTL is Gatekeeper's default for its
// cache of provider answers (--external-data-provider-response-cache-ttl);
// Gatekeeper bounds only the age, this cache the number of entries too.
const (
	DefaultCacheSize = 10000
	DefaultCacheTTL  = 3 * time.Minute
)

// Answer is what a provider said about one key: a string value, or why
// there is none.
type Answer struct {
	Value string
	Err   error
}

// Resolver holds the providers a server knows and the answers they gave.
// It is safe for concurrent use; each Resolve sees one set of providers.
type Resolver struct {
	providers atomic.Pointer[map[string]*Provider]
	cache     *cache.LRUExpireCache // nil: caching is off
	ttl       time.Duration
}

// NewResolver returns a Resolver without providers whose cache holds at
// most size answers, each for at most ttl; a ttl or size of zero turns the
// cache off.
func NewResolver(size int, ttl time.Duration) *Resolver {
	registerMetrics()
	r := &Resolver{ttl: ttl}
	if size > 0 && ttl > 0 {
		r.cache = cache.NewLRUExpireCache(size)
	}
	empty := map[string]*Provider{}
	r.providers.Store(&empty)
	return r
}

// SetProviders replaces the providers. Answers of a provider that is gone
// or changed are no longer read: the cache is keyed by the compiled
// provider, and the stale entries age out.
func (r *Resolver) SetProviders(ps []*Provider) {
	m := make(map[string]*Provider, len(ps))
	for _, p := range ps {
		m[p.name] = p
	}
	r.providers.Store(&m)
	if r.cache != nil {
		r.cache.RemoveAll(func(k any) bool {
			ck := k.(cacheKey)
			p, ok := m[ck.provider]
			return !ok || p.epoch != ck.epoch
		})
	}
}

// Provider returns the provider of that name, if the resolver has it.
func (r *Resolver) Provider(name string) (*Provider, bool) {
	p, ok := (*r.providers.Load())[name]
	return p, ok
}

type cacheKey struct {
	provider string
	epoch    uint64
	key      string
}

// Resolve answers every key of want (provider name -> keys), from the
// cache where it can and otherwise with one call per provider carrying all
// of its missing keys, the calls running side by side. Every key has an
// answer when Resolve returns: a provider that is unknown, fails, or says
// nothing about a key gives that key an error, which the mutator's failure
// policy then decides on.
func (r *Resolver) Resolve(ctx context.Context, want map[string][]string) map[string]map[string]Answer {
	providers := *r.providers.Load()
	out := make(map[string]map[string]Answer, len(want))
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for name, keys := range want {
		answers := make(map[string]Answer, len(keys))
		out[name] = answers
		p, ok := providers[name]
		if !ok {
			for _, k := range keys {
				answers[k] = Answer{Err: fmt.Errorf("there is no external data provider %q", name)}
			}
			continue
		}
		missing := r.fromCache(p, keys, answers)
		if len(missing) == 0 {
			continue
		}
		wg.Go(func() {
			got := r.fetch(ctx, p, missing)
			mu.Lock()
			defer mu.Unlock()
			for k, a := range got {
				answers[k] = a
			}
		})
	}
	wg.Wait()
	return out
}

// fromCache fills answers with what the cache holds and returns the other
// keys, deduplicated and sorted.
func (r *Resolver) fromCache(p *Provider, keys []string, answers map[string]Answer) []string {
	var missing []string
	for _, k := range keys {
		if _, done := answers[k]; done {
			continue
		}
		if r.cache != nil {
			if v, ok := r.cache.Get(cacheKey{p.name, p.epoch, k}); ok {
				answers[k] = Answer{Value: v.(string)}
				cacheHits.WithLabelValues(p.name).Inc()
				continue
			}
		}
		answers[k] = Answer{} // marks the key as seen; fetch fills it
		missing = append(missing, k)
	}
	slices.Sort(missing)
	return missing
}

// fetch calls p once for keys and turns its answer into one Answer per
// key, caching the values.
func (r *Resolver) fetch(ctx context.Context, p *Provider, keys []string) map[string]Answer {
	start := time.Now()
	items, err := p.call(ctx, keys)
	callDuration.WithLabelValues(p.name).Observe(time.Since(start).Seconds())
	out := make(map[string]Answer, len(keys))
	if err != nil {
		reason := errorReason(ctx, err)
		calls.WithLabelValues(p.name, reason).Inc()
		err = fmt.Errorf("external data provider %q: %w", p.name, err)
		klog.V(4).InfoS("External data provider call failed", "provider", p.name, "keys", len(keys), "reason", reason, "err", err)
		for _, k := range keys {
			out[k] = Answer{Err: err}
		}
		return out
	}
	calls.WithLabelValues(p.name, resultSuccess).Inc()
	for _, k := range keys {
		out[k] = r.answer(p, k, items)
	}
	return out
}

// answer reads one key's item. Only string values are kept, as Gatekeeper
// keeps them; a per-key error is not cached, so a key that failed once is
// asked again on the next request.
func (r *Resolver) answer(p *Provider, k string, items map[string]Item) Answer {
	it, ok := items[k]
	switch {
	case !ok:
		keyErrors.WithLabelValues(p.name).Inc()
		return Answer{Err: fmt.Errorf("external data provider %q gave no answer for %q", p.name, k)}
	case it.Error != "":
		keyErrors.WithLabelValues(p.name).Inc()
		return Answer{Err: fmt.Errorf("external data provider %q: %q: %s", p.name, k, it.Error)}
	}
	s, ok := it.Value.(string)
	if !ok {
		keyErrors.WithLabelValues(p.name).Inc()
		return Answer{Err: fmt.Errorf("external data provider %q answered %q with a %T, not a string", p.name, k, it.Value)}
	}
	if r.cache != nil {
		r.cache.Add(cacheKey{p.name, p.epoch, k}, s, r.ttl)
	}
	return Answer{Value: s}
}

// errorReason classifies a failed call for the calls metric.
func errorReason(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded), ctx.Err() != nil:
		return resultTimeout
	case errors.Is(err, errRedirect):
		return resultRedirect
	default:
		return resultError
	}
}
