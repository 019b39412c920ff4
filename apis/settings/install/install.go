// Package install adds settings.k8s.io, internal and v1alpha1, to a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// Install registers the internal and v1alpha1 types of settings.k8s.io,
// with their conversions and defaulters, and makes v1alpha1 the preferred
// version.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(settings.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1alpha1.SchemeGroupVersion))
}
