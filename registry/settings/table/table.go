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

// Package table renders PodPresets and ClusterPodPresets as the rows
// `kubectl get` prints: what a preset selects and what it injects.
package table

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/admitkit/admitkit/apis/settings"
)

var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
		Description: "The preset's name."}
	selectorColumn = metav1.TableColumnDefinition{Name: "Selector", Type: "string",
		Description: "The pods it applies to; <none> selects every pod."}
	namespaceSelectorColumn = metav1.TableColumnDefinition{Name: "Namespace Selector", Type: "string",
		Description: "The namespaces it applies in; <none> selects every namespace."}
	injectsColumn = metav1.TableColumnDefinition{Name: "Injects", Type: "string",
		Description: "How many env vars, envFrom sources, volumes and volume mounts it adds."}
	ageColumn = metav1.TableColumnDefinition{Name: "Age", Type: "string",
		Description: "Time since the preset was created."}
)

// PodPresets renders PodPresets: NAME, SELECTOR, INJECTS, AGE.
func PodPresets() rest.TableConvertor {
	return convertor{
		columns: []metav1.TableColumnDefinition{nameColumn, selectorColumn, injectsColumn, ageColumn},
		cells: func(obj runtime.Object) ([]interface{}, error) {
			pp, ok := obj.(*settings.PodPreset)
			if !ok {
				return nil, fmt.Errorf("not a PodPreset: %T", obj)
			}
			return []interface{}{selector(&pp.Spec.Selector), injects(&pp.Spec)}, nil
		},
	}
}

// ClusterPodPresets renders ClusterPodPresets: NAME, NAMESPACE SELECTOR,
// SELECTOR, INJECTS, AGE.
func ClusterPodPresets() rest.TableConvertor {
	return convertor{
		columns: []metav1.TableColumnDefinition{nameColumn, namespaceSelectorColumn, selectorColumn, injectsColumn, ageColumn},
		cells: func(obj runtime.Object) ([]interface{}, error) {
			cpp, ok := obj.(*settings.ClusterPodPreset)
			if !ok {
				return nil, fmt.Errorf("not a ClusterPodPreset: %T", obj)
			}
			spec := &cpp.Spec
			return []interface{}{selector(&spec.NamespaceSelector), selector(&spec.Selector), injects(&spec.PodPresetSpec)}, nil
		},
	}
}

// convertor puts the name first and the age last around cells' columns.
type convertor struct {
	columns []metav1.TableColumnDefinition
	cells   func(runtime.Object) ([]interface{}, error)
}

func (c convertor) ConvertToTable(_ context.Context, obj runtime.Object, options runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opts, ok := options.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = c.columns
	}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	var err error
	table.Rows, err = metatable.MetaToTableRow(obj, func(obj runtime.Object, _ metav1.Object, name, age string) ([]interface{}, error) {
		cells, err := c.cells(obj)
		if err != nil {
			return nil, err
		}
		return append(append([]interface{}{name}, cells...), age), nil
	})
	return table, err
}

func selector(s *metav1.LabelSelector) string {
	return metav1.FormatLabelSelector(s)
}

// injects counts what a preset adds, leaving out what it has none of.
func injects(spec *settings.PodPresetSpec) string {
	var parts []string
	for _, item := range []struct {
		count            int
		singular, plural string
	}{
		{len(spec.Env), "env", "env"},
		{len(spec.EnvFrom), "envFrom", "envFrom"},
		{len(spec.Volumes), "volume", "volumes"},
		{len(spec.VolumeMounts), "mount", "mounts"},
	} {
		switch item.count {
		case 0:
		case 1:
			parts = append(parts, "1 "+item.singular)
		default:
			parts = append(parts, fmt.Sprintf("%d %s", item.count, item.plural))
		}
	}
	if len(parts) == 0 {
		return "<none>"
	}
	return strings.Join(parts, ", ")
}
