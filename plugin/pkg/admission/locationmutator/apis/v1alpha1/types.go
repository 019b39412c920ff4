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

// Package v1alpha1 holds the LocationMutator's admission plugin
// configuration, the object an AdmissionConfiguration names for the plugin
// (inline under `configuration`, or in the file `path` points to):
//
//	apiVersion: locationmutator.admission.admitkit.io/v1alpha1
//	kind: Configuration
//	mutators:
//	- apiVersion: mutations.gatekeeper.sh/v1
//	  kind: Assign
//	  ...
//	mutatorFiles:
//	- /etc/kubernetes/mutators/*.yaml
//	watchMutators: true
//
// The types are plain structs decoded strictly from YAML or JSON; they are
// never served, so they need no registration or generated code.
package v1alpha1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupName, Version and Kind identify the configuration object.
const (
	GroupName = "locationmutator.admission.admitkit.io"
	Version   = "v1alpha1"
	Kind      = "Configuration"
)

// APIVersion is GroupName/Version.
const APIVersion = GroupName + "/" + Version

// Configuration lists the mutators the plugin runs. Both lists may be used
// together; every mutator must have a distinct kind and name across them.
// An empty configuration (or none at all) means no mutators: the plugin
// then admits everything unchanged.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// Mutators are Gatekeeper mutator manifests (Assign, AssignMetadata,
	// ModifySet, AssignImage), written exactly as for Gatekeeper.
	Mutators []json.RawMessage `json:"mutators,omitempty"`

	// MutatorFiles name files of mutator manifests: multi-document YAML or
	// JSON, as `kubectl apply -f` takes them, including `kind: List`.
	// A relative path is resolved against kube-apiserver's working
	// directory, since the plugin config reaches the plugin without the
	// path it was read from; use absolute paths. A pattern with `*`, `?` or
	// `[` is expanded (filepath.Glob) and must match at least one file.
	MutatorFiles []string `json:"mutatorFiles,omitempty"`

	// WatchMutators turns on mutators from the API: the plugin watches the
	// Assign, AssignMetadata, ModifySet and AssignImage objects of
	// mutations.gatekeeper.sh, as Gatekeeper keeps them, and runs them
	// beside the ones above, following every change without a restart. A
	// mutator from the API never replaces one from this configuration.
	// Off by default.
	WatchMutators bool `json:"watchMutators,omitempty"`

	// MutationAnnotations turns on the annotations Gatekeeper's
	// --mutation-annotations flag writes, in Gatekeeper's format, on every
	// object a mutator changed: gatekeeper.sh/mutations lists the mutators
	// that changed it ("Assign//<name>:<generation>, ...", sorted), and
	// gatekeeper.sh/mutation-id is a UUID of that admission. For tools that
	// read them. Off by default.
	MutationAnnotations bool `json:"mutationAnnotations,omitempty"`

	// ExternalData configures the providers that an Assign or
	// AssignMetadata with externalData asks for its value.
	ExternalData ExternalData `json:"externalData,omitempty"`
}

// ExternalData configures the calls to Gatekeeper's external data
// providers. With watchMutators, the Provider objects of
// externaldata.gatekeeper.sh are followed too; a provider listed here
// wins over an object of the same name.
type ExternalData struct {
	// Providers are Provider manifests (externaldata.gatekeeper.sh/v1beta1
	// or v1alpha1), written exactly as for Gatekeeper.
	Providers []json.RawMessage `json:"providers,omitempty"`
	// ClientCertFile and ClientKeyFile are a PEM certificate and key that
	// kube-apiserver presents to providers asking for a client
	// certificate, as Gatekeeper presents its own with
	// --enable-external-data-client-auth. They are read again when they
	// change. Both or neither.
	ClientCertFile string `json:"clientCertFile,omitempty"`
	ClientKeyFile  string `json:"clientKeyFile,omitempty"`
	// CacheSize bounds the number of answers kept (per provider and key);
	// 0 turns the cache off. Default 10000.
	CacheSize *int `json:"cacheSize,omitempty"`
	// CacheTTL bounds how long an answer is kept; 0 turns the cache off.
	// Default 3m, Gatekeeper's.
	CacheTTL *metav1.Duration `json:"cacheTTL,omitempty"`
}
