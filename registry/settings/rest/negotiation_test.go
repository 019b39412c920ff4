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
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	serverstorage "k8s.io/apiserver/pkg/server/storage"

	"github.com/admitkit/admitkit/registry/settings/internal/registrytest"
)

// TestNegotiation asks the group's serializer what kube-apiserver's
// handlers ask it: protobuf-first clients get JSON, only a protobuf-only
// Accept is refused, and a protobuf body is unsupported.
func TestNegotiation(t *testing.T) {
	info, err := NewAPIGroupInfo(registrytest.Scheme, runtime.NewParameterCodec(registrytest.Scheme), serializer.NewCodecFactory(registrytest.Scheme),
		registrytest.NewRESTOptionsGetter(t), serverstorage.NewResourceConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	served := info.NegotiatedSerializer
	for _, tc := range []struct {
		accept string
		want   string // "" when refused
	}{
		{accept: "application/vnd.kubernetes.protobuf, application/json", want: runtime.ContentTypeJSON},
		{accept: "application/vnd.kubernetes.protobuf,application/json;q=0.9", want: runtime.ContentTypeJSON},
		{accept: "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", want: runtime.ContentTypeJSON},
		{accept: "application/json", want: runtime.ContentTypeJSON},
		{accept: "application/yaml", want: runtime.ContentTypeYAML},
		{accept: "*/*", want: runtime.ContentTypeJSON},
		{accept: "application/vnd.kubernetes.protobuf"},
	} {
		t.Run(tc.accept, func(t *testing.T) {
			req := &http.Request{Header: http.Header{"Accept": []string{tc.accept}}}
			mediaType, _, err := negotiation.NegotiateOutputMediaType(req, served, negotiation.DefaultEndpointRestrictions)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("negotiated %s, want a 406", mediaType.Accepted.MediaType)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := mediaType.Accepted.MediaType; got != tc.want {
				t.Errorf("negotiated %s, want %s", got, tc.want)
			}
		})
	}
	for contentType, ok := range map[string]bool{
		runtime.ContentTypeJSON:     true,
		runtime.ContentTypeYAML:     true,
		runtime.ContentTypeProtobuf: false,
	} {
		t.Run("body "+contentType, func(t *testing.T) {
			req := &http.Request{Header: http.Header{"Content-Type": []string{contentType}}}
			_, err := negotiation.NegotiateInputSerializer(req, false, served)
			if ok != (err == nil) {
				t.Errorf("accepted = %v, want %v (err %v)", err == nil, ok, err)
			}
		})
	}
}
