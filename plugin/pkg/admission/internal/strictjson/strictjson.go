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

// Package strictjson decodes the JSON form of what a user writes by hand
// (plugin configurations, mutator manifests) strictly: an unknown or
// duplicate field is an error naming the field by its full path, so that a
// typo is never silently ignored.
package strictjson

import (
	"fmt"
	"strings"

	kjson "sigs.k8s.io/json"
)

// Unmarshal decodes data into v, case-sensitively, and refuses unknown and
// duplicate fields, all of them in one error (`unknown field
// "spec.paramters"; duplicate field "kind"`).
func Unmarshal(data []byte, v any) error {
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
