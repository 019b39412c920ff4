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

package v1

import (
	"encoding/json"
	"strings"
	"testing"
)

// YAML turns a number beyond float64 into a string before it gets here (so
// kubectl does the same for Gatekeeper); JSON decoded directly must fail as
// encoding/json does, not change type.
func TestValueNumbers(t *testing.T) {
	var v Value
	if err := json.Unmarshal([]byte(`{"a": [1e400]}`), &v); err == nil || !strings.Contains(err.Error(), "1e400") {
		t.Fatalf("error %v, value %#v", err, v.Value)
	}
	if err := json.Unmarshal([]byte(`{"i": 80, "f": 80.0, "h": 0.5, "big": 9223372036854775808}`), &v); err != nil {
		t.Fatal(err)
	}
	m := v.Value.(map[string]any)
	if m["i"] != int64(80) || m["f"] != int64(80) || m["h"] != 0.5 || m["big"] != 9223372036854775808.0 {
		t.Fatalf("numbers %#v", m)
	}
}
