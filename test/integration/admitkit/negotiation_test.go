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

package admitkit

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// TestContentNegotiation sends settings.k8s.io the Accept and Content-Type
// headers real clients send. Clients that prefer protobuf and fall back to
// JSON (kube-controller-manager, kubelet, anything configured for
// protobuf) get JSON; only a protobuf-only request is refused.
func TestContentNegotiation(t *testing.T) { onEachHost(t, testContentNegotiation) }

func testContentNegotiation(t *testing.T, h *host) {
	ns := "negotiation"
	framework.CreateNamespace(t, h.server.AdminConfig(), ns, nil)
	if _, err := framework.SettingsClient(t, h.server.AdminConfig()).SettingsV1alpha1().PodPresets(ns).Create(context.Background(), podPreset("db", map[string]string{"app": "web"}, corev1.EnvVar{Name: "DB", Value: "1"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testNegotiatedRequests(t, h, ns)
	t.Run("metadata client", func(t *testing.T) { testPresetsMetadataClient(t, h, ns) })
	t.Run("protobuf-preferring clientset", func(t *testing.T) { testProtobufPreferringClientset(t, h) })
}

const (
	protobuf      = runtime.ContentTypeProtobuf
	protobufFirst = "application/vnd.kubernetes.protobuf, application/json"
)

// negotiation is a request with the headers a client sends, and the status
// and content type it must get.
type negotiation struct {
	name, method, path, accept, contentType, body string
	wantStatus                                    int
	wantType                                      string
}

// testNegotiatedRequests sends the group requests with each client's
// headers.
func testNegotiatedRequests(t *testing.T, h *host, ns string) {
	httpClient, err := rest.HTTPClientFor(h.server.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	presetJSON := `{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPreset","metadata":{"name":"posted"},"spec":{"env":[{"name":"A","value":"1"}]}}`
	for _, tc := range []negotiation{
		{name: "list, protobuf first", method: http.MethodGet, path: "/namespaces/" + ns + "/podpresets", accept: protobufFirst, wantStatus: http.StatusOK, wantType: runtime.ContentTypeJSON},
		{name: "get, protobuf first", method: http.MethodGet, path: "/namespaces/" + ns + "/podpresets/db", accept: protobufFirst, wantStatus: http.StatusOK, wantType: runtime.ContentTypeJSON},
		{name: "cluster list, protobuf first", method: http.MethodGet, path: "/clusterpodpresets", accept: protobufFirst, wantStatus: http.StatusOK, wantType: runtime.ContentTypeJSON},
		{name: "get, protobuf only", method: http.MethodGet, path: "/namespaces/" + ns + "/podpresets/db", accept: protobuf, wantStatus: http.StatusNotAcceptable},
		{name: "create, JSON body, protobuf first", method: http.MethodPost, path: "/namespaces/" + ns + "/podpresets", accept: protobufFirst, contentType: runtime.ContentTypeJSON, body: presetJSON, wantStatus: http.StatusCreated, wantType: runtime.ContentTypeJSON},
	} {
		t.Run(tc.name, func(t *testing.T) { checkNegotiation(t, h, httpClient, tc) })
	}
	// A protobuf body: no client sends one for these types, which have no
	// protobuf form. The registry answers 415; on a stock server the CRD
	// handler is upstream's own, which on 1.37.2 resets the stream instead
	// (README, "What differs from in-process").
	if h == inProcess() {
		tc := negotiation{name: "create, protobuf body", method: http.MethodPost, path: "/namespaces/" + ns + "/podpresets", accept: protobufFirst, contentType: protobuf, body: "\x6b\x38\x73\x00", wantStatus: http.StatusUnsupportedMediaType}
		t.Run(tc.name, func(t *testing.T) { checkNegotiation(t, h, httpClient, tc) })
	}
}

// checkNegotiation sends tc's request to settings.k8s.io/v1alpha1.
func checkNegotiation(t *testing.T, h *host, httpClient *http.Client, tc negotiation) {
	req, err := http.NewRequestWithContext(context.Background(), tc.method, h.server.Host+"/apis/settings.k8s.io/v1alpha1"+tc.path, bytes.NewBufferString(tc.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", tc.accept)
	if tc.contentType != "" {
		req.Header.Set("Content-Type", tc.contentType)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != tc.wantStatus {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
	}
	if tc.wantType == "" {
		return
	}
	if got, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); got != tc.wantType {
		t.Errorf("Content-Type %q, want %s", resp.Header.Get("Content-Type"), tc.wantType)
	}
}

// testPresetsMetadataClient makes the calls kube-controller-manager's
// namespace controller makes, with the metadata client it makes them
// with: list and delete every preset of a namespace.
func testPresetsMetadataClient(t *testing.T, h *host, ns string) {
	ctx := context.Background()
	client, err := metadata.NewForConfig(h.server.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	presets := client.Resource(settingsv1alpha1.SchemeGroupVersion.WithResource("podpresets")).Namespace(ns)
	list, err := presets.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Items) != 2 {
		t.Errorf("listed %d presets, want 2", len(list.Items))
	}
	if err := presets.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("delete collection: %v", err)
	}
	if list, err = presets.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("after deleting: %v presets, err %v", len(list.Items), err)
	}
}

// testProtobufPreferringClientset: a clientset configured for protobuf, as
// controllers are, reads the group as JSON.
func testProtobufPreferringClientset(t *testing.T, h *host) {
	ctx := context.Background()
	cfg := h.server.AdminConfig()
	cfg.ContentType = protobuf
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	if _, err := framework.SettingsClient(t, cfg).SettingsV1alpha1().ClusterPodPresets().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list: %v", err)
	}
}
