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

package kubeapiserver

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"

	"github.com/admitkit/admitkit/apis/settings"
	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// protobufOnly stands for kube-apiserver's storage factory: every resource
// gets the same config, whose codec our types cannot go through.
type protobufOnly struct{ config *storagebackend.Config }

func (p protobufOnly) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{StorageConfig: p.config.ForResource(resource)}, nil
}

func TestStoreAsJSON(t *testing.T) {
	scheme := runtime.NewScheme()
	AddToScheme(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	upstream := &storagebackend.Config{Codec: runtime.NoopEncoder{}, Prefix: "/registry"}
	getter := storeAsJSON(protobufOnly{upstream}, codecs)

	t.Run("settings.k8s.io is stored as v1alpha1 JSON", func(t *testing.T) {
		opts, err := getter.GetRESTOptions(schema.GroupResource{Group: settings.GroupName, Resource: "podpresets"}, &settings.PodPreset{})
		if err != nil {
			t.Fatal(err)
		}
		if opts.StorageConfig.Config.Prefix != "/registry" {
			t.Errorf("prefix = %q, want the storage factory's /registry", opts.StorageConfig.Config.Prefix)
		}
		preset := &settings.PodPreset{ObjectMeta: metav1.ObjectMeta{Name: "database", Namespace: "shop"}}
		var buf bytes.Buffer
		if err := opts.StorageConfig.Config.Codec.Encode(preset, &buf); err != nil {
			t.Fatalf("encoding a PodPreset for storage: %v", err)
		}
		if !strings.HasPrefix(buf.String(), "{") || !strings.Contains(buf.String(), `"apiVersion":"`+settingsv1alpha1.SchemeGroupVersion.String()+`"`) {
			t.Errorf("stored form = %s, want JSON of %s", buf.String(), settingsv1alpha1.SchemeGroupVersion)
		}
		decoded, _, err := opts.StorageConfig.Config.Codec.Decode(buf.Bytes(), nil, nil)
		if err != nil {
			t.Fatalf("decoding the stored PodPreset: %v", err)
		}
		if _, ok := decoded.(*settings.PodPreset); !ok {
			t.Errorf("decoded %T, want the internal *settings.PodPreset", decoded)
		}
		if upstream.Codec != (runtime.NoopEncoder{}) {
			t.Errorf("the storage factory's own config was changed")
		}
	})
	t.Run("other groups pass through", func(t *testing.T) {
		opts, err := getter.GetRESTOptions(schema.GroupResource{Resource: "pods"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if opts.StorageConfig.Config.Codec != (runtime.NoopEncoder{}) {
			t.Errorf("pods codec = %#v, want the storage factory's", opts.StorageConfig.Config.Codec)
		}
	})
}

func TestConfigureNamesMissingOptions(t *testing.T) {
	scheme := runtime.NewScheme()
	config := &genericapiserver.Config{LoopbackClientConfig: &rest.Config{Host: "https://127.0.0.1:6443"}}
	for _, tc := range []struct {
		name string
		opts Options
		want string // in the error; "" for none
	}{
		{name: "complete", opts: Options{Scheme: scheme, Codecs: serializer.NewCodecFactory(scheme), ParameterCodec: runtime.NewParameterCodec(scheme)}},
		{name: "empty", opts: Options{}, want: "[Scheme Codecs ParameterCodec]"},
		{name: "no codecs", opts: Options{Scheme: scheme, ParameterCodec: runtime.NewParameterCodec(scheme)}, want: "[Codecs]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts).Configure(config)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Configure: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Configure error = %v, want one naming %s", err, tc.want)
			}
		})
	}
	t.Run("before BuildGenericConfig", func(t *testing.T) {
		_, err := New(Options{Scheme: scheme, Codecs: serializer.NewCodecFactory(scheme), ParameterCodec: runtime.NewParameterCodec(scheme)}).Configure(&genericapiserver.Config{})
		if err == nil || !strings.Contains(err.Error(), "LoopbackClientConfig") {
			t.Fatalf("Configure error = %v, want one naming LoopbackClientConfig", err)
		}
	})
}

func TestInstallNeedsConfigure(t *testing.T) {
	err := New(Options{}).Install(nil, genericapiserver.CompletedConfig{}, nil)
	if err == nil || !strings.Contains(err.Error(), "Configure") {
		t.Fatalf("Install error = %v, want one saying Configure must run first", err)
	}
}

func TestSettingsClientSpeaksJSON(t *testing.T) {
	var accept string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", runtime.ContentTypeJSON)
		_, _ = w.Write([]byte(`{"apiVersion":"settings.k8s.io/v1alpha1","kind":"PodPresetList","items":[]}`))
	}))
	defer server.Close()
	loopback := &rest.Config{Host: server.URL, ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeProtobuf}}
	client, err := newSettingsClient(loopback)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.SettingsV1alpha1().PodPresets("shop").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("listing through the settings client: %v", err)
	}
	if accept != runtime.ContentTypeJSON {
		t.Errorf("settings client sent Accept %q, want %q", accept, runtime.ContentTypeJSON)
	}
	if loopback.ContentType != runtime.ContentTypeProtobuf {
		t.Errorf("the loopback config was changed to %q", loopback.ContentType)
	}
}
