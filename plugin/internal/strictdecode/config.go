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

package strictdecode

import (
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Config reads a plugin's configuration from config into cfg, the one way
// every plugin that takes one does, so that they agree on what an empty
// configuration is, how its apiVersion and kind are checked and how their
// errors read.
//
// It reports false when nothing is configured: no reader, only white
// space, or an empty or null document. The plugin then runs as it does
// without a configuration, and nothing is asked of the document.
// Otherwise tm, cfg's own TypeMeta, must declare want's apiVersion and
// kind (TypeErrors); only then does validate, when not nil, say what else
// is wrong. Every error names the plugin and the step:
// "<plugin>: reading configuration: ...", "<plugin>: decoding
// configuration: ..." and "<plugin>: invalid configuration: <field>: ...".
func Config(plugin string, config io.Reader, cfg any, tm *metav1.TypeMeta, want metav1.TypeMeta, validate func() field.ErrorList) (bool, error) {
	data, err := Read(config)
	if err != nil {
		return false, fmt.Errorf("%s: reading configuration: %w", plugin, err)
	}
	if data == nil {
		return false, nil
	}
	found, err := YAMLOrJSON(data, cfg)
	if err != nil {
		return false, fmt.Errorf("%s: decoding configuration: %w", plugin, err)
	}
	if !found {
		return false, nil
	}
	errs := TypeErrors(*tm, want)
	if len(errs) == 0 && validate != nil {
		errs = validate()
	}
	if len(errs) > 0 {
		return false, fmt.Errorf("%s: invalid configuration: %w", plugin, errs.ToAggregate())
	}
	return true, nil
}

// TypeErrors returns what is wrong with the apiVersion and kind that got
// declares, field by field, against those of want.
func TypeErrors(got, want metav1.TypeMeta) field.ErrorList {
	var errs field.ErrorList
	if got.APIVersion != want.APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), got.APIVersion, []string{want.APIVersion}))
	}
	if got.Kind != want.Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), got.Kind, []string{want.Kind}))
	}
	return errs
}
