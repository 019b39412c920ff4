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

// Command kube-apiserver is upstream's kube-apiserver of k8s.io/kubernetes
// v1.37.2 exactly as its release ships it, with nothing of admitkit linked
// in: the stock server of the clusters admitkit reaches only as admission
// webhooks and CRDs (WEBHOOK=1 hack/local-up.sh, the stock host of the
// integration tests, the webhook benchmarks). It needs an etcd
// (--etcd-servers); its NodeRestriction is upstream's.
package main

import (
	"os"
	// CronJob time zones, as the release binary carries them.
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	// The JSON log format, the client-go and version metrics: the side
	// effects the release binary registers.
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
