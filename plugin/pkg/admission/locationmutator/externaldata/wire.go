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

package externaldata

// The wire format of Gatekeeper's external data, as its providers read and
// write it.

// requestAPIVersion is the apiVersion of the requests Gatekeeper sends.
const requestAPIVersion = "externaldata.gatekeeper.sh/v1beta1"

// ProviderRequest is the body POSTed to a provider: every key it should
// answer.
type ProviderRequest struct {
	APIVersion string  `json:"apiVersion,omitempty"`
	Kind       string  `json:"kind,omitempty"`
	Request    Request `json:"request,omitempty"`
}

// Request holds the keys of a ProviderRequest.
type Request struct {
	Keys []string `json:"keys,omitempty"`
}

// ProviderResponse is the body a provider answers.
type ProviderResponse struct {
	APIVersion string   `json:"apiVersion,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Response   Response `json:"response,omitempty"`
}

// Response holds a provider's answer: an item per key, or a system error
// for the whole request. A mutation uses only idempotent answers.
type Response struct {
	Idempotent  bool   `json:"idempotent,omitempty"`
	Items       []Item `json:"items,omitempty"`
	SystemError string `json:"systemError,omitempty"`
}

// Item is the answer for one key: a value, or an error.
type Item struct {
	Key   string `json:"key,omitempty"`
	Value any    `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
}

func newProviderRequest(keys []string) ProviderRequest {
	return ProviderRequest{APIVersion: requestAPIVersion, Kind: "ProviderRequest", Request: Request{Keys: keys}}
}
