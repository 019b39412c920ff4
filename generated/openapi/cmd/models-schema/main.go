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

// Command models-schema prints the OpenAPI v2 definitions of
// generated/openapi as one swagger document. hack/update-codegen.sh feeds
// it to applyconfiguration-gen, which needs the schema to know list types
// and map keys.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/admitkit/admitkit/generated/openapi"
)

func main() {
	if err := write(); err != nil {
		fmt.Fprintf(os.Stderr, "models-schema: %v\n", err)
		os.Exit(1)
	}
}

func write() error {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }
	definitions := openapi.GetOpenAPIDefinitions(ref)
	schemas := make(map[string]spec.Schema, len(definitions))
	for name, definition := range definitions {
		// Definitions that differ between v2 and v3 carry their v2 form in an
		// extension; applyconfiguration-gen reads v2.
		if v2, ok := definition.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schemas[name] = v2
			continue
		}
		schemas[name] = definition.Schema
	}
	doc := spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "admitkit", Version: "unversioned"}},
		Definitions: schemas,
	}}
	out, err := json.Marshal(&doc)
	if err != nil {
		return fmt.Errorf("encoding the definitions: %w", err)
	}
	_, err = os.Stdout.Write(out)
	return err
}
