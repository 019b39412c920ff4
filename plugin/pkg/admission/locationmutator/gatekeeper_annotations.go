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
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// The annotations Gatekeeper writes with --mutation-annotations, which the
// configuration's mutationAnnotations turns on here.
const (
	// MutationsAnnotation lists the mutators that reached their location in
	// a pass that changed the object (mutation.Result.Reached), as
	// Gatekeeper lists them: a mutator whose value was already there is
	// named beside the one that changed the object.
	MutationsAnnotation = "gatekeeper.sh/mutations"
	// MutationIDAnnotation identifies the admission that changed it.
	MutationIDAnnotation = "gatekeeper.sh/mutation-id"
)

// annotateMutations writes both annotations on an object the mutators
// changed, naming res.Reached in Gatekeeper's format: each mutator as
// "<Kind>/<namespace>/<name>:<generation>" (mutators are cluster-scoped, so
// the namespace is empty), sorted and without repeats, joined by ", ";
// and a new UUID.
func annotateMutations(obj runtime.Object, res mutation.Result) error {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("annotating the mutated object: %w", err)
	}
	// Every name is written into one buffer and sliced out of its string,
	// rather than formatted into a string of its own.
	n := 0
	var digits [20]byte
	for _, m := range res.Reached {
		id := m.ID()
		n += len(id.Kind) + len(id.Name) + len("//:") + len(strconv.AppendInt(digits[:0], m.Generation(), 10))
	}
	var b strings.Builder
	b.Grow(n)
	ends := make([]int, len(res.Reached))
	for i, m := range res.Reached {
		id := m.ID()
		b.WriteString(id.Kind)
		b.WriteString("//")
		b.WriteString(id.Name)
		b.WriteByte(':')
		b.Write(strconv.AppendInt(digits[:0], m.Generation(), 10))
		ends[i] = b.Len()
	}
	all := b.String()
	names := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		names[i], start = all[start:end], end
	}
	slices.Sort(names)
	annotations := accessor.GetAnnotations()
	if annotations == nil {
		annotations = make(map[string]string, 2)
	}
	annotations[MutationsAnnotation] = strings.Join(slices.Compact(names), ", ")
	annotations[MutationIDAnnotation] = string(uuid.NewUUID())
	accessor.SetAnnotations(annotations)
	return nil
}
