// Package admitkit runs the custom kube-apiserver once, with every admitkit
// plugin this build registers enabled, and tests the settings.k8s.io API
// and the plugins against it through the generated clientset, client-go
// and kubectl.
package admitkit

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
	"github.com/admitkit/admitkit/test/apiserver"
	"github.com/admitkit/admitkit/test/integration/framework"
)

var (
	server *framework.Server
	// registered is which admitkit plugins the build has; a test of a
	// plugin that is not there yet skips.
	registered []string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The server logs a lot; keep it in a file and show where on failure.
	logFile, err := os.CreateTemp("", "admitkit-apiserver-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer logFile.Close()
	klog.LogToStderr(false)
	klog.SetOutput(logFile)

	registered = apiserver.AdmitkitPlugins()
	cfg := serverConfig()
	if len(registered) > 0 {
		cfg.Args = append(cfg.Args, "--enable-admission-plugins="+strings.Join(registered, ","))
	}
	srv, err := framework.Start(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-apiserver: %v\n(server log: %s)\n", err, logFile.Name())
		return 1
	}
	server = srv

	code := m.Run()
	if err := srv.Cleanup(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping kube-apiserver: %v\n", err)
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "server log: %s\n", logFile.Name())
	} else {
		os.Remove(logFile.Name())
	}
	return code
}

// serverConfig is the one server of this package: two nodes, and the
// LocationMutator configuration of locationmutator_test.go.
func serverConfig() framework.Config {
	return framework.Config{
		Nodes: []string{"node-1", "node-2"},
	}
}

func requirePlugin(t *testing.T, name string) {
	t.Helper()
	if !slices.Contains(registered, name) {
		t.Skipf("this build registers no %s admission plugin yet (plugin.RegisterAllAdmissionPlugins has %v)", name, registered)
	}
}

func kubeClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(server.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func settingsClient(t *testing.T) settingsclient.Interface {
	t.Helper()
	c, err := settingsclient.NewForConfig(server.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// adminKubeconfig writes (once per test) the admin's kubeconfig.
func adminKubeconfig(t *testing.T) string {
	t.Helper()
	path, err := server.Kubeconfig("admin", framework.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func kubectl(t *testing.T, stdin string, args ...string) framework.KubectlResult {
	t.Helper()
	return framework.RunKubectl(adminKubeconfig(t), stdin, args...)
}

func mustKubectl(t *testing.T, stdin string, args ...string) framework.KubectlResult {
	t.Helper()
	r := kubectl(t, stdin, args...)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	return r
}

// testdata returns the path of a file under testdata/.
func testdata(name string) string { return filepath.Join("testdata", name) }

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
