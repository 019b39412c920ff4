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

package locationmutator

import (
	"context"
	"slices"

	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// maxExternalRounds bounds the rounds of provider calls one request makes:
// a round's answers can move a later mutator to a new key, but no further
// than this. Keys still unanswered then fail, and the failure policy
// decides.
const maxExternalRounds = 3

// externalRequest is what answering externalData needs of a request: its
// context, whose deadline bounds the calls, its attributes (the username,
// the reinvocation context) and whether the run is a trial of a mutator in
// Warn or Audit mode.
type externalRequest struct {
	ctx   context.Context
	a     admission.Attributes
	trial bool
}

// runWithExternal runs the mutators through run and, when some of them
// ask for external data, answers their keys and runs them again: each
// provider is called once per round with all of its keys, answered from
// the cache where it can. A request no external-data mutator reaches
// makes no call. failed is the mutators' failure; err is the request's
// answer when the live providers are not known yet.
func (p *Plugin) runWithExternal(xr externalRequest, candidates []*mutation.Mutator, run func(*mutation.External) (mutation.Result, error)) (res mutation.Result, failed, err error) {
	if p.providers == nil || !slices.ContainsFunc(candidates, (*mutation.Mutator).UsesExternalData) {
		res, failed = run(nil)
		return res, failed, nil
	}
	ext := p.requestExternal(xr)
	var all mutation.Result
	for round := 1; ; round++ {
		res, failed := run(ext)
		all = mergeResults(candidates, all, res)
		if failed != nil {
			return all, failed, nil
		}
		want := ext.Wanted()
		if len(want) == 0 {
			all.ExternalValues = ext.WrittenValues()
			return all, nil, nil
		}
		if !p.providers.synced() {
			return all, nil, notSynced(xr.a)
		}
		ext.Add(p.providers.resolver.Resolve(xr.ctx, want))
		if round >= maxExternalRounds {
			ext.Finish()
		}
	}
}

// externalKey is where, in the request's reinvocation context, the
// plugin keeps the request's external data: when kube-apiserver invokes
// it again, a value it wrote from an answer is recognised as such, not
// sent to the provider as a new key, and known answers are not asked for
// again.
const externalKey = PluginName + "/external-data"

// requestExternal returns the request's external data, kept from an
// earlier invocation when there was one. A trial (Warn or Audit) gets its
// own, so that what it would write never counts as written.
func (p *Plugin) requestExternal(xr externalRequest) *mutation.External {
	username := ""
	if u := xr.a.GetUserInfo(); u != nil {
		username = u.GetName()
	}
	rc := xr.a.GetReinvocationContext()
	if xr.trial || rc == nil {
		return mutation.NewExternal(username)
	}
	if ext, ok := rc.Value(externalKey).(*mutation.External); ok {
		return ext
	}
	ext := mutation.NewExternal(username)
	rc.SetValue(externalKey, ext)
	return ext
}

// mergeResults adds a later round's result to the earlier ones': the
// mutators that changed the object, and those that reached their
// location, in either, in run order, and the passes of both.
func mergeResults(candidates []*mutation.Mutator, all, res mutation.Result) mutation.Result {
	all.Applied = unionInRunOrder(candidates, all.Applied, res.Applied)
	all.Reached = unionInRunOrder(candidates, all.Reached, res.Reached)
	all.Passes += res.Passes
	return all
}

// unionInRunOrder adds the mutators of add missing from ms, sorted in run
// order.
func unionInRunOrder(candidates []*mutation.Mutator, ms, add []*mutation.Mutator) []*mutation.Mutator {
	for _, m := range add {
		if !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	slices.SortStableFunc(ms, func(x, y *mutation.Mutator) int {
		return slices.Index(candidates, x) - slices.Index(candidates, y)
	})
	return ms
}
