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

package compiler

import (
	corev1 "k8s.io/api/core/v1"
)

// The CEL cost bound's parts, for its tests.

// PolicyCost is what one policy costs on the reference pod.
type PolicyCost = policyCost

// ExprCost is what one group of a policy's expressions costs.
type ExprCost = exprCost

// PolicyCosts is what each policy of r that applies to pod creates costs
// on src's reference pod.
func PolicyCosts(r Result, src Sources) []PolicyCost { return measure(r, src, "", true) }

// CompileUnbounded is Compile without the CEL cost bound.
func CompileUnbounded(src Sources) Result { return compileOnce(src, nil) }

// Reference is src's reference pod and its namespace.
func Reference(src Sources) (*corev1.Pod, *corev1.Namespace) {
	podLabels, nsLabels := referenceLabels(src)
	ns := referenceNamespace(src, nsLabels)
	return referencePod(ns.Name, podLabels), ns
}

// ForgetCosts empties the memo of what policies cost, so that the next
// Compile measures them again.
func ForgetCosts() {
	costs.mu.Lock()
	defer costs.mu.Unlock()
	costs.m = nil
}
