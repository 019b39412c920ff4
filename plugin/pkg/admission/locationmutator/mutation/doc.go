// Package mutation holds the LocationMutator's mutators and the system that
// runs them: Gatekeeper's Assign, AssignMetadata, ModifySet and AssignImage,
// read from the same manifests Gatekeeper takes, applied to an object in its
// unstructured form (map[string]interface{}) until it stops changing.
//
// Unlike Gatekeeper, a mutator reports whether it really changed a value (it
// compares before it writes), so an object that needs nothing costs one walk
// per mutator and no copy. An explicit null is treated as a missing field, and
// numbers compare by value whether they were decoded as integers or floats.
package mutation
