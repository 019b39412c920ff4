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

package ha

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// failoverClient creates pods through its current server and, when that
// server does not answer or answers as an apiserver that is going away or
// has lost etcd does (429, 5xx), moves to the next one and tries again
// after a backoff: what a client behind a load balancer sees. Within one
// server client-go already retries 429 and 503 answers with Retry-After.
type failoverClient struct {
	servers   []kubernetes.Interface
	current   int
	failovers int
	// recovered counts creates whose answer was lost but which were
	// stored: the retry found the pod already there.
	recovered int
}

// failoverDeadline bounds one create, retries included.
const failoverDeadline = 2 * time.Minute

func (c *failoverClient) create(ctx context.Context, ns string, pod *corev1.Pod) (*corev1.Pod, error) {
	deadline := time.Now().Add(failoverDeadline)
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		pods := c.servers[c.current].CoreV1().Pods(ns)
		out, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if attempt > 0 && apierrors.IsAlreadyExists(err) {
			out, err = pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if err == nil {
				c.recovered++
			}
		}
		if err == nil {
			return out, nil
		}
		if !serverTrouble(err) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pod %s/%s: no server stored it within %s, the last said: %w", ns, pod.Name, failoverDeadline, err)
		}
		c.current = (c.current + 1) % len(c.servers)
		c.failovers++
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

// serverTrouble says whether err is the server's trouble rather than the
// request's: no answer at all (refused, reset, timed out), 429 or 5xx.
func serverTrouble(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	code := status.Status().Code
	return code == 429 || code >= 500
}

// loadWorkers create pods at loadInterval each, half starting on A, half
// on B: enough to keep both busy without filling etcd.
const (
	loadWorkers  = 4
	loadInterval = 50 * time.Millisecond
)

// load is what the workers sent and what they were told.
type load struct {
	mu        sync.Mutex
	sent      map[string]time.Time // the first attempt of each pod
	created   map[string]bool
	failed    map[string]error
	failovers int
	recovered int
}

// runLoad creates pods in ns through servers until stop is closed, then
// returns.
func runLoad(ctx context.Context, ns string, servers []kubernetes.Interface, stop <-chan struct{}) *load {
	l := &load{sent: map[string]time.Time{}, created: map[string]bool{}, failed: map[string]error{}}
	var wg sync.WaitGroup
	for w := range loadWorkers {
		wg.Go(func() {
			c := &failoverClient{servers: servers, current: w % len(servers)}
			for n := 0; ; n++ {
				select {
				case <-stop:
					l.mu.Lock()
					l.failovers += c.failovers
					l.recovered += c.recovered
					l.mu.Unlock()
					return
				case <-time.After(loadInterval):
				}
				name := fmt.Sprintf("load-%d-%d", w, n)
				l.mu.Lock()
				l.sent[name] = time.Now()
				l.mu.Unlock()
				_, err := c.create(ctx, ns, framework.Pod(name, map[string]string{"app": "load"}, "app"))
				l.mu.Lock()
				if err != nil {
					l.failed[name] = err
				} else {
					l.created[name] = true
				}
				l.mu.Unlock()
			}
		})
	}
	wg.Wait()
	return l
}

// loadClient is an admin client that gives up on a request after a while,
// as a client behind a load balancer would, instead of waiting on a
// server that went away.
func loadClient(t *testing.T, s *framework.Server) kubernetes.Interface {
	cfg := s.AdminConfig()
	cfg.Timeout = 20 * time.Second
	return framework.KubeClient(t, cfg)
}

// presetTimeline records when each preset had reached the admission of
// every server that was up: a pod sent after that must carry it.
type presetTimeline map[string]time.Time

// writePreset creates a PodPreset for the load's pods through via, waits
// until every server in up applies it, and records when.
func (pt presetTimeline) writePreset(t *testing.T, ns, name string, via *framework.Server, up ...*framework.Server) {
	t.Helper()
	_, err := framework.SettingsClient(t, via.AdminConfig()).SettingsV1alpha1().PodPresets(ns).Create(context.Background(), &settingsv1alpha1.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: settingsv1alpha1.PodPresetSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "load"}},
			Env:      []corev1.EnvVar{{Name: strings.ToUpper(name), Value: "set"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating PodPreset %s: %v", name, err)
	}
	for _, s := range up {
		waitForPreset(t, framework.KubeClient(t, s.AdminConfig()), ns, framework.Pod("probe", map[string]string{"app": "load"}, "app"), "podpreset-"+name, true)
	}
	pt[name] = time.Now()
}

// TestFaults runs a load of pod creates spread over both servers and stops
// a server or an etcd member in the middle of it, then restarts it. Presets
// are written before, during and after the fault. Nothing the clients were
// told was stored may be missing at the end, and no pod sent after a preset
// had reached every running server may lack it.
func TestFaults(t *testing.T) {
	for _, tc := range []faultCase{
		{
			name: "apiserver B stops",
			ns:   "ha-fault-apiserver",
			fault: func(t *testing.T) ([]*framework.Server, func() error) {
				if err := serverB.Stop(); err != nil {
					t.Fatalf("stopping B: %v", err)
				}
				return []*framework.Server{serverA}, serverB.Restart
			},
		},
		{
			name: "etcd leader stops",
			ns:   "ha-fault-etcd",
			fault: func(t *testing.T) ([]*framework.Server, func() error) {
				leader, err := cluster.Etcd.Leader()
				if err != nil {
					t.Fatal(err)
				}
				cluster.Etcd.Stop(leader)
				t.Logf("stopped etcd member %s, the leader", cluster.Etcd.Member(leader).Name)
				return []*framework.Server{serverA, serverB}, func() error { return cluster.Etcd.Restart(leader) }
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runFault(t, tc) })
	}
}

// faultCase is a fault TestFaults brings about under load.
type faultCase struct {
	name string
	ns   string
	// fault stops something and returns the servers still serving and
	// how to bring back what it stopped.
	fault func(t *testing.T) (up []*framework.Server, restore func() error)
}

// runFault runs the load in tc's namespace, brings the fault about in the
// middle of it with a preset written before, during and after, and checks
// what the clients were told against what the servers store.
func runFault(t *testing.T, tc faultCase) {
	ctx := context.Background()
	ns := tc.ns
	framework.CreateNamespace(t, serverA.AdminConfig(), ns, nil)
	presets := presetTimeline{}
	presets.writePreset(t, ns, "before", serverA, serverA, serverB)

	servers := []kubernetes.Interface{loadClient(t, serverA), loadClient(t, serverB)}
	stop := make(chan struct{})
	stopLoad := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(stopLoad)
	result := make(chan *load, 1)
	go func() { result <- runLoad(ctx, ns, servers, stop) }()

	time.Sleep(2 * time.Second)
	faultStart := time.Now()
	up, restore := tc.fault(t)
	recovered := false
	// The other tests share the cluster: bring it back even when
	// this one fails half-way.
	t.Cleanup(func() {
		if !recovered {
			if err := restore(); err != nil {
				t.Errorf("recovering from %q: %v", tc.name, err)
			}
		}
	})
	presets.writePreset(t, ns, "during", up[0], up...)
	time.Sleep(2 * time.Second)
	recovered = true
	if err := restore(); err != nil {
		t.Fatalf("recovering from %q: %v", tc.name, err)
	}
	faultEnd := time.Now()
	presets.writePreset(t, ns, "after", serverB, serverA, serverB)
	time.Sleep(time.Second)
	stopLoad()
	l := <-result

	checkLoad(t, ns, l, presets)
	during := 0
	for _, sent := range l.sent {
		if sent.After(faultStart) && sent.Before(faultEnd) {
			during++
		}
	}
	t.Logf("from the stop until it served again: %v, %d pods sent", faultEnd.Sub(faultStart).Round(time.Millisecond), during)
	checkEtcdMembersAgree(t, ns)
}

// checkLoad compares what the clients were told with what both servers
// list, and checks every pod's presets against the timeline.
func checkLoad(t *testing.T, ns string, l *load, presets presetTimeline) {
	t.Helper()
	for name, err := range l.failed {
		t.Errorf("pod %s was never stored: %v", name, err)
	}
	for _, s := range []*framework.Server{serverA, serverB} {
		list, err := framework.KubeClient(t, s.AdminConfig()).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		var late []string
		for i := range list.Items {
			pod := &list.Items[i]
			listed[pod.Name] = true
			sent, ok := l.sent[pod.Name]
			if !ok {
				t.Errorf("%s lists pod %s, which no client sent", s.Host, pod.Name)
				continue
			}
			applied := presetsOn(pod)
			for preset, synced := range presets {
				if sent.After(synced) && !applied["podpreset-"+preset] {
					late = append(late, fmt.Sprintf("%s (sent %s after %s reached every server, has %v)", pod.Name, sent.Sub(synced), preset, applied))
				}
			}
		}
		var lost []string
		for name := range l.created {
			if !listed[name] {
				lost = append(lost, name)
			}
		}
		slices.Sort(lost)
		if len(lost) > 0 {
			t.Errorf("%s does not list %d pods the clients were told were created: %v", s.Host, len(lost), lost)
		}
		if len(late) > 0 {
			t.Errorf("%d pods were admitted without a preset every server had: %v", len(late), late[:min(len(late), 5)])
		}
		if s == serverA {
			t.Logf("%d pods sent, %d created (%d of them found stored after a lost answer), %d failed, %d failovers; %d listed",
				len(l.sent), len(l.created), l.recovered, len(l.failed), l.failovers, len(list.Items))
		}
	}
}

// checkEtcdMembersAgree waits until every etcd member, read locally
// (serializable, so a member answers from its own store), holds as many of
// ns's pods as the cluster does: a restarted member has caught up.
func checkEtcdMembersAgree(t *testing.T, ns string) {
	t.Helper()
	prefix := "/registry/pods/" + ns + "/"
	count := func(ctx context.Context, url string, opts ...clientv3.OpOption) (int64, error) {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return 0, err
		}
		defer c.Close()
		resp, err := c.Get(ctx, prefix, append(opts, clientv3.WithPrefix(), clientv3.WithCountOnly())...)
		if err != nil {
			return 0, err
		}
		return resp.Count, nil
	}
	urls := cluster.Etcd.ClientURLs()
	want, err := count(context.Background(), urls[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, url := range urls {
		var got int64
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err = count(ctx, url, clientv3.WithSerializable())
			return err == nil && got == want, nil
		})
		if err != nil {
			t.Errorf("etcd member %s holds %d of namespace %s's pods, the cluster %d: %v", cluster.Etcd.Member(i).Name, got, ns, want, err)
		}
	}
}
