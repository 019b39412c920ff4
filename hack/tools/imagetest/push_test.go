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

package imagetest_test

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPush runs `go run ./hack/image -push` against a registry (one of
// go-containerregistry's, in this process on 127.0.0.1) and reads the index
// back by its tag: the digest hack/image printed, both platforms. The image
// is of a small main package, hack/image itself: what is pushed does not
// depend on the binary, and TestImage builds admitkit's.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/admitkit/admitkit:test"
	digest, _ := buildImage(t, "./hack/image", t.TempDir(), "-ref", ref, "-push")

	tag, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	index, err := remote.Index(tag, remote.WithTransport(http.DefaultTransport))
	if err != nil {
		t.Fatalf("reading %s back: %v", ref, err)
	}
	got, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != digest {
		t.Errorf("the registry's %s is %s, hack/image pushed %s", ref, got, digest)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range manifest.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		if _, err := index.Image(m.Digest); err != nil {
			t.Errorf("%s: %v", m.Digest, err)
		}
	}
	if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("pushed platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
}
