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

// Command image builds admitkit's container image without a container
// daemon: the admitkit command cross-built for linux/amd64 and linux/arm64,
// static (CGO_ENABLED=0), alone in one layer, run as user 65532 with no
// shell, as an OCI image index. It writes an OCI layout directory and an OCI
// archive (the same files in a tar) that `docker load` (25 and later),
// `podman load` and `ctr image import` take, and with -push pushes the
// index to a registry with crane (pinned in hack/tools). The same commit
// gives the same digest: every time in the image is the commit's, the tar
// entries and JSON are written in one order, and gzip headers carry no name
// or time. hack/tools/imagetest builds it twice and pushes it to a registry
// on 127.0.0.1.
//
// Run from the repository's root:
//
//	go run ./hack/image [-ref ghcr.io/admitkit/admitkit:TAG] [-push]
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// repository is the image's default name, which hack/manifests and the chart
// run; the tag is the module version the binary's build info gives.
const repository = "ghcr.io/admitkit/admitkit"

// source is where the code of the image is, its
// org.opencontainers.image.source label.
const source = "https://github.com/admitkit/admitkit"

// The media types of the OCI image specification.
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// The binary's place in the image, its entrypoint.
const binary = "admitkit"

// user is the image's user, numeric: the image has no /etc/passwd.
const user = "65532:65532"

var platforms = []string{"amd64", "arm64"}

type options struct {
	pkg    string // the main package to build
	out    string // the OCI layout directory
	tar    string // the OCI archive
	ref    string // the image's name; default repository:version
	push   bool
	goTool string // the go command
}

func main() {
	var o options
	flag.StringVar(&o.pkg, "package", "./plugin/cmd/admitkit", "The main package to build into the image.")
	flag.StringVar(&o.out, "o", "_output/image", "The OCI layout directory to write (emptied first).")
	flag.StringVar(&o.tar, "tar", "_output/admitkit-image.tar", "The OCI archive to write, for docker load, podman load and ctr image import; empty: none.")
	flag.StringVar(&o.ref, "ref", "", "The image's name, REGISTRY/REPOSITORY:TAG. Default: "+repository+":VERSION, the module version of the build.")
	flag.BoolVar(&o.push, "push", false, "Push the image index to -ref with crane (hack/tools), which signs in as docker login did (~/.docker/config.json, its credential helpers).")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "image: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	o.goTool = "go"
	digest, ref, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s@%s\n", ref, digest)
}

// run builds the image, writes it and pushes it if asked; it returns the
// index's digest and the image's name.
func run(o options) (digest, ref string, err error) {
	tmp, err := os.MkdirTemp("", "admitkit-image-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	blobs := map[string][]byte{}
	var manifests []descriptor
	var info build
	for _, arch := range platforms {
		bin := filepath.Join(tmp, "admitkit-"+arch)
		if err := goBuild(o.goTool, o.pkg, arch, bin); err != nil {
			return "", "", err
		}
		b, err := readBuild(bin)
		if err != nil {
			return "", "", err
		}
		if arch != platforms[0] && b != info {
			return "", "", fmt.Errorf("%s was built from %+v, %s from %+v", platforms[0], info, arch, b)
		}
		info = b
		m, err := image(bin, arch, b, blobs)
		if err != nil {
			return "", "", err
		}
		manifests = append(manifests, m)
	}
	ref = o.ref
	if ref == "" {
		ref = repository + ":" + tag(info.version)
	}
	name, version, ok := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	if !ok || name == "" || version == "" {
		return "", "", fmt.Errorf("-ref %q: want REGISTRY/REPOSITORY:TAG", ref)
	}
	index := mustJSON(imageIndex{SchemaVersion: 2, MediaType: mediaIndex, Manifests: manifests, Annotations: labels(info)})
	indexDesc := add(blobs, mediaIndex, index)
	indexDesc.Annotations = map[string]string{
		// The tag, which tools read from an OCI layout (crane, podman,
		// skopeo), and the whole name, which containerd and docker read.
		"org.opencontainers.image.ref.name": version,
		"io.containerd.image.name":          ref,
	}
	files := layoutFiles(blobs, indexDesc)
	if err := writeLayout(o.out, files); err != nil {
		return "", "", err
	}
	if o.tar != "" {
		if err := writeArchive(o.tar, files, info.time); err != nil {
			return "", "", err
		}
	}
	if o.push {
		layout, err := filepath.Abs(o.out)
		if err != nil {
			return "", "", err
		}
		cmd := exec.Command(o.goTool, "tool", "crane", "push", layout, ref)
		cmd.Dir = "hack/tools"
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", "", fmt.Errorf("crane push %s %s: %w", o.out, ref, err)
		}
	}
	return indexDesc.Digest, ref, nil
}

// goBuild cross-builds pkg for linux/arch into out: static, without local
// paths (-trimpath), with the commit in its build info (-buildvcs, which
// GOFLAGS may turn off), so that `admitkit version` names the module
// version and commit.
func goBuild(goTool, pkg, arch, out string) error {
	cmd := exec.Command(goTool, "build", "-trimpath", "-buildvcs=auto", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for linux/%s: %w", pkg, arch, err)
	}
	return nil
}

// build is what the image says of the binary: its module version and the
// commit it was built from, and when that was committed.
type build struct {
	version, revision string
	time              time.Time
}

func readBuild(bin string) (build, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return build{}, fmt.Errorf("%s: %w", bin, err)
	}
	b := build{version: bi.Main.Version, time: time.Unix(0, 0).UTC()}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.time":
			t, err := time.Parse(time.RFC3339, s.Value)
			if err != nil {
				return build{}, fmt.Errorf("%s: vcs.time %q: %w", bin, s.Value, err)
			}
			b.time = t.UTC()
		}
	}
	if b.revision == "" {
		// The go command stamps a build only in a repository whose .git is
		// a directory, not in a git worktree (whose .git is a file): the
		// image still names the commit, from git itself.
		out, err := exec.Command("git", "log", "-1", "--format=%H %cI").Output()
		if err != nil {
			return b, nil // not a git checkout: the image names no commit
		}
		revision, when, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
		t, err := time.Parse(time.RFC3339, when)
		if err != nil {
			return build{}, fmt.Errorf("git log: commit time %q: %w", when, err)
		}
		b.revision, b.time = revision, t.UTC()
	}
	return b, nil
}

// tag makes a module version a tag: tags take no "+" ("+dirty" of a build
// with uncommitted changes) and "(devel)" of a build without VCS is not one.
func tag(version string) string {
	if version == "" || version == "(devel)" {
		return "devel"
	}
	return strings.ReplaceAll(version, "+", "-")
}

// labels are the OCI annotations of the index and each image's labels.
func labels(b build) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.source":  source,
		"org.opencontainers.image.version": b.version,
		"org.opencontainers.image.created": b.time.Format(time.RFC3339),
		"org.opencontainers.image.title":   "admitkit",
	}
	if b.revision != "" {
		l["org.opencontainers.image.revision"] = b.revision
	}
	return l
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

type imageIndex struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Manifests     []descriptor      `json:"manifests"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        descriptor        `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// imageConfig is the OCI image configuration.
type imageConfig struct {
	Created      string    `json:"created"`
	Architecture string    `json:"architecture"`
	Variant      string    `json:"variant,omitempty"`
	OS           string    `json:"os"`
	Config       runConfig `json:"config"`
	RootFS       rootFS    `json:"rootfs"`
	History      []history `json:"history"`
}

type runConfig struct {
	User       string            `json:"User"`
	Entrypoint []string          `json:"Entrypoint"`
	WorkingDir string            `json:"WorkingDir"`
	Labels     map[string]string `json:"Labels"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type history struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// image adds the blobs of one platform's image (its layer, configuration
// and manifest) and returns the manifest's descriptor.
func image(bin, arch string, b build, blobs map[string][]byte) (descriptor, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return descriptor{}, err
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: binary, Mode: 0o755, Size: int64(len(data)),
		ModTime: b.time, Format: tar.FormatPAX,
	}); err != nil {
		return descriptor{}, err
	}
	if _, err := tw.Write(data); err != nil {
		return descriptor{}, err
	}
	if err := tw.Close(); err != nil {
		return descriptor{}, err
	}
	diffID := sha256.Sum256(layer.Bytes())
	compressed, err := gzipped(layer.Bytes())
	if err != nil {
		return descriptor{}, err
	}
	layerDesc := add(blobs, mediaLayer, compressed)
	p := &platform{Architecture: arch, OS: "linux"}
	if arch == "arm64" {
		p.Variant = "v8"
	}
	created := b.time.Format(time.RFC3339)
	config := mustJSON(imageConfig{
		Created: created, Architecture: arch, Variant: p.Variant, OS: "linux",
		Config:  runConfig{User: user, Entrypoint: []string{"/" + binary}, WorkingDir: "/", Labels: labels(b)},
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{"sha256:" + hex.EncodeToString(diffID[:])}},
		History: []history{{Created: created, CreatedBy: "hack/image: go build -trimpath " + "CGO_ENABLED=0 GOOS=linux GOARCH=" + arch}},
	})
	m := mustJSON(manifest{
		SchemaVersion: 2, MediaType: mediaManifest,
		Config: add(blobs, mediaConfig, config), Layers: []descriptor{layerDesc},
		Annotations: labels(b),
	})
	d := add(blobs, mediaManifest, m)
	d.Platform = p
	return d, nil
}

// gzipped compresses data with a header that has no name and no time.
func gzipped(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// add stores a blob by its digest and returns its descriptor.
func add(blobs map[string][]byte, mediaType string, data []byte) descriptor {
	sum := sha256.Sum256(data)
	d := "sha256:" + hex.EncodeToString(sum[:])
	blobs[d] = data
	return descriptor{MediaType: mediaType, Digest: d, Size: int64(len(data))}
}

// mustJSON marshals the image's own types, which always marshal.
func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("image: marshalling %T: %v", v, err))
	}
	return data
}

// file is one file of the OCI layout, by its path in it.
type file struct {
	path string
	data []byte
}

// layoutFiles are the layout's files, in the order they are written: the
// oci-layout marker, index.json, then the blobs by digest.
func layoutFiles(blobs map[string][]byte, index descriptor) []file {
	files := []file{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", mustJSON(imageIndex{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{index}})},
	}
	digests := make([]string, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		files = append(files, file{"blobs/sha256/" + strings.TrimPrefix(d, "sha256:"), blobs[d]})
	}
	return files
}

func writeLayout(dir string, files []file) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeArchive writes the layout's files as a tar, with the directories
// first and every time the commit's.
func writeArchive(path string, files []file, mtime time.Time) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	tw := tar.NewWriter(f)
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	for _, file := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: file.path, Mode: 0o644, Size: int64(len(file.data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, bytes.NewReader(file.data)); err != nil {
			return err
		}
	}
	return tw.Close()
}
