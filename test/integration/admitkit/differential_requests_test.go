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

package admitkit

import "strings"

// diffRequests are TestHostsAgree's requests, in the order sent: the pods
// first, while the presets are those setUpDiff made, then the writes of
// presets, the update of to-update last.
func diffRequests() []diffRequest {
	return append(diffPodRequests(), diffPresetRequests()...)
}

// diffPodRequests create pods in diffNamespace, where the configured lm-*
// mutators, the annotation mutator diff-live and the Warn-mode Assign
// diff-warn apply to every one, and each preset of setUpDiff selects the
// pods labelled app=<its name>.
func diffPodRequests() []diffRequest {
	pod := func(name, manifest string) diffRequest {
		return diffRequest{name: "pod " + name, resource: podsGVR, manifest: manifest}
	}
	p := func(name, app, env string) string { return podYAML(diffNamespace, name, app, env) }
	dryRun := pod("dry run", withClusterLabel(p("dry-run", "enforced", "")))
	dryRun.dryRun = true
	return []diffRequest{
		pod("no preset selects", p("plain", "none", "")),
		pod("enforced preset", p("enforced", "enforced", "")),
		pod("without a token volume", withSpec(p("no-token", "enforced", ""), "automountServiceAccountToken: false")),
		pod("default policy, conflict", p("enforced-conflict", "enforced", ownProxy)),
		pod("PodWins, conflict", p("pod-wins", "pod-wins", ownProxy)),
		pod("PresetWins, conflict", p("preset-wins", "preset-wins", ownProxy)),
		refused(pod("Reject, conflict", p("reject", "reject", ownProxy))),
		pod("Reject, no conflict", p("reject-ok", "reject", "")),
		pod("SkipAll, conflict", p("skip-all", "skip-all", ownProxy)),
		pod("Warn mode", p("warn", "warn", "")),
		pod("Warn mode, conflict", p("warn-conflict", "warn", ownProxy)),
		pod("Audit mode", p("audit", "audit", "")),
		pod("ClusterPodPreset and PodPreset", withClusterLabel(p("cluster", "enforced", ""))),
		pod("excluded", withAnnotation(withClusterLabel(p("excluded", "enforced", "")), presetAnnotationPrefix+"exclude", "true")),
		dryRun,
		{name: "pod a mutator cannot mutate", resource: podsGVR, namespace: "lm-reject", refused: true, manifest: `apiVersion: v1
kind: Pod
metadata: {name: proxy, namespace: lm-reject}
spec:
  containers:
  - name: proxy
    image: registry.example.com/proxy:1
    ports: [{containerPort: 9090}]
`},
	}
}

// diffPresetRequests write presets: valid ones, to compare what each host
// defaults and stores, ones the registry's validation refuses, and an old
// client's update that drops the fields it does not know.
func diffPresetRequests() []diffRequest {
	preset := func(name, manifest string) diffRequest {
		return diffRequest{name: "PodPreset " + name, resource: podPresetsGVR, manifest: manifest}
	}
	dryRun := preset("dry run", presetYAML(diffNamespace, "dry-run", ""))
	dryRun.dryRun = true
	update := preset("update dropping the new fields", presetYAML(diffNamespace, "to-update", ""))
	update.update = true
	return []diffRequest{
		preset("with defaulted sources", presetYAML(diffNamespace, "defaulted", `  envFrom:
  - configMapRef: {name: settings}
  volumes:
  - name: settings
    configMap: {name: settings}
  - name: pod-info
    downwardAPI:
      items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]
  volumeMounts:
  - {name: settings, mountPath: /etc/settings}
  - {name: pod-info, mountPath: /etc/pod-info}
`)),
		preset("every field", presetYAML(diffNamespace, "every-field", `  mode: Warn
  conflictPolicy: PresetWins
  containers: {names: [app, web], exclude: true}
  initContainers: {names: [init]}
`)),
		refused(preset("hostPath without path", presetYAML(diffNamespace, "no-path", `  volumes:
  - {name: host, hostPath: {}}
`))),
		refused(preset("bad env and a mount of no volume", presetYAML(diffNamespace, "bad-items", `  envFrom:
  - {prefix: "1=", configMapRef: {name: settings}}
  volumeMounts:
  - {name: missing, mountPath: /missing}
`))),
		refused(preset("unknown conflict policy", presetYAML(diffNamespace, "bad-policy", "  conflictPolicy: Sometimes\n"))),
		dryRun,
		update,
		{name: "ClusterPodPreset", resource: clusterPodPresetsGVR, manifest: strings.ReplaceAll(diffClusterPreset, "diff-cluster", "diff-cluster-2")},
		{name: "ClusterPodPreset with a bad selector", resource: clusterPodPresetsGVR, refused: true, manifest: `apiVersion: settings.k8s.io/v1alpha1
kind: ClusterPodPreset
metadata: {name: diff-bad-selector}
spec:
  namespaceSelector:
    matchExpressions: [{key: team, operator: Sometimes}]
  env: [{name: A, value: "1"}]
`},
	}
}

// refused marks req as one every host refuses.
func refused(req diffRequest) diffRequest {
	req.refused = true
	return req
}

// withClusterLabel labels a podYAML pod cluster=yes, which diff-cluster
// selects.
func withClusterLabel(pod string) string {
	return strings.Replace(pod, "  labels: {app: ", "  labels: {cluster: \"yes\", app: ", 1)
}

// withAnnotation annotates a podYAML pod.
func withAnnotation(pod, key, value string) string {
	return strings.Replace(pod, "metadata:\n", "metadata:\n  annotations: {"+key+": \""+value+"\"}\n", 1)
}

// withSpec adds a field to a podYAML pod's spec.
func withSpec(pod, field string) string {
	return strings.Replace(pod, "spec:\n", "spec:\n  "+field+"\n", 1)
}
