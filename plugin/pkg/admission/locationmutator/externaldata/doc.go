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

// Package externaldata calls Gatekeeper's external data providers for the
// LocationMutator: an Assign or AssignMetadata whose value is externalData
// sends the value at its location (or the requester's name) to a Provider
// and writes what it answers.
//
// It speaks Gatekeeper's wire format (a ProviderRequest of keys, a
// ProviderResponse of items with per-key errors, a system error and an
// idempotent flag), so a provider written for Gatekeeper answers unchanged.
// Calls go over HTTPS only, verified against the Provider's caBundle, with
// an optional client certificate as Gatekeeper's client authentication
// offers, no redirects and a bound on the response size. Each call is
// bounded by the provider's timeout and by the admission request's own
// deadline. Answers are cached per provider and key, bounded in number and
// age; per-key errors are not cached.
package externaldata
