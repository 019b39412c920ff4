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
	"errors"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type pluginConfig struct {
	metav1.TypeMeta `json:",inline"`
	Size            int `json:"size"`
}

var wantType = metav1.TypeMeta{APIVersion: "p.admitkit.io/v1", Kind: "Configuration"}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestConfig(t *testing.T) {
	const head = "apiVersion: p.admitkit.io/v1\nkind: Configuration\n"
	for _, tt := range []struct {
		name      string
		config    io.Reader
		found     bool
		size      int
		validated bool
		err       string
	}{
		{name: "no reader"},
		{name: "white space", config: strings.NewReader(" \n\t")},
		{name: "null document", config: strings.NewReader("null\n")},
		{name: "comment only", config: strings.NewReader("# nothing yet\n")},
		{name: "a configuration", config: strings.NewReader(head + "size: 3\n"), found: true, size: 3, validated: true},
		{name: "JSON", config: strings.NewReader(`{"apiVersion": "p.admitkit.io/v1", "kind": "Configuration"}`), found: true, validated: true},
		{name: "unreadable", config: failingReader{}, err: "P: reading configuration: disk on fire"},
		{name: "an unknown field", config: strings.NewReader(head + "sise: 3\n"), err: `P: decoding configuration: unknown field "sise"`},
		{name: "no apiVersion or kind", config: strings.NewReader("size: 3\n"),
			err: `P: invalid configuration: [apiVersion: Unsupported value: "": supported values: "p.admitkit.io/v1", kind: Unsupported value: "": supported values: "Configuration"]`},
		{name: "another apiVersion", config: strings.NewReader("apiVersion: v1\nkind: Configuration\n"),
			err: `P: invalid configuration: apiVersion: Unsupported value: "v1": supported values: "p.admitkit.io/v1"`},
		{name: "another kind", config: strings.NewReader("apiVersion: p.admitkit.io/v1\nkind: Config\n"),
			err: `P: invalid configuration: kind: Unsupported value: "Config": supported values: "Configuration"`},
		{name: "what the plugin refuses", config: strings.NewReader(head + "size: -1\n"), validated: true,
			err: `P: invalid configuration: size: Invalid value: -1: must not be negative`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &pluginConfig{}
			validated := false
			validate := func() field.ErrorList {
				validated = true
				if cfg.Size < 0 {
					return field.ErrorList{field.Invalid(field.NewPath("size"), cfg.Size, "must not be negative")}
				}
				return nil
			}
			found, err := Config("P", tt.config, cfg, &cfg.TypeMeta, wantType, validate)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if found != tt.found || validated != tt.validated || (tt.err == "" && cfg.Size != tt.size) {
				t.Errorf("found %v, validated %v, size %d; want %v, %v, %d", found, validated, cfg.Size, tt.found, tt.validated, tt.size)
			}
			if found && cfg.TypeMeta != wantType {
				t.Errorf("type %+v, want %+v", cfg.TypeMeta, wantType)
			}
		})
	}
}

func TestConfigWithoutValidation(t *testing.T) {
	cfg := &pluginConfig{}
	found, err := Config("P", strings.NewReader("apiVersion: p.admitkit.io/v1\nkind: Configuration\nsize: -1\n"), cfg, &cfg.TypeMeta, wantType, nil)
	if !found || err != nil || cfg.Size != -1 {
		t.Errorf("got %v, %v, size %d; want the configuration as it reads", found, err, cfg.Size)
	}
}
