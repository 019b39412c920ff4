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

// Package imagetest_test builds admitkit's image with hack/image and reads
// it as the tools that take it do (go-containerregistry's OCI layout and
// registry client). It is its own module's, hack/tools', so that the root
// module gets none of go-containerregistry, and hack/test.sh does not run
// it: two cross-builds of admitkit cost minutes on a cold cache. Run it
// when hack/image changes: cd hack/tools && go test ./imagetest
package imagetest_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// root is the repository's root, where hack/image runs.
var root = filepath.Join("..", "..", "..")

// buildImage runs hack/image for pkg into dir and returns the digest and
// name it printed.
func buildImage(t *testing.T, pkg, dir string, args ...string) (digest, ref string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", "./hack/image", "-package", pkg, "-o", filepath.Join(dir, "image"), "-tar", filepath.Join(dir, "image.tar")}, args...)...)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/image -package %s: %v", pkg, err)
	}
	ref, digest, ok := strings.Cut(strings.TrimSpace(string(out)), "@")
	if !ok {
		t.Fatalf("hack/image printed %q, want NAME@DIGEST", out)
	}
	return digest, ref
}

// The image of admitkit builds twice to one digest and one archive, byte
// for byte, and is what the chart runs: for linux/amd64 and linux/arm64,
// the static admitkit alone, as user 65532, with the OCI labels of its
// source, revision and version, and named so that containerd and docker
// load it by name.
func TestImage(t *testing.T) {
	var digests []string
	var archives [][]byte
	var ref string
	dir := t.TempDir()
	for _, run := range []string{"first", "second"} {
		d, r := buildImage(t, "./plugin/cmd/admitkit", filepath.Join(dir, run))
		archive, err := os.ReadFile(filepath.Join(dir, run, "image.tar"))
		if err != nil {
			t.Fatal(err)
		}
		digests, archives, ref = append(digests, d), append(archives, archive), r
	}
	if digests[0] != digests[1] || !bytes.Equal(archives[0], archives[1]) {
		t.Fatalf("two builds of one commit gave digests %v (archives equal: %t)", digests, bytes.Equal(archives[0], archives[1]))
	}
	if !strings.HasPrefix(ref, "ghcr.io/admitkit/admitkit:") {
		t.Errorf("image name %s, want ghcr.io/admitkit/admitkit:VERSION, the chart's", ref)
	}

	path, err := layout.FromPath(filepath.Join(dir, "first", "image"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := path.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 || topManifest.Manifests[0].Digest.String() != digests[0] ||
		topManifest.Manifests[0].Annotations["io.containerd.image.name"] != ref ||
		topManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != ref[strings.LastIndex(ref, ":")+1:] {
		t.Fatalf("index.json %+v, want the image index %s named %s", topManifest, digests[0], ref)
	}
	index, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range manifest.Manifests {
		arch := m.Platform.Architecture
		platforms = append(platforms, m.Platform.OS+"/"+arch)
		img, err := index.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		config, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := config.Config
		if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/admitkit"}) || config.Architecture != arch || config.OS != "linux" {
			t.Errorf("%s: user %q, entrypoint %q, platform %s/%s; want 65532:65532, [/admitkit], linux/%s",
				arch, c.User, c.Entrypoint, config.OS, config.Architecture, arch)
		}
		for _, l := range []string{"org.opencontainers.image.source", "org.opencontainers.image.revision", "org.opencontainers.image.version"} {
			if c.Labels[l] == "" {
				t.Errorf("%s: no label %s in %v", arch, l, c.Labels)
			}
		}
		checkLayers(t, img, arch)
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
}

// checkLayers requires the image to hold the admitkit binary alone: a
// static executable (no interpreter, so no libc) for arch, owned by root
// and not writable by its user, and nothing else, no shell.
func checkLayers(t *testing.T, img v1.Image, arch string) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%s: %d layers, want the binary's one", arch, len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name != "admitkit" {
			continue
		}
		if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: admitkit mode %o, owner %d:%d; want 755, 0:0", arch, h.Mode, h.Uid, h.Gid)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		exe, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: admitkit: %v", arch, err)
		}
		if want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]; exe.Machine != want {
			t.Errorf("%s: admitkit is for %v", arch, exe.Machine)
		}
		for _, p := range exe.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: admitkit is linked dynamically", arch)
			}
		}
	}
	if !slices.Equal(names, []string{"admitkit"}) {
		t.Errorf("%s: the layer holds %v, want admitkit alone", arch, names)
	}
}
