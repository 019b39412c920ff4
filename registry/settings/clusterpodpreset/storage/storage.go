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

// Package storage is the etcd-backed REST storage of ClusterPodPresets.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/validation"
	"github.com/admitkit/admitkit/registry/settings/clusterpodpreset"
	"github.com/admitkit/admitkit/registry/settings/table"
)

// REST serves clusterpodpresets.
type REST struct {
	*genericregistry.Store
}

// NewREST returns the storage of clusterpodpresets for a server whose
// scheme is typer.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, podFields validation.PodFieldsValidator) (*REST, error) {
	strategy := clusterpodpreset.NewStrategy(typer, podFields)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &settings.ClusterPodPreset{} },
		NewListFunc:               func() runtime.Object { return &settings.ClusterPodPresetList{} },
		PredicateFunc:             clusterpodpreset.Matcher,
		DefaultQualifiedResource:  settings.Resource("clusterpodpresets"),
		SingularQualifiedResource: settings.Resource("clusterpodpreset"),

		CreateStrategy: strategy,
		UpdateStrategy: strategy,
		DeleteStrategy: strategy,

		TableConvertor: table.ClusterPodPresets(),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: clusterpodpreset.GetAttrs}); err != nil {
		return nil, err
	}
	return &REST{Store: store}, nil
}

// ShortNames lets kubectl accept `cpp` for clusterpodpresets.
func (*REST) ShortNames() []string { return []string{"cpp"} }
