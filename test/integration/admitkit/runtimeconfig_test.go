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

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/admitkit/admitkit/test/integration/framework"
)

// TestPodPresetNeedsSettingsServed starts servers whose PodPreset plugin
// could never sync, because --runtime-config leaves what it watches off:
// each must fail start-up naming both flags and the resource.
func TestPodPresetNeedsSettingsServed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts more servers")
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "the group left off, as alpha versions are by default",
			args: []string{"--enable-admission-plugins=PodPreset"},
			want: []string{"podpresets.settings.k8s.io", "--enable-admission-plugins", "--runtime-config=settings.k8s.io/v1alpha1=true"},
		},
		{
			name: "the group turned off",
			args: []string{"--runtime-config=settings.k8s.io/v1alpha1=false", "--enable-admission-plugins=NodeRestriction,PodPreset"},
			want: []string{"podpresets.settings.k8s.io", "--enable-admission-plugins", "--runtime-config=settings.k8s.io/v1alpha1=true"},
		},
		{
			name: "clusterpodpresets turned off",
			args: []string{"--runtime-config=settings.k8s.io/v1alpha1=true,settings.k8s.io/v1alpha1/clusterpodpresets=false", "--enable-admission-plugins=PodPreset"},
			want: []string{"clusterpodpresets.settings.k8s.io", "--enable-admission-plugins"},
		},
		{
			name: "through the deprecated --admission-control",
			args: []string{"--admission-control=PodPreset,ServiceAccount"},
			want: []string{"podpresets.settings.k8s.io", "--runtime-config=settings.k8s.io/v1alpha1=true"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			framework.MustFailToStart(t, framework.Config{Args: tc.args}, tc.want...)
		})
	}
}

// TestSettingsTurnedOff starts a server with settings.k8s.io/v1alpha1
// turned off and PodPreset not enabled: it starts, and neither discovery
// nor the API serves the group.
func TestSettingsTurnedOff(t *testing.T) {
	if testing.Short() {
		t.Skip("starts another server")
	}
	srv, err := framework.Start(framework.Config{Args: []string{"--runtime-config=settings.k8s.io/v1alpha1=false", "--enable-admission-plugins=NodeRestriction"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Cleanup()
	client, err := kubernetes.NewForConfig(srv.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	groups, err := client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == "settings.k8s.io" {
			t.Errorf("discovery lists settings.k8s.io: %v", g.Versions)
		}
	}
	_, err = framework.SettingsClient(t, srv.AdminConfig()).SettingsV1alpha1().PodPresets("default").List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("listing podpresets: got %v, want NotFound", err)
	}
}
