// Package path reads and prints the location language of the LocationMutator
// admission plugin: dotted field names with optional keyed list selectors, as
// in `spec.containers[name: *].imagePullPolicy`.
//
// The language is the one Gatekeeper's mutators use, token for token, so that
// manifests written for Gatekeeper mean the same thing here. The one deliberate
// difference is the printer: it quotes every name that is not made only of
// bare-identifier characters, so a printed path always parses back to itself.
package path
