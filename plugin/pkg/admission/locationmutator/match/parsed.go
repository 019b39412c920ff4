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

package match

// The accessors below give a compiled Match to a compiler that restates it
// in another language (plugin/compiler), so that there is one parser of
// wildcards and selectors.

// Pattern is a wildcard as Compile read it: Text, with anything allowed
// before it (AnyBefore, a leading `*`) and after it (AnyAfter, a trailing
// `*`); both is a contains match, neither an exact one.
type Pattern struct {
	Text                string
	AnyBefore, AnyAfter bool
}

func (w wildcard) pattern() Pattern {
	return Pattern{Text: w.text, AnyBefore: w.anyBefore, AnyAfter: w.anyAfter}
}

func patternsOf(ws []wildcard) []Pattern {
	out := make([]Pattern, len(ws))
	for i, w := range ws {
		out[i] = w.pattern()
	}
	return out
}

// Spec returns the Match the matcher was compiled from.
func (m *Matcher) Spec() Match { return m.spec }

// NamespacePatterns returns the parsed namespaces and excludedNamespaces.
func (m *Matcher) NamespacePatterns() (namespaces, excluded []Pattern) {
	return patternsOf(m.namespaces), patternsOf(m.excludedNamespaces)
}

// NamePattern returns the parsed name wildcard; false when there is none.
func (m *Matcher) NamePattern() (Pattern, bool) {
	if m.name == nil {
		return Pattern{}, false
	}
	return m.name.pattern(), true
}

// NeverMatches reports a matcher that matches no object in-process: one
// for Generated objects, which only Gatekeeper's expansion makes.
func (m *Matcher) NeverMatches() bool { return m.generated }
