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
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/plugin/webhook/offline"
)

// newCompileCommand is `admitkit compile`: presets and mutators in,
// MutatingAdmissionPolicies and their bindings out.
func newCompileCommand() *cobra.Command {
	namespace := "default"
	cmd := &cobra.Command{
		Use:   "compile [flags] FILE|DIR|- ...",
		Short: "Compile PodPresets, ClusterPodPresets and Gatekeeper mutators into MutatingAdmissionPolicies",
		Long: `Compile PodPresets, ClusterPodPresets and Gatekeeper mutators
(mutations.gatekeeper.sh) into admissionregistration.k8s.io/v1
MutatingAdmissionPolicies and bindings (and ValidatingAdmissionPolicies where
an object refuses, warns or audits), which kube-apiserver 1.36 and later
applies with no webhook. The policies go to stdout as one YAML stream; a line
per object read goes to stderr: compiled, or not compiled with the field and
the reason. Exit status: 0 everything compiled, 1 something did not compile
(what did is still printed), 2 bad input.`,
		Args:         cobra.MinimumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := readSources(args, cmd, namespace)
			if err != nil {
				return asExitError(err)
			}
			result := compiler.Compile(src)
			if err := result.WriteYAML(cmd.OutOrStdout()); err != nil {
				return err
			}
			if err := result.WriteReport(cmd.ErrOrStderr()); err != nil {
				return err
			}
			if len(result.Refused) > 0 {
				return &exitError{exitRefused, fmt.Errorf("%d objects did not compile", len(result.Refused))}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", namespace, "The namespace of PodPresets that name none.")
	return cmd
}

// readSources reads the presets and mutators of the files as admit reads
// its state, and decodes the mutators with the LocationMutator's own
// decoder, so a mutator the server would refuse is bad input here too.
func readSources(paths []string, cmd *cobra.Command, namespace string) (compiler.Sources, error) {
	docs, err := offline.ReadObjects(paths, cmd.InOrStdin())
	if err != nil {
		return compiler.Sources{}, err
	}
	if len(docs) == 0 {
		return compiler.Sources{}, &offline.InputError{Object: fmt.Sprint(paths), Err: errors.New("no objects to compile")}
	}
	state, err := offline.ReadState(docs, namespace)
	if err != nil {
		return compiler.Sources{}, err
	}
	var src compiler.Sources
	for _, p := range state.Presets {
		src.PodPresets = append(src.PodPresets, *p)
	}
	for _, p := range state.ClusterPresets {
		src.ClusterPodPresets = append(src.ClusterPodPresets, *p)
	}
	for _, obj := range state.Mutators {
		data, err := json.Marshal(obj.Object)
		if err != nil {
			return compiler.Sources{}, err
		}
		m, errs := mutation.DecodeJSON(data)
		if len(errs) > 0 {
			return compiler.Sources{}, &offline.InputError{Object: obj.GetKind() + " " + obj.GetName(), Err: errs.ToAggregate()}
		}
		src.Mutators = append(src.Mutators, m)
	}
	return src, nil
}
