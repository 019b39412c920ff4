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

// Package pluginconfig reads the configuration an AdmissionConfiguration
// hands a plugin's factory. Every plugin of the module loads its
// configuration the same way: Read gives the bytes, or nil when nothing is
// configured; the plugin decodes them strictly and validates them once, in
// its loader, so that a bad configuration fails apiserver start-up naming
// the field.
package pluginconfig

import (
	"bytes"
	"io"
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
