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
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/webhook/offline"
)

// document is one object read, with where it came from.
type document struct {
	source string
	object *unstructured.Unstructured
}

// readObjects reads every object of the files, directories (their .yaml,
// .yml and .json files, in name order) and "-" (stdin) given: YAML or JSON,
// several documents a file, v1 Lists flattened.
func readObjects(paths []string, stdin io.Reader) ([]document, error) {
	var out []document
	for _, p := range paths {
		files, err := expandPath(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			docs, err := readFile(f, stdin)
			if err != nil {
				return nil, err
			}
			out = append(out, docs...)
		}
	}
	return out, nil
}

func expandPath(p string) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	return files, nil
}

func readFile(name string, stdin io.Reader) ([]document, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(r), 4096)
	var out []document
	for i := 1; ; i++ {
		u := &unstructured.Unstructured{}
		err := decoder.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		source := fmt.Sprintf("%s (document %d)", name, i)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		items, err := flatten(u)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		for _, item := range items {
			out = append(out, document{source: source, object: item})
		}
	}
}

// flatten returns a List's items, or the object alone.
func flatten(u *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	if u.GetKind() == "" || u.GetAPIVersion() == "" {
		return nil, errors.New("an object needs apiVersion and kind")
	}
	if !u.IsList() {
		return []*unstructured.Unstructured{u}, nil
	}
	list, err := u.ToList()
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		items, err := flatten(&list.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// clusterScoped are the kinds an object is given no namespace for.
var clusterScoped = []string{"Namespace", "Node", "ClusterPodPreset", "Assign", "AssignMetadata", "ModifySet", "AssignImage", "Provider"}

// inNamespace gives a namespaced object without one the namespace, as
// kubectl's --namespace does.
func inNamespace(u *unstructured.Unstructured, namespace string) {
	if u.GetNamespace() == "" && !slices.Contains(clusterScoped, u.GetKind()) {
		u.SetNamespace(namespace)
	}
}

// stateOf sorts the state documents into the offline inputs.
func stateOf(docs []document, namespace string) (offline.Inputs, error) {
	var in offline.Inputs
	for _, d := range docs {
		inNamespace(d.object, namespace)
		var err error
		switch gvk := d.object.GroupVersionKind(); {
		case gvk == settingsv1alpha1.SchemeGroupVersion.WithKind("PodPreset"):
			p := &settingsv1alpha1.PodPreset{}
			if err = fromUnstructured(d.object, p); err == nil {
				in.Presets = append(in.Presets, p)
			}
		case gvk == settingsv1alpha1.SchemeGroupVersion.WithKind("ClusterPodPreset"):
			p := &settingsv1alpha1.ClusterPodPreset{}
			if err = fromUnstructured(d.object, p); err == nil {
				in.ClusterPresets = append(in.ClusterPresets, p)
			}
		case gvk == corev1.SchemeGroupVersion.WithKind("Namespace"):
			ns := &corev1.Namespace{}
			if err = fromUnstructured(d.object, ns); err == nil {
				in.Namespaces = append(in.Namespaces, ns)
			}
		case strings.HasSuffix(gvk.Group, ".gatekeeper.sh"):
			in.Mutators = append(in.Mutators, d.object)
		default:
			err = fmt.Errorf("%v is not cluster state (a PodPreset, ClusterPodPreset, Namespace or mutator)", gvk)
		}
		if err != nil {
			return in, fmt.Errorf("%s: %w", d.source, err)
		}
	}
	return in, nil
}

// fromUnstructured decodes u strictly: a field the type does not know is
// an error, as kube-apiserver's strict field validation makes it.
func fromUnstructured(u *unstructured.Unstructured, into runtime.Object) error {
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(data, into)
}

// locationMutatorConfig reads a LocationMutator Configuration, or the
// LocationMutator's entry of an AdmissionConfiguration (inline, or the file
// its path names, relative to the AdmissionConfiguration's directory as
// kube-apiserver resolves it).
func locationMutatorConfig(name string) ([]byte, error) {
	if name == "" {
		return nil, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var admissionConfig struct {
		Kind    string
		Plugins []struct {
			Name          string
			Path          string
			Configuration map[string]any
		}
	}
	if err := yaml.Unmarshal(data, &admissionConfig); err != nil || admissionConfig.Kind != "AdmissionConfiguration" {
		return data, nil
	}
	for _, p := range admissionConfig.Plugins {
		switch {
		case p.Name != "LocationMutator":
		case filepath.IsAbs(p.Path):
			return os.ReadFile(p.Path)
		case p.Path != "":
			return os.ReadFile(filepath.Join(filepath.Dir(name), p.Path))
		default:
			return yaml.Marshal(p.Configuration)
		}
	}
	return nil, nil
}
