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

package offline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Document is one object read, with where it came from.
type Document struct {
	// Source is the file and the document's position in it.
	Source string
	Object *unstructured.Unstructured
}

// ReadObjects reads every object of the files, directories (their .yaml,
// .yml and .json files, in name order) and "-" (stdin) given: YAML or JSON,
// several documents a file, v1 Lists flattened. An error is an
// *InputError.
func ReadObjects(paths []string, stdin io.Reader) ([]Document, error) {
	var out []Document
	for _, p := range paths {
		files, err := ExpandPath(p)
		if err != nil {
			return nil, &InputError{Object: p, Err: err}
		}
		for _, f := range files {
			docs, err := readFile(f, stdin)
			if err != nil {
				return nil, &InputError{Object: f, Err: err}
			}
			out = append(out, docs...)
		}
	}
	return out, nil
}

// ExpandPath is the file p names, or the .yaml, .yml and .json files of
// the directory it names, in name order; "-" is stdin.
func ExpandPath(p string) ([]string, error) {
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

func readFile(name string, stdin io.Reader) ([]Document, error) {
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
	var out []Document
	for i := 1; ; i++ {
		u := &unstructured.Unstructured{}
		err := decoder.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		source := fmt.Sprintf("%s (document %d)", name, i)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		items, err := flatten(u)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		for _, item := range items {
			out = append(out, Document{Source: source, Object: item})
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

// fromUnstructured decodes u strictly: a field the type does not know is
// an error, as kube-apiserver's strict field validation makes it.
func fromUnstructured(u *unstructured.Unstructured, into runtime.Object) error {
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(data, into)
}
