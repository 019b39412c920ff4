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

// Package crdinstall creates CustomResourceDefinitions a component ships
// embedded, and waits until the API server serves them. The CRD manifests of
// the LocationMutator's mutator kinds and of settings.k8s.io go through it,
// so that both are installed the same way.
package crdinstall

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// Resource is where CustomResourceDefinitions are served.
var Resource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Decode reads the CustomResourceDefinitions in the files of fsys that
// pattern matches, one a file, sorted by name. Each call decodes new
// objects, which the caller may change.
func Decode(fsys fs.FS, pattern string) ([]*unstructured.Unstructured, error) {
	files, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(files))
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if obj.GetKind() != "CustomResourceDefinition" || obj.GetName() == "" {
			return nil, fmt.Errorf("%s: not a named CustomResourceDefinition", f)
		}
		out = append(out, obj)
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// Install creates each of crds that does not exist yet, as fieldManager.
// An existing one is left untouched, whoever made it: a cluster running
// Gatekeeper keeps Gatekeeper's CRDs, whose objects fit ours. Several
// apiservers may start at once, so a CRD another one created meanwhile
// counts as existing. Install tries every CRD and returns the errors of
// those it could not check or create, each naming its CRD.
func Install(ctx context.Context, client dynamic.Interface, crds []*unstructured.Unstructured, fieldManager string) error {
	res := client.Resource(Resource)
	var errs []error
	for _, crd := range crds {
		name := crd.GetName()
		_, err := res.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			klog.V(2).InfoS("CustomResourceDefinition exists, leaving it as it is", "crd", name)
			continue
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("CustomResourceDefinition %s: %w", name, err))
			continue
		}
		_, err = res.Create(ctx, crd, metav1.CreateOptions{FieldManager: fieldManager})
		switch {
		case err == nil:
			klog.V(2).InfoS("Created CustomResourceDefinition", "crd", name)
		case apierrors.IsAlreadyExists(err):
			klog.V(2).InfoS("CustomResourceDefinition was created meanwhile, leaving it as it is", "crd", name)
		default:
			errs = append(errs, fmt.Errorf("creating CustomResourceDefinition %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// WaitEstablished waits until every one of crds is Established, that is
// served, checking every interval, until ctx ends. Its error names those
// that are not, with the reason their conditions give.
func WaitEstablished(ctx context.Context, client dynamic.Interface, crds []*unstructured.Unstructured, interval time.Duration) error {
	res := client.Resource(Resource)
	pending := map[string]string{} // CRD name -> why it is not established
	for _, crd := range crds {
		pending[crd.GetName()] = "not checked yet"
	}
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		for name := range pending {
			obj, err := res.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				pending[name] = err.Error()
				continue
			}
			if why, ok := established(obj); !ok {
				pending[name] = why
				continue
			}
			delete(pending, name)
		}
		return len(pending) == 0, nil
	})
	if err == nil {
		return nil
	}
	names := make([]string, 0, len(pending))
	for name := range pending {
		names = append(names, name)
	}
	slices.Sort(names)
	msgs := make([]string, len(names))
	for i, name := range names {
		msgs[i] = name + ": " + pending[name]
	}
	return fmt.Errorf("CustomResourceDefinitions not established: %s: %w", strings.Join(msgs, "; "), err)
}

// established reads the Established condition of a CRD, and otherwise says
// why not (NamesAccepted=False explains the usual case, a name clash).
func established(crd *unstructured.Unstructured) (string, bool) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	why := "no Established condition yet"
	for _, c := range conds {
		c, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := c["type"].(string)
		status, _ := c["status"].(string)
		msg, _ := c["message"].(string)
		switch {
		case typ == "Established" && status == "True":
			return "", true
		case typ == "Established" || (typ == "NamesAccepted" && status == "False"):
			why = fmt.Sprintf("%s=%s: %s", typ, status, msg)
		}
	}
	return why, false
}
