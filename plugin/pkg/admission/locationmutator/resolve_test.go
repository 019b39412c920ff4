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
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// The resolver decides incrementally what deciding every mutator again in
// precedence order would: a removal or an addition changes the mutators
// after it along the conflict graph, and only those.
func TestResolverCascades(t *testing.T) {
	pod := func(name, loc string) string {
		return fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: %s}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: %q
  parameters: {assign: {value: x}}`, name, loc)
	}
	// a and c use spec.c as an object, b as a list: a and c agree, b
	// conflicts with both.
	f := &liveFixture{t: t}
	now := time.Now()
	a := f.object(pod("a", "spec.c.v"), now)
	b := f.object(pod("b", "spec.c[name: x].v"), now.Add(time.Second))
	c := f.object(pod("c", "spec.c.w"), now.Add(2*time.Second))
	aLater := f.object(pod("a", "spec.c.v"), now.Add(3*time.Second))

	static, _ := mutation.NewSystem(nil)
	r := newResolver(static)
	enforced := func() []string {
		var out []string
		for _, m := range r.system.System().Mutators() {
			out = append(out, m.ID().Name)
		}
		return out
	}
	steps := []struct {
		name         string
		put          []*liveMutator
		remove       []types.UID
		wantEnforced []string
		wantChanged  []string
	}{
		{"all three: b loses to a, so c runs", []*liveMutator{decodeObject(c), decodeObject(b), decodeObject(a)}, nil, []string{"a", "c"}, []string{"a", "b", "c"}},
		{"a removed: b runs, so c loses to it", nil, []types.UID{a.GetUID()}, []string{"b"}, []string{"b", "c"}},
		{"a again, created last: it loses to b", []*liveMutator{decodeObject(aLater)}, nil, []string{"b"}, []string{"a"}},
		{"b removed: a and c run again", nil, []types.UID{b.GetUID()}, []string{"a", "c"}, []string{"a", "c"}},
	}
	for _, step := range steps {
		for _, uid := range step.remove {
			r.remove(uid)
		}
		for _, lm := range step.put {
			r.put(lm)
		}
		var changed []string
		for _, lm := range r.settle() {
			changed = append(changed, lm.id.Name)
		}
		slices.Sort(changed)
		if got := enforced(); !slices.Equal(got, step.wantEnforced) || !slices.Equal(changed, step.wantChanged) {
			t.Fatalf("%s: enforced %v, changed %v; want %v and %v", step.name, got, changed, step.wantEnforced, step.wantChanged)
		}
	}
	if got := r.states; got[stateEnforced] != 2 || got[stateConflict] != 0 || got[stateError] != 0 {
		t.Fatalf("states %v, want 2 enforced and nothing else", got)
	}
}
