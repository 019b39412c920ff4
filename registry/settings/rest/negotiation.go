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

package rest

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// withoutProtobuf serves settings.k8s.io in every media type of the
// server's codecs except protobuf, the way kube-apiserver serves custom
// resources. Our types have no protobuf encoding, and a codec factory
// offers protobuf for every type: a client that asks for protobuf first
// with JSON as its fallback (kube-controller-manager, kubelet, any client
// configured for protobuf) would be answered 406 instead of JSON. Left out
// of negotiation, protobuf is never chosen: such a client gets JSON, a
// protobuf-only request gets 406, and a protobuf body gets 415.
type withoutProtobuf struct {
	runtime.NegotiatedSerializer
}

func (s withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	all := s.NegotiatedSerializer.SupportedMediaTypes()
	served := make([]runtime.SerializerInfo, 0, len(all))
	for _, info := range all {
		if info.MediaType != runtime.ContentTypeProtobuf {
			served = append(served, info)
		}
	}
	return served
}
