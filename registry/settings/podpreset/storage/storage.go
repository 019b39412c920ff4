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

// Package storage is the etcd-backed REST storage of PodPresets.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/validation"
	"github.com/admitkit/admitkit/registry/settings/podpreset"
	"github.com/admitkit/admitkit/registry/settings/table"
)

// REST serves podpresets.
type REST struct {
	*genericregistry.Store
}

// NewREST returns the storage of podpresets for a server whose scheme is typer.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, podFields validation.PodFieldsValidator) (*REST, error) {
	strategy := podpreset.NewStrategy(typer, podFields)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &settings.PodPreset{} },
		NewListFunc:               func() runtime.Object { return &settings.PodPresetList{} },
		PredicateFunc:             podpreset.Matcher,
		DefaultQualifiedResource:  settings.Resource("podpresets"),
		SingularQualifiedResource: settings.Resource("podpreset"),

		CreateStrategy: strategy,
		UpdateStrategy: strategy,
		DeleteStrategy: strategy,

		TableConvertor: table.PodPresets(),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: podpreset.GetAttrs}); err != nil {
		return nil, err
	}
	return &REST{Store: store}, nil
}

// ShortNames lets kubectl accept `pp` for podpresets.
func (*REST) ShortNames() []string { return []string{"pp"} }
