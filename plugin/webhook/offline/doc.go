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

// Package offline admits manifests without a cluster, through the webhook
// host's own Review (package webhook), so that a CI pipeline sees what a
// kube-apiserver running admitkit's plugins would store, or refuse.
//
// New makes the cluster state the plugins read from the inputs (presets,
// cluster presets, namespaces and mutators held in fake clientsets, handed
// to the plugins by webhook.NewInitializers as a server's live clients
// are), checks each preset and mutator the way the server refuses a bad
// one, starts the host and waits for every plugin's caches. Admit then
// judges each object as a create: every mutating plugin in the chain order
// in one review, as the webhook server answers a path naming them all,
// with the JSONPatch it returns applied, then every validating plugin, and
// returns the object admitted with the warnings, or the refusal.
//
// Run is `admitkit admit` without its flags: it reads the input and state
// manifests (ReadObjects, ReadState), gives each object the namespace its
// kind's scope asks for (Kinds: the built-in kinds' scope from client-go's
// typed clients, the CRDs' from their definitions), admits each object as
// a request of its own and, when asked, the pod the controller of each
// admitted workload would create. RunTests is `admitkit admit test`.
package offline
