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

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pkg is what the image runs: the admitkit command.
const pkg = "github.com/admitkit/admitkit/hack/image"

// The image builds twice to one digest and one archive, byte for byte, and
// is what the chart runs: for linux/amd64 and linux/arm64, the static
// admitkit alone, as user 65532, with the OCI labels of its source,
// revision and version.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	var digests []string
	var archives [][]byte
	for _, name := range []string{"first", "second"} {
		o := options{pkg: pkg, out: filepath.Join(dir, name), tar: filepath.Join(dir, name+".tar"), goTool: "go"}
		digest, ref, err := run(o)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ref, repository+":") {
			t.Errorf("image name %s, want %s:VERSION", ref, repository)
		}
		archive, err := os.ReadFile(o.tar)
		if err != nil {
			t.Fatal(err)
		}
		digests, archives = append(digests, digest), append(archives, archive)
	}
	if digests[0] != digests[1] || !bytes.Equal(archives[0], archives[1]) {
		t.Fatalf("two builds of one commit gave digests %v (archives equal: %t)", digests, bytes.Equal(archives[0], archives[1]))
	}

	layout := filepath.Join(dir, "first")
	var top imageIndex
	readJSON(t, filepath.Join(layout, "index.json"), &top)
	if len(top.Manifests) != 1 || top.Manifests[0].Digest != digests[0] || top.Manifests[0].Annotations["io.containerd.image.name"] == "" ||
		top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] == "" {
		t.Fatalf("index.json %+v, want the image index %s with its name", top, digests[0])
	}
	var index imageIndex
	readJSON(t, blob(layout, digests[0]), &index)
	var archs []string
	for _, m := range index.Manifests {
		if m.Platform == nil || m.Platform.OS != "linux" {
			t.Fatalf("manifest %+v has no linux platform", m)
		}
		archs = append(archs, m.Platform.Architecture)
		var man manifest
		readJSON(t, blob(layout, m.Digest), &man)
		var config imageConfig
		readJSON(t, blob(layout, man.Config.Digest), &config)
		c := config.Config
		if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/admitkit"}) || config.Architecture != m.Platform.Architecture {
			t.Errorf("%s: user %q, entrypoint %q, architecture %s; want 65532:65532, [/admitkit], %s",
				m.Platform.Architecture, c.User, c.Entrypoint, config.Architecture, m.Platform.Architecture)
		}
		for _, l := range []string{"org.opencontainers.image.source", "org.opencontainers.image.revision", "org.opencontainers.image.version"} {
			if c.Labels[l] == "" {
				t.Errorf("%s: no label %s in %v", m.Platform.Architecture, l, c.Labels)
			}
		}
		if len(man.Layers) != 1 {
			t.Fatalf("%s: %d layers, want the binary's one", m.Platform.Architecture, len(man.Layers))
		}
		checkLayer(t, blob(layout, man.Layers[0].Digest), m.Platform.Architecture)
	}
	if !slices.Equal(archs, platforms) {
		t.Errorf("platforms %v, want %v", archs, platforms)
	}
}

// checkLayer requires the layer to hold the admitkit binary alone: a static
// executable (no interpreter, so no libc) for arch, and nothing else, no
// shell.
func checkLayer(t *testing.T, path, arch string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("%s: gzip header names %q at %v, want neither", arch, zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
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
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "admitkit" {
			continue
		}
		if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: admitkit mode %o, owner %d:%d; want 755, 0:0", arch, h.Mode, h.Uid, h.Gid)
		}
		exe, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: admitkit: %v", arch, err)
		}
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
		if exe.Machine != want {
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

func blob(layout, digest string) string {
	return filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
