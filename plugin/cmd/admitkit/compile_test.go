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

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// The compile example of plugin/compiler/README.md, run as a user runs it
// from the repository's root: it prints on stderr what the README shows,
// exits 1 because two objects did not compile, and writes the policies
// and bindings of the three that did.
func TestCompileExample(t *testing.T) {
	readme, err := os.ReadFile("../../compiler/README.md")
	if err != nil {
		t.Fatal(err)
	}
	args, report := compileExample(t, string(readme))
	t.Chdir(filepath.Join("..", "..", ".."))
	var stdout, stderr bytes.Buffer
	err = execute(t, args, &stdout, &stderr)
	var exit *exitError
	if !errors.As(err, &exit) || exit.code != exitRefused {
		t.Fatalf("admitkit %s: %v, want exit %d", strings.Join(args, " "), err, exitRefused)
	}
	if got, _, _ := strings.Cut(stderr.String(), "Error: "); got != report {
		t.Errorf("stderr:\n%s\nthe README shows:\n%s", got, report)
	}
	var kinds []string
	for _, doc := range strings.Split(stdout.String(), "\n---\n") {
		var obj struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, obj.Kind+"/"+obj.Metadata.Name)
	}
	want := "MutatingAdmissionPolicy/admitkit-podpresets MutatingAdmissionPolicy/admitkit-mutators ValidatingAdmissionPolicy/admitkit-podpresets-conflicts " +
		"ValidatingAdmissionPolicy/podpreset.admission.admitkit.io " +
		"MutatingAdmissionPolicyBinding/admitkit-podpresets MutatingAdmissionPolicyBinding/admitkit-mutators ValidatingAdmissionPolicyBinding/admitkit-podpresets-conflicts " +
		"ValidatingAdmissionPolicyBinding/podpreset.admission.admitkit.io"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("printed %s, want %s", got, want)
	}
	var policy admissionregistrationv1.MutatingAdmissionPolicy
	if err := yaml.UnmarshalStrict([]byte(strings.Split(stdout.String(), "\n---\n")[0]), &policy); err != nil {
		t.Fatalf("the first document is no MutatingAdmissionPolicy: %v", err)
	}
}

// compileExample returns the arguments of the README's admitkit compile
// command and the report it shows after "prints on stderr".
func compileExample(t *testing.T, readme string) (args []string, report string) {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "```sh\nadmitkit compile ")
	if !ok {
		t.Fatal("the README shows no admitkit compile command")
	}
	command, rest, _ := strings.Cut(rest, ">")
	args = append([]string{"compile"}, strings.Fields(strings.ReplaceAll(command, "\\\n", " "))...)
	_, rest, ok = strings.Cut(rest, "prints on stderr\n\n```\n")
	if !ok {
		t.Fatal("the README shows no report")
	}
	report, _, _ = strings.Cut(rest, "```")
	return args, report
}
