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

// Package path reads and prints the location language of the LocationMutator
// admission plugin: dotted field names with optional keyed list selectors, as
// in `spec.containers[name: *].imagePullPolicy`.
//
// The language is the one Gatekeeper's mutators use, token for token, so that
// manifests written for Gatekeeper mean the same thing here. The one deliberate
// difference is the printer: it quotes every name that is not made only of
// bare-identifier characters, so a printed path always parses back to itself.
package path
