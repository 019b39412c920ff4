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

// Package strictdecode decodes what people write by hand for the plugins (an
// AdmissionConfiguration's plugin configuration, the mutator manifests it
// names, the mutators applied through the API) the one way kube-apiserver
// decodes its own configuration files: YAML or JSON, field names matched
// case-sensitively, and an unknown or duplicate field refused with an
// error naming it by its full path, so that a typo is never silently
// ignored and a configuration never means something else than it reads.
package strictdecode

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Read returns what config holds, or nil when nothing is configured: no
// reader (the plugin has no entry in the AdmissionConfiguration) or only
// white space. What nothing configured means is the plugin's to say.
func Read(config io.Reader) ([]byte, error) {
	if config == nil {
		return nil, nil
	}
	data, err := io.ReadAll(config)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	return data, nil
}

// YAMLOrJSON decodes a YAML or JSON document into v strictly. It reports
// false, leaving v as it is, when the document is empty or null.
func YAMLOrJSON(data []byte, v any) (bool, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return false, fmt.Errorf("not YAML or JSON: %w", err)
	}
	if trimmed := bytes.TrimSpace(js); len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return false, nil
	}
	return true, JSON(js, v)
}

// JSON decodes data into v, case-sensitively, and refuses unknown and
// duplicate fields, all of them in one error (`unknown field
// "spec.paramters"; duplicate field "kind"`).
func JSON(data []byte, v any) error {
	strict, err := kjson.UnmarshalStrict(data, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}
