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

// Package webhook serves the plugins of an admission.Plugins registry as
// kube-apiserver admission webhooks, so that a cluster whose kube-apiserver
// cannot be rebuilt runs the very plugins a custom build compiles in.
//
// A Host builds each plugin once, the way kube-apiserver does (its factory
// from the registry with its AdmissionConfiguration entry, the same
// initializers, then ValidateInitialization), and answers AdmissionReview v1
// requests with it:
//
//	POST /mutate/<PluginName>    the plugin's Admit (a mutating webhook)
//	POST /validate/<PluginName>  the plugin's Validate (a validating webhook)
//	POST /mutate/<A>/<B>/...     a chain: A's Admit, then B's, ... in one review
//	POST /validate/<A>/<B>/...   the same with Validate
//	GET  /healthz, /readyz       alive; ready once every plugin's caches synced
//	GET  /metrics                the plugins' metrics and the webhook's own
//
// Review is the one code path from a decoded request to its response, for
// one plugin or a chain of them, shared by the HTTP handler and by hosts
// without HTTP (an offline admit command). A chain runs as kube-apiserver's
// admission chain runs its plugins in-process: on one decoded object, in
// order, until the first refusal, with one patch of all their changes. It gives the plugin what kube-apiserver would: the request's
// versioned objects (custom resources unstructured), its options, dry run,
// user with extra, and a reinvocation context shared by the reviews of one
// request (kube-apiserver's second call of a mutating webhook is told from
// a new request by the plugin's own changes in its object: see
// reinvocation.go). What the plugin did comes back as kube-apiserver
// expects it of a webhook: its refusal as the metav1.Status kube-apiserver
// itself would answer, a JSONPatch of its changes, its warnings, and its
// audit annotations.
//
// What kube-apiserver does with the answer: it prefixes the refusal's
// message with `admission webhook "<webhook name>" denied the request: `;
// it records each audit annotation as "<webhook name>/<key>" and drops keys
// that then hold two "/", so the response carries a plugin's
// "<plugin domain>/<name>" keys by their name alone, and a webhook named
// after the plugin's domain records the keys the plugin records
// in-process (a chain's webhook records its plugins' under its own name);
// it adds the warnings as they are.
package webhook
