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

package policysync

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

const (
	// FieldManager is the server-side-apply field manager of every
	// policy and binding the mode writes, and of the source annotations.
	FieldManager = "admitkit"

	// SetLabel marks a policy or binding as the mode's: only objects with
	// it are ever deleted by the mode. Its value is the hash of the whole
	// set the object was written with, so that a replica can tell a set
	// written whole from one being replaced.
	SetLabel = "policies.admitkit.io/set"
	// ManagedByLabel is the well-known label, for operators' selectors.
	ManagedByLabel = "app.kubernetes.io/managed-by"

	// ObjectsAnnotation is how many policies and bindings the set has.
	ObjectsAnnotation = "policies.admitkit.io/objects"
	// SourcesAnnotation lists the objects the set carries, one a line,
	// "<Kind> <namespace>/<name>@<resourceVersion>" (no namespace for
	// cluster-scoped kinds): the resourceVersion compiled, for operators.
	SourcesAnnotation = "policies.admitkit.io/sources"
	// HashAnnotation is the hash of the object's own content, which tells
	// the controller that an object it observes is already what it would
	// apply.
	HashAnnotation = "policies.admitkit.io/hash"

	// CompiledAnnotation, on a preset or mutator, is "true" when the
	// compiled policies carry it and "false" when the webhook keeps it.
	CompiledAnnotation = "policies.admitkit.io/compiled"
	// NotCompiledAnnotation, on an object that did not compile, says why,
	// by field.
	NotCompiledAnnotation = "policies.admitkit.io/not-compiled"
)

// maxReasonLength bounds NotCompiledAnnotation: the reasons are for
// reading, and the Event carries them too.
const maxReasonLength = 1024

// Source kinds the compiler names presets by.
const (
	podPresetKind        = "PodPreset"
	clusterPodPresetKind = "ClusterPodPreset"
)

// mutatorKinds maps a Gatekeeper mutator resource to its kind.
var mutatorKinds = func() map[schema.GroupResource]mutation.Kind {
	out := map[schema.GroupResource]mutation.Kind{}
	for _, k := range mutation.Kinds {
		out[k.GVR().GroupResource()] = k
	}
	return out
}()

// formatSources is SourcesAnnotation's value: one line per source, sorted,
// so that the same set always reads the same.
func formatSources(carried map[compiler.Source]string) string {
	lines := make([]string, 0, len(carried))
	for s, rv := range carried {
		lines = append(lines, s.String()+"@"+rv)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// parseSources reads SourcesAnnotation. The resourceVersions are dropped:
// a source is carried by its identity (see Carried).
func parseSources(value string) ([]compiler.Source, error) {
	var out []compiler.Source
	for line := range strings.SplitSeq(value, "\n") {
		if line == "" {
			continue
		}
		kind, rest, ok := strings.Cut(line, " ")
		if !ok || kind == "" {
			return nil, fmt.Errorf("%q is not \"<Kind> <namespace>/<name>@<resourceVersion>\"", line)
		}
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			rest = rest[:at]
		}
		s := compiler.Source{Kind: kind, Name: rest}
		if ns, name, namespaced := strings.Cut(rest, "/"); namespaced {
			s.Namespace, s.Name = ns, name
		}
		if s.Name == "" {
			return nil, fmt.Errorf("%q names no object", line)
		}
		out = append(out, s)
	}
	return out, nil
}

// parseCount reads ObjectsAnnotation.
func parseCount(value string) (int, bool) {
	n, err := strconv.Atoi(value)
	return n, err == nil && n > 0
}
