#!/usr/bin/env bash
# Runs a single-node Kubernetes 1.37.2 cluster on this machine, installs the
# admitkit webhook server into it as a cluster owner would, checks it through
# its Service, and takes everything down again. Run as root:
#
#   hack/real-node.sh
#
# What runs, all inside network, mount and PID namespaces the script creates
# (nothing it starts can reach an address outside them: the network namespace
# has only its loopback and a bridge the script makes):
#   - one etcd member (test/cmd/admitkit-etcd) on 127.0.0.1;
#   - upstream's kube-apiserver (test/cmd/kube-apiserver) with
#     --enable-aggregator-routing=true, so it calls the webhook Service's
#     endpoints directly (no kube-proxy runs here);
#   - kube-controller-manager, kube-scheduler and the kubelet of
#     k8s.io/kubernetes v1.37.2, built from the test module;
#   - Debian's containerd, runc, CNI plugins and iptables (apt-get installs them when
#     missing), with containerd's root, state, socket and CNI files in a
#     temporary directory, never the system's;
#   - a pause image the script builds (a static Go program that sleeps until
#     signalled, packed as an OCI archive) and admitkit's image from
#     hack/image, both imported with `ctr -n k8s.io images import`.
# Pods get addresses of POD_CIDR on the bridge cni0; the bridge's own address
# is the node's, where kube-apiserver and the kubelet serve. Pods reach the
# `kubernetes` Service without kube-proxy through one DNAT rule that sends
# its ClusterIP to the apiserver.
#
# What this machine needs beyond a textbook install, each found by running it:
#   - cgroup v1 (a hybrid hierarchy): the kubelet refuses it unless its
#     configuration sets failCgroupV1: false;
#   - root lacks CAP_SYS_RESOURCE, so runc cannot raise a sandbox's
#     oom_score_adj: containerd's restrict_oom_score_adj = true;
#   - the kubelet sets machine-wide sysctls (vm.overcommit_memory,
#     kernel.panic, kernel.panic_on_oops, ...): the script binds files over
#     them in its mount namespace, so the machine's values never change;
#   - containerd keeps shim sockets and network namespaces under /run, the
#     kubelet writes /var/log/{pods,containers} and
#     /var/lib/kubelet/device-plugins, and CNI caches results in
#     /var/lib/cni, whatever their roots: /run, /var/log and /var/lib are
#     tmpfs in the mount namespace;
#   - the kubelet's pods live under the cgroup root realnode-<pid> in every
#     hierarchy, and runc also makes them in the cgroup v2 one: cleanup
#     removes the tree from each.
#
# Then it installs admitkit with the chart (hack/chart/admitkit, helm from
# hack/tools), unchanged but for the image, as the README does, and checks
# through the Service, printing each result with its time:
#   ready      both replicas Ready
#   walkthrough  hack/examples' PodPreset and live Assign reach a pod
#   failover   a replica's pod deleted under pod-create load: no pod stored
#              half-mutated, creates recover (refusals are counted)
#   upgrade    a helm upgrade that rolls the replicas, under load, refuses
#              no create
#   uninstall  helm uninstall leaves the cluster writable (a pod and a
#              ConfigMap created after)
#
# On exit (success, failure or Ctrl-C) every process, mount, namespace,
# cgroup and temporary file it made is gone.
#
# Environment:
#   SKIP_BUILD   set to reuse the binaries and images in _output/realnode
#   KEEP_LOGS    a directory to copy the components' logs into before cleanup
#   LOAD_PODS    the least pod creates in each load check (default 40)
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
export PATH="${PATH}:/usr/local/go/bin"

OUT="${ROOT}/_output/realnode"
BIN="${OUT}/bin"
NODE_NAME=node-1
# Addresses that exist only inside the script's network namespace.
POD_CIDR=10.88.0.0/24
NODE_IP=10.88.0.1
SERVICE_CIDR=10.96.0.0/24
KUBERNETES_SERVICE_IP=10.96.0.1
PAUSE_IMAGE=realnode.local/pause:1
LOAD_PODS=${LOAD_PODS:-40}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# ---------------------------------------------------------------------------
# Outside the namespaces: packages, builds, images, then the namespaces.
# ---------------------------------------------------------------------------
if [[ "${REALNODE_INSIDE:-}" != 1 ]]; then
    if [[ "$(id -u)" != 0 ]]; then
        echo "hack/real-node.sh runs containers: run it as root" >&2
        exit 1
    fi
    T_START=$(now)
    if ! command -v containerd >/dev/null || ! command -v runc >/dev/null || ! command -v iptables >/dev/null \
        || [[ ! -x /usr/lib/cni/bridge ]]; then
        echo "Installing containerd, runc, the CNI plugins and iptables with apt-get..."
        apt-get update >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y containerd runc containernetworking-plugins iptables >/dev/null
    fi
    # Debian's package starts containerd as a service where systemd runs;
    # this script never uses it: its containerd has its own socket and root.

    mkdir -p "${BIN}" "${OUT}/image"
    if [[ -z "${SKIP_BUILD:-}" ]]; then
        echo "Building etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl, helm and admitkit's image into ${OUT} (minutes the first time)..."
        (cd test && nice -n 10 go build -o "${BIN}/admitkit-etcd" ./cmd/admitkit-etcd \
            && nice -n 10 go build -o "${BIN}/kube-apiserver" ./cmd/kube-apiserver \
            && nice -n 10 go build -o "${BIN}/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager \
            && nice -n 10 go build -o "${BIN}/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler \
            && nice -n 10 go build -o "${BIN}/kubelet" k8s.io/kubernetes/cmd/kubelet \
            && nice -n 10 go build -o "${BIN}/kubectl" k8s.io/kubernetes/cmd/kubectl)
        (cd hack/tools && nice -n 10 go build -o "${BIN}/helm" helm.sh/helm/v4/cmd/helm)
        nice -n 10 go run ./hack/image -o "${OUT}/admitkit-oci" -tar "${OUT}/admitkit-image.tar"

        # The pause image: a static program that sleeps until signalled.
        pause_src="${OUT}/pause-src"
        mkdir -p "${pause_src}"
        cat >"${pause_src}/main.go" <<'GO'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

// Holds the pod's namespaces until the runtime stops the sandbox.
func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
GO
        printf 'module pause\n\ngo 1.22\n' >"${pause_src}/go.mod"
        (cd "${pause_src}" && CGO_ENABLED=0 GOWORK=off GOFLAGS= nice -n 10 go build -trimpath -o "${OUT}/image/pause" .)
    fi

    # oci_archive binary name user out: an OCI image archive of one layer
    # holding the binary at /<basename>, its entrypoint, run as user.
    oci_archive() {
        local binary=$1 name=$2 user=$3 out=$4 dir
        dir=$(mktemp -d)
        mkdir -p "${dir}/rootfs" "${dir}/oci/blobs/sha256"
        install -m 0755 "${binary}" "${dir}/rootfs/$(basename "${binary}")"
        tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "${dir}/rootfs" -cf "${dir}/layer.tar" .
        blob() { # file: prints "digest size" and stores it as a blob
            local d s
            d=$(sha256sum "$1" | cut -d' ' -f1)
            s=$(stat -c %s "$1")
            cp "$1" "${dir}/oci/blobs/sha256/${d}"
            echo "${d} ${s}"
        }
        local layer config manifest
        read -r -a layer <<<"$(blob "${dir}/layer.tar")"
        printf '{"architecture":"%s","os":"linux","config":{"User":"%s","Entrypoint":["/%s"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
            "$(go env GOARCH)" "${user}" "$(basename "${binary}")" "${layer[0]}" >"${dir}/config.json"
        read -r -a config <<<"$(blob "${dir}/config.json")"
        printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
            "${config[0]}" "${config[1]}" "${layer[0]}" "${layer[1]}" >"${dir}/manifest.json"
        read -r -a manifest <<<"$(blob "${dir}/manifest.json")"
        printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
            "${manifest[0]}" "${manifest[1]}" "${name}" "${name##*:}" >"${dir}/oci/index.json"
        printf '{"imageLayoutVersion":"1.0.0"}' >"${dir}/oci/oci-layout"
        tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "${dir}/oci" -cf "${out}" oci-layout index.json blobs
        rm -rf "${dir}"
    }
    oci_archive "${OUT}/image/pause" "${PAUSE_IMAGE}" 65535:65535 "${OUT}/pause.tar"
    T_BUILT=$(now)

    WORK=$(mktemp -d /tmp/realnode.XXXXXX)
    CGROUP=realnode-$$
    INSIDE_PID=
    cleanup() {
        trap - INT TERM EXIT
        if [[ -n "${INSIDE_PID}" ]] && kill -0 "${INSIDE_PID}" 2>/dev/null; then
            kill -TERM "${INSIDE_PID}" 2>/dev/null || true
            wait "${INSIDE_PID}" 2>/dev/null || true
        fi
        # The PID namespace is gone with its first process, and every process
        # in it; their cgroups empty a moment later. Children first.
        local root dirs left=()
        for _ in $(seq 1 50); do
            left=()
            for root in /sys/fs/cgroup/*/"${CGROUP}" /sys/fs/cgroup/"${CGROUP}"; do
                [[ -d "${root}" ]] || continue
                find "${root}" -depth -type d -exec rmdir {} \; 2>/dev/null || true
                [[ -d "${root}" ]] && left+=("${root}")
            done
            [[ ${#left[@]} -eq 0 ]] && break
            sleep 0.2
        done
        if [[ ${#left[@]} -gt 0 ]]; then
            echo "could not remove the cgroups ${left[*]}" >&2
        fi
        rm -rf "${WORK}"
    }
    trap cleanup EXIT
    trap 'exit 130' INT TERM

    # The kubelet's cgroup root, in every v1 hierarchy (a cpuset child needs
    # its parent's CPUs and memory nodes before anything can join it).
    for hierarchy in /sys/fs/cgroup/*/; do
        [[ -f "${hierarchy}cgroup.procs" ]] || continue
        mkdir -p "${hierarchy}${CGROUP}"
        if [[ -f "${hierarchy}cpuset.cpus" ]]; then
            cat "${hierarchy}cpuset.cpus" >"${hierarchy}${CGROUP}/cpuset.cpus"
            cat "${hierarchy}cpuset.mems" >"${hierarchy}${CGROUP}/cpuset.mems"
        fi
    done

    # --propagation private: nothing mounted inside is seen outside.
    REALNODE_INSIDE=1 WORK="${WORK}" CGROUP="${CGROUP}" T_START="${T_START}" T_BUILT="${T_BUILT}" \
        unshare --net --mount --pid --fork --mount-proc --propagation private bash "${ROOT}/hack/real-node.sh" &
    INSIDE_PID=$!
    rc=0
    wait "${INSIDE_PID}" || rc=$?
    INSIDE_PID=
    exit "${rc}"
fi

# ---------------------------------------------------------------------------
# Inside: PID 1 of the new PID namespace, in its own network and mount
# namespaces. Everything started here dies with this process.
# ---------------------------------------------------------------------------
LOGS="${WORK}/logs"
mkdir -p "${LOGS}"
KUBECTL="${BIN}/kubectl"

PIDS=()
finish() {
    local rc=$?
    trap - INT TERM EXIT
    if [[ -n "${KEEP_LOGS:-}" ]]; then
        mkdir -p "${KEEP_LOGS}"
        cp -r "${LOGS}/." "${KEEP_LOGS}/" 2>/dev/null || true
    fi
    # Last started first (the kubelet before containerd, the apiserver
    # before etcd), given 10s; whatever is left, the containers and their
    # shims included, dies with this namespace's first process (this one).
    local i pid
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
        kill -TERM "${PIDS[i]}" 2>/dev/null || true
        for _ in $(seq 1 20); do
            kill -0 "${PIDS[i]}" 2>/dev/null || break
            sleep 0.5
        done
    done
    for pid in "${PIDS[@]}"; do
        kill -KILL "${pid}" 2>/dev/null || true
    done
    exit "${rc}"
}
trap finish EXIT
trap 'exit 130' INT TERM

# fail message: prints it with the end of the logs named after it, exits.
fail() {
    echo "FAIL: $1" >&2
    local log
    for log in "${@:2}"; do
        echo "--- the end of ${log}:" >&2
        tail -n 30 "${LOGS}/${log}" >&2 || true
    done
    exit 1
}

# until_ok seconds command...: runs command every 0.5s until it succeeds,
# or fails after seconds.
until_ok() {
    local seconds=$1 deadline
    shift
    deadline=$(($(date +%s) + seconds))
    until "$@" >/dev/null 2>&1; do
        if (($(date +%s) >= deadline)); then
            return 1
        fi
        sleep 0.5
    done
}

# --- the mount namespace: what must not touch the machine ----------------
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /var/log
# The kubelet's device-plugin sockets and CNI's result cache are in
# /var/lib whatever their roots are set to; nothing here needs the
# machine's /var/lib.
mount -t tmpfs tmpfs /var/lib
# The kubelet sets these on start; each is a file of the value it wants, so
# the machine's own settings stay as they are.
mkdir -p "${WORK}/sysctl"
for setting in vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1 \
    kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000; do
    file="${WORK}/sysctl/${setting%%=*}"
    mkdir -p "$(dirname "${file}")"
    echo "${setting#*=}" >"${file}"
    mount --bind "${file}" "/proc/sys/${setting%%=*}"
done
echo "" >"${WORK}/resolv.conf"

# --- the network namespace -----------------------------------------------
ip link set lo up
ip link add cni0 type bridge
ip addr add "${NODE_IP}/${POD_CIDR#*/}" dev cni0
ip link set cni0 up
# The `kubernetes` Service without kube-proxy: its ClusterIP goes to the
# apiserver on the node's address.
iptables -t nat -A PREROUTING -d "${KUBERNETES_SERVICE_IP}/32" -p tcp --dport 443 \
    -j DNAT --to-destination "${NODE_IP}:6443"

# --- identities and kubeconfigs, as hack/local-up.sh makes them ----------
DATA="${WORK}/data"
mkdir -p "${DATA}/certs"
token() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
ADMIN_TOKEN=$(token)
NODE_TOKEN=$(token)
KCM_TOKEN=$(token)
SCHED_TOKEN=$(token)
(
    umask 077
    {
        echo "${ADMIN_TOKEN},admin,admin,system:masters"
        echo "${NODE_TOKEN},system:node:${NODE_NAME},node-${NODE_NAME},system:nodes"
        echo "${KCM_TOKEN},system:kube-controller-manager,kube-controller-manager"
        echo "${SCHED_TOKEN},system:kube-scheduler,kube-scheduler"
    } >"${DATA}/tokens.csv"
)
write_kubeconfig() { # file user token
    cat >"$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: realnode
  cluster:
    server: https://${NODE_IP}:6443
    certificate-authority: ${DATA}/certs/apiserver.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: $2
  context:
    cluster: realnode
    user: $2
current-context: $2
KUBECONFIG
    chmod 600 "$1"
}
write_kubeconfig "${DATA}/admin.kubeconfig" admin "${ADMIN_TOKEN}"
write_kubeconfig "${DATA}/kubelet.kubeconfig" "system:node:${NODE_NAME}" "${NODE_TOKEN}"
write_kubeconfig "${DATA}/kcm.kubeconfig" system:kube-controller-manager "${KCM_TOKEN}"
write_kubeconfig "${DATA}/scheduler.kubeconfig" system:kube-scheduler "${SCHED_TOKEN}"
export KUBECONFIG="${DATA}/admin.kubeconfig"
# kubectl's and helm's discovery and HTTP caches, not ~/.kube/cache.
export KUBECACHEDIR="${WORK}/kube-cache"
k() { "${KUBECTL}" "$@"; }

# The service-account key, from Go's crypto as hack/local-up.sh does.
mkdir -p "${WORK}/sakey"
cat >"${WORK}/sakey/main.go" <<'GO'
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"log"
	"os"
)

func main() {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatal(err)
	}
	if err := pem.Encode(os.Stdout, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}); err != nil {
		log.Fatal(err)
	}
}
GO
(umask 077 && cd "${WORK}/sakey" && printf 'module sakey\n\ngo 1.22\n' >go.mod && GOWORK=off GOFLAGS= go run . >"${DATA}/sa.key")

# --- control plane ----------------------------------------------------------
start() { # log command...
    local log=$1
    shift
    "$@" >"${LOGS}/${log}" 2>&1 &
    PIDS+=($!)
}
alive() { kill -0 "${PIDS[-1]}" 2>/dev/null; }

echo "Starting etcd, kube-apiserver, kube-controller-manager and kube-scheduler..."
start etcd.log "${BIN}/admitkit-etcd" --data-dir="${DATA}" --members=1 --member=1 --port=2379
start kube-apiserver.log "${BIN}/kube-apiserver" \
    --bind-address=0.0.0.0 --advertise-address="${NODE_IP}" --secure-port=6443 \
    --etcd-servers=http://127.0.0.1:2379 --cert-dir="${DATA}/certs" \
    --service-cluster-ip-range="${SERVICE_CIDR}" \
    --token-auth-file="${DATA}/tokens.csv" --authorization-mode=Node,RBAC \
    --enable-admission-plugins=NodeRestriction \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="${DATA}/sa.key" --service-account-signing-key-file="${DATA}/sa.key" \
    --enable-aggregator-routing=true
APISERVER_PID=${PIDS[-1]}
apiserver_ready() { kill -0 "${APISERVER_PID}" && k get --raw /readyz; }
until_ok 120 apiserver_ready || fail "kube-apiserver was not ready in 120s" kube-apiserver.log etcd.log
start kube-controller-manager.log "${BIN}/kube-controller-manager" --kubeconfig="${DATA}/kcm.kubeconfig" \
    --bind-address=127.0.0.1 --use-service-account-credentials=true \
    --service-account-private-key-file="${DATA}/sa.key" --root-ca-file="${DATA}/certs/apiserver.crt"
start kube-scheduler.log "${BIN}/kube-scheduler" --kubeconfig="${DATA}/scheduler.kubeconfig" \
    --authentication-kubeconfig="${DATA}/scheduler.kubeconfig" --authorization-kubeconfig="${DATA}/scheduler.kubeconfig" \
    --bind-address=127.0.0.1

# --- containerd ---------------------------------------------------------------
CTRD="${WORK}/containerd"
mkdir -p "${CTRD}" "${WORK}/cni/net.d" "${WORK}/cni/ipam"
cat >"${CTRD}/config.toml" <<TOML
version = 2
root = "${CTRD}/root"
state = "${CTRD}/state"
[grpc]
  address = "${CTRD}/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "${CTRD}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # Root here lacks CAP_SYS_RESOURCE: runc cannot set an oom_score_adj
  # below containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${WORK}/cni/net.d"
TOML
# Pods route only the Service range beside their own (to the node, which
# translates the one ClusterIP it serves): there is nowhere else to go.
cat >"${WORK}/cni/net.d/10-realnode.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "realnode",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": "${POD_CIDR}", "gateway": "${NODE_IP}"}]],
      "routes": [{"dst": "${SERVICE_CIDR}"}],
      "dataDir": "${WORK}/cni/ipam"
    }
  }]
}
JSON
start containerd.log containerd --config "${CTRD}/config.toml"
ctr() { command ctr --address "${CTRD}/containerd.sock" -n k8s.io "$@"; }
until_ok 60 ctr version || fail "containerd did not start in 60s" containerd.log
ctr images import "${OUT}/pause.tar" >/dev/null
ctr images import "${OUT}/admitkit-image.tar" >/dev/null
# The name hack/image gave it, which the chart is told to run.
ADMITKIT_IMAGE=$(tar -xOf "${OUT}/admitkit-image.tar" --wildcards '*index.json' | grep -o '"io.containerd.image.name": *"[^"]*"' | head -n 1 | sed 's/.*: *"\(.*\)"/\1/')
[[ -n "${ADMITKIT_IMAGE}" ]] || fail "${OUT}/admitkit-image.tar names no image"

# --- kubelet ----------------------------------------------------------------------
mkdir -p "${WORK}/kubelet"
cat >"${WORK}/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine mounts cgroup v1; the kubelet refuses it unless told.
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: /${CGROUP}
containerRuntimeEndpoint: unix://${CTRD}/containerd.sock
address: ${NODE_IP}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
authorization:
  mode: Webhook
resolvConf: ${WORK}/resolv.conf
podLogsDir: /var/log/pods
# A shared machine's disk and memory are not this node's to protect.
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
YAML
echo "Starting containerd and the kubelet..."
start kubelet.log "${BIN}/kubelet" --config="${WORK}/kubelet/config.yaml" --kubeconfig="${DATA}/kubelet.kubeconfig" \
    --root-dir="${WORK}/kubelet" --hostname-override="${NODE_NAME}" --node-ip="${NODE_IP}"
KUBELET_PID=${PIDS[-1]}
node_ready() {
    kill -0 "${KUBELET_PID}" \
        && [[ "$(k get node "${NODE_NAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}
until_ok 180 node_ready || fail "node ${NODE_NAME} was not Ready in 180s" kubelet.log containerd.log
until_ok 120 k get serviceaccount default -n default \
    || fail "kube-controller-manager made no default service account in 120s" kube-controller-manager.log

# A plain pod: the pause image as its container.
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: plain
  namespace: default
spec:
  containers:
  - name: sleep
    image: ${PAUSE_IMAGE}
    imagePullPolicy: Never
YAML
k wait --for=condition=Ready pod/plain --timeout=120s >/dev/null \
    || fail "the plain pod did not run in 120s: $(k describe pod plain | tail -n 15)" kubelet.log containerd.log
echo "Node ${NODE_NAME} Ready, a plain pod running: bring-up $(since "${T_BUILT}") (builds and images $(awk -v a="${T_START}" -v b="${T_BUILT}" 'BEGIN { printf "%.1fs", b - a }'))"
T_UP=$(now)

# --- admitkit -----------------------------------------------------------------
RESULTS=()
record() { # name result time
    RESULTS+=("$(printf '%-12s %-4s %8s  %s' "$1" "$2" "$3" "${4:-}")")
    printf '%-12s %-4s %8s  %s\n' "$1" "$2" "$3" "${4:-}"
}

# The README's install, the image named as hack/image named it.
IMAGE_SET=(--set "image.repository=${ADMITKIT_IMAGE%:*}" --set "image.tag=${ADMITKIT_IMAGE##*:}")
# Helm's cache, configuration and data in the temporary directory too.
helm() {
    HELM_CACHE_HOME="${WORK}/helm/cache" HELM_CONFIG_HOME="${WORK}/helm/config" HELM_DATA_HOME="${WORK}/helm/data" \
        "${BIN}/helm" --kubeconfig="${KUBECONFIG}" "$@"
}
echo "Installing admitkit with helm (hack/chart/admitkit, image ${ADMITKIT_IMAGE})..."
k apply -f hack/manifests/00-namespace.yaml >/dev/null
helm install admitkit hack/chart/admitkit --namespace admitkit-system "${IMAGE_SET[@]}" >"${LOGS}/helm-install.log" 2>&1 \
    || fail "helm install failed" helm-install.log
replicas_ready() {
    [[ "$(k -n admitkit-system get deployment admitkit-webhook -o jsonpath='{.status.readyReplicas}')" == 2 ]]
}
until_ok 180 replicas_ready \
    || fail "admitkit's replicas were not Ready in 180s: $(k -n admitkit-system get pods -o wide; k -n admitkit-system describe pods | tail -n 30)" kubelet.log
T_INSTALLED=$(now)
echo "admitkit installed: $(since "${T_UP}")"
record ready PASS "$(since "${T_UP}")" "$(k -n admitkit-system get pods --no-headers | awk '{printf "%s %s; ", $1, $2}')"

# --- walkthrough: the presets and a live mutator reach a pod -------------------
T=$(now)
k apply -f hack/examples/namespace.yaml >/dev/null
# mutated_pod name [pending]: creates a pod the preset and the Assign select
# (with pending, one no node takes, so load costs the node nothing); fails
# with 2 when the create is refused, 1 when the stored pod lacks a mutation.
mutated_pod() {
    local pod selector=""
    if [[ -n "${2:-}" ]]; then
        selector=$'  nodeSelector:\n    realnode.admitkit.io/no-such-node: "true"'
    fi
    pod=$(k create -o json -f - 2>>"${LOGS}/creates.log" <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: shop
  labels:
    role: frontend
spec:
${selector}
  containers:
  - name: web
    image: ${PAUSE_IMAGE}
    imagePullPolicy: Never
YAML
    ) || return 2
    grep -q '"DB_PORT"' <<<"${pod}" && grep -q '"runAsNonRoot": true' <<<"${pod}" && grep -q '"/cache"' <<<"${pod}"
}
# The check can fail: before the preset and the Assign exist, a pod comes
# back without them.
unmutated=0
mutated_pod before-presets pending || unmutated=$?
k -n shop delete pod before-presets --ignore-not-found --wait=false >/dev/null
k apply -n shop -f hack/examples/podpreset.yaml >/dev/null
k apply -f hack/examples/live-assign.yaml >/dev/null
# A mutator is enforced once each replica has read it into its cache.
walk_ok() {
    k -n shop delete pod website --ignore-not-found --wait=true >/dev/null
    mutated_pod website
}
if [[ "${unmutated}" == 1 ]] && until_ok 60 walk_ok && k -n shop wait --for=condition=Ready pod/website --timeout=120s >/dev/null; then
    record walkthrough PASS "$(since "${T}")" "DB_PORT, /cache and runAsNonRoot on shop/website, which runs (a pod created before them had none)"
else
    record walkthrough FAIL "$(since "${T}")" "before the presets: ${unmutated} (want 1); $(k -n shop get pod website -o yaml 2>&1 | tail -n 40)"
fi

# load name action...: creates pods in shop one after another while the
# action runs; prints "creates=N refused=R half=M after=A action=C" (half: stored pods
# missing a mutation; after: a create's result once the action is done, 0
# when whole; action: the action's exit status).
load() {
    local name=$1 i refused=0 half=0 out
    shift
    "$@" &
    local action=$!
    # At least LOAD_PODS creates, and on until the action is done (at most
    # ten times as many), so the load covers all of it.
    for ((i = 0; i < LOAD_PODS * 10; i++)); do
        if ((i >= LOAD_PODS)) && ! kill -0 "${action}" 2>/dev/null; then
            break
        fi
        out=0
        mutated_pod "${name}-${i}" pending || out=$?
        case "${out}" in
        1) half=$((half + 1)) ;;
        2) refused=$((refused + 1)) ;;
        esac
    done
    local acted=0
    wait "${action}" || acted=$?
    # After the action every create must be whole again.
    local after=0
    mutated_pod "${name}-after" pending || after=$?
    echo "creates=${i} refused=${refused} half=${half} after=${after} action=${acted}"
}

# --- failover: a replica's pod deleted under load ----------------------------
T=$(now)
victim=$(k -n admitkit-system get pods -l app.kubernetes.io/name=admitkit-webhook -o jsonpath='{.items[0].metadata.name}')
delete_victim() { sleep 1; k -n admitkit-system delete pod "${victim}" --wait=true >/dev/null; }
res=$(load failover delete_victim)
k -n shop delete pods -l role=frontend --field-selector metadata.name!=website --wait=false >/dev/null
# Creates may be refused while the apiserver still calls the deleted pod;
# none may be stored half-mutated, and they must recover.
if [[ "${res}" == *" half=0 after=0 action=0" ]] && until_ok 120 replicas_ready; then
    record failover PASS "$(since "${T}")" "${res}, ${victim} deleted, 2 replicas Ready again"
else
    record failover FAIL "$(since "${T}")" "${res}"
fi

# --- upgrade: helm upgrade, as the README says, with a value that changes
# the pod template, so both replicas are replaced under load -----------------
T=$(now)
upgrade() {
    sleep 1
    k apply --server-side --force-conflicts -f hack/chart/admitkit/crds/ >/dev/null
    helm upgrade admitkit hack/chart/admitkit --namespace admitkit-system --reset-then-reuse-values \
        --set resources.requests.cpu=101m >"${LOGS}/helm-upgrade.log" 2>&1
    k -n admitkit-system rollout status deployment/admitkit-webhook --timeout=180s >/dev/null
}
# The replicas' pods but those terminating.
replica_pods() {
    k -n admitkit-system get pods -l app.kubernetes.io/name=admitkit-webhook --no-headers \
        -o custom-columns=NAME:.metadata.name,DELETED:.metadata.deletionTimestamp | awk '$2 == "<none>" { print $1 }'
}
before=$(replica_pods | tr '\n' ' ')
res=$(load upgrade upgrade)
k -n shop delete pods -l role=frontend --field-selector metadata.name!=website --wait=false >/dev/null
# Every replica replaced: no pod of before is still there.
replaced=yes
for pod in $(replica_pods); do
    [[ " ${before} " == *" ${pod} "* ]] && replaced=no
done
if [[ "${res}" == *" refused=0 half=0 after=0 action=0" && "${replaced}" == yes ]] && replicas_ready; then
    record upgrade PASS "$(since "${T}")" "${res}, replicas replaced"
else
    record upgrade FAIL "$(since "${T}")" "${res}, replicas replaced: ${replaced}"
fi

# --- uninstall: helm removes the webhook configurations and the server; the
# CRDs and the objects in them stay -------------------------------------------
T=$(now)
helm uninstall admitkit --namespace admitkit-system --wait >"${LOGS}/helm-uninstall.log" 2>&1 \
    || fail "helm uninstall failed" helm-uninstall.log
writable=$(
    k run after-uninstall -n default --image="${PAUSE_IMAGE}" --image-pull-policy=Never --restart=Never >/dev/null \
        && k create configmap after-uninstall -n default --from-literal=ok=1 >/dev/null && echo yes
) || true
if [[ "${writable}" == yes ]]; then
    record uninstall PASS "$(since "${T}")" "a pod and a ConfigMap created after"
else
    record uninstall FAIL "$(since "${T}")" "a pod or ConfigMap create was refused"
fi

echo
echo "Results (bring-up $(awk -v a="${T_BUILT}" -v b="${T_UP}" 'BEGIN { printf "%.1fs", b - a }'), install $(awk -v a="${T_UP}" -v b="${T_INSTALLED}" 'BEGIN { printf "%.1fs", b - a }'), total $(since "${T_START}")):"
printf '%s\n' "${RESULTS[@]}"
if printf '%s\n' "${RESULTS[@]}" | grep -q ' FAIL '; then
    exit 1
fi
