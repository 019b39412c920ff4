#!/usr/bin/env bash
# Builds and starts admitkit's kube-apiserver on 127.0.0.1 with PodPreset,
# NodeRestriction and LocationMutator enabled, an embedded etcd, a token file
# with an admin and a node identity, and kubeconfigs for both, and Kubernetes'
# own kube-controller-manager beside it, as in every cluster (namespace
# deletion, garbage collection, the admin/edit/view role aggregation); then,
# once both serve and the controller manager runs the controllers the
# walkthrough needs, prints kubectl commands to try against hack/examples/,
# which can be pasted all at once. Ctrl-C stops it; running
# the script again restarts it on the same data.
#
# With HA=1 it runs what a highly available control plane runs, on this one
# machine: a three-member etcd cluster (admitkit-etcd, client ports
# ETCD_PORT, +2, +4) and two apiservers on it, the first on SECURE_PORT
# (admin.kubeconfig) and the second on SECURE_PORT+1 (admin-2.kubeconfig),
# each with its own identity, sharing the service-account key.
#
# With WEBHOOK=1 it runs what a cluster whose kube-apiserver cannot be
# rebuilt runs: upstream's own kube-apiserver (test/cmd/kube-apiserver,
# nothing of admitkit, its own NodeRestriction on) on one admitkit-etcd
# member, kube-controller-manager, and the admitkit webhook server
# (`admitkit webhook`, plugin/cmd/admitkit) as a process on 127.0.0.1:WEBHOOK_PORT,
# installed from hack/manifests: everything but the server's Deployment and
# Service (no kubelet runs here), and the webhook configurations with
# `url: https://127.0.0.1:WEBHOOK_PORT/...` in place of the Service.
#
# Environment:
#   DATA_DIR      data directory (default _output/local-up)
#   SECURE_PORT   port to serve on (default 6443)
#   KCM_PORT      kube-controller-manager's secure port (default 10257)
#   NODE_NAME     the node identity (default node-1)
#   SKIP_BUILD    set to reuse the binaries in _output/bin
#   HA            set to 1 for three etcd members and two apiservers
#   ETCD_PORT     with HA=1 or WEBHOOK=1, the first etcd member's client port (default 2379)
#   WEBHOOK       set to 1 for the stock kube-apiserver and the webhook server
#   WEBHOOK_PORT  with WEBHOOK=1, the webhook server's port (default 9443)
#   TAG_PROVIDER_PORT  the walkthrough's tag-to-digest provider (default 8943)
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
export PATH="${PATH}:/usr/local/go/bin"

WEBHOOK=${WEBHOOK:-}
WEBHOOK_PORT=${WEBHOOK_PORT:-9443}
if [[ -n "${WEBHOOK}" && -n "${HA:-}" ]]; then
    echo "HA=1 and WEBHOOK=1 cannot be combined" >&2
    exit 1
fi
# The two modes store different things (settings.k8s.io in the apiserver's
# own storage, or as custom resources): each has its own data.
DATA_DIR=${DATA_DIR:-_output/local-up${WEBHOOK:+-webhook}}
SECURE_PORT=${SECURE_PORT:-6443}
NODE_NAME=${NODE_NAME:-node-1}
HA=${HA:-}
ETCD_PORT=${ETCD_PORT:-2379}
BIN_DIR="${ROOT}/_output/bin"
KCM="${BIN_DIR}/kube-controller-manager"
KCM_PORT=${KCM_PORT:-10257}
mkdir -p "${DATA_DIR}" "${BIN_DIR}"
DATA_DIR=$(cd "${DATA_DIR}" && pwd)

if [[ -z "${SKIP_BUILD:-}" && -n "${WEBHOOK}" ]]; then
    echo "Building kube-apiserver, admitkit, admitkit-etcd, kube-controller-manager and kubectl into ${BIN_DIR} (a few minutes the first time)..."
    go build -o "${BIN_DIR}/admitkit" ./plugin/cmd/admitkit
    (cd test && go build -o "${BIN_DIR}/kube-apiserver" ./cmd/kube-apiserver \
        && go build -o "${BIN_DIR}/admitkit-etcd" ./cmd/admitkit-etcd \
        && go build -o "${BIN_DIR}/admitkit-tagprovider" ./cmd/admitkit-tagprovider \
        && go build -o "${BIN_DIR}/kubectl" k8s.io/kubernetes/cmd/kubectl \
        && go build -o "${KCM}" k8s.io/kubernetes/cmd/kube-controller-manager)
elif [[ -z "${SKIP_BUILD:-}" ]]; then
    echo "Building admitkit-apiserver and kubectl into ${BIN_DIR} (a few minutes the first time)..."
    (cd test && go build -o "${BIN_DIR}/admitkit-apiserver" ./cmd/admitkit-apiserver \
        && go build -o "${BIN_DIR}/kubectl" k8s.io/kubernetes/cmd/kubectl \
        && go build -o "${KCM}" k8s.io/kubernetes/cmd/kube-controller-manager \
        && go build -o "${BIN_DIR}/admitkit-tagprovider" ./cmd/admitkit-tagprovider)
    if [[ -n "${HA}" ]]; then
        (cd test && go build -o "${BIN_DIR}/admitkit-etcd" ./cmd/admitkit-etcd)
    fi
fi
APISERVER="${BIN_DIR}/admitkit-apiserver"
KUBECTL="${BIN_DIR}/kubectl"

# Tokens are made once and kept, so kubeconfigs stay valid across restarts.
TOKENS="${DATA_DIR}/tokens.csv"
if [[ ! -f "${TOKENS}" ]]; then
    token() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
    umask 077
    {
        echo "$(token),admin,admin,system:masters"
        echo "$(token),system:node:${NODE_NAME},node-${NODE_NAME},system:nodes"
    } > "${TOKENS}"
    umask 022
fi
ADMIN_TOKEN=$(sed -n 1p "${TOKENS}" | cut -d, -f1)
NODE_TOKEN=$(grep ",system:node:${NODE_NAME}," "${TOKENS}" | cut -d, -f1)
if [[ -z "${NODE_TOKEN}" ]]; then
    echo "${TOKENS} has no identity for node ${NODE_NAME}; remove the file to start over" >&2
    exit 1
fi
# Added on its own: data directories from before the controller manager
# have a token file without it.
if ! grep -q ",system:kube-controller-manager," "${TOKENS}"; then
    echo "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'),system:kube-controller-manager,kube-controller-manager" >> "${TOKENS}"
fi
KCM_TOKEN=$(grep ",system:kube-controller-manager," "${TOKENS}" | cut -d, -f1)
# The webhook server signs in as the service account hack/manifests gives
# it, so that it runs with the manifests' RBAC and nothing more.
WEBHOOK_USER=system:serviceaccount:admitkit-system:admitkit-webhook
if [[ -n "${WEBHOOK}" ]] && ! grep -q ",${WEBHOOK_USER}," "${TOKENS}"; then
    echo "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'),${WEBHOOK_USER},admitkit-webhook" >> "${TOKENS}"
fi

write_kubeconfig() { # file user token port certificate-authority
    cat > "$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: admitkit
  cluster:
    server: https://127.0.0.1:$4
    certificate-authority: $5
users:
- name: $2
  user:
    token: $3
contexts:
- name: $2
  context:
    cluster: admitkit
    user: $2
current-context: $2
KUBECONFIG
    chmod 600 "$1"
}
ADMIN_KUBECONFIG="${DATA_DIR}/admin.kubeconfig"
NODE_KUBECONFIG="${DATA_DIR}/${NODE_NAME}.kubeconfig"
write_kubeconfig "${ADMIN_KUBECONFIG}" admin "${ADMIN_TOKEN}" "${SECURE_PORT}" "${DATA_DIR}/certs/apiserver.crt"
write_kubeconfig "${NODE_KUBECONFIG}" "system:node:${NODE_NAME}" "${NODE_TOKEN}" "${SECURE_PORT}" "${DATA_DIR}/certs/apiserver.crt"
KCM_KUBECONFIG="${DATA_DIR}/kube-controller-manager.kubeconfig"
write_kubeconfig "${KCM_KUBECONFIG}" system:kube-controller-manager "${KCM_TOKEN}" "${SECURE_PORT}" "${DATA_DIR}/certs/apiserver.crt"
if [[ -n "${WEBHOOK}" ]]; then
    WEBHOOK_KUBECONFIG="${DATA_DIR}/admitkit-webhook.kubeconfig"
    write_kubeconfig "${WEBHOOK_KUBECONFIG}" "${WEBHOOK_USER}" "$(grep ",${WEBHOOK_USER}," "${TOKENS}" | cut -d, -f1)" "${SECURE_PORT}" "${DATA_DIR}/certs/apiserver.crt"
fi

# Everything started here is stopped on exit: the controller manager, the
# apiservers, then etcd.
KCM_PIDS=()
WEBHOOK_PIDS=()
PROVIDER_PIDS=()
APISERVER_PIDS=()
ETCD_PIDS=()
stop_all() { # pid...
    local pid
    for pid in "$@"; do
        if kill -0 "${pid}" 2>/dev/null; then
            echo "Stopping pid ${pid}..."
            kill -TERM "${pid}" 2>/dev/null || true
        fi
    done
    for pid in "$@"; do
        wait "${pid}" 2>/dev/null || true
    done
}
stop() {
    trap - INT TERM EXIT
    echo
    stop_all ${KCM_PIDS[@]+"${KCM_PIDS[@]}"}
    stop_all ${WEBHOOK_PIDS[@]+"${WEBHOOK_PIDS[@]}"}
    stop_all ${PROVIDER_PIDS[@]+"${PROVIDER_PIDS[@]}"}
    stop_all ${APISERVER_PIDS[@]+"${APISERVER_PIDS[@]}"}
    stop_all ${ETCD_PIDS[@]+"${ETCD_PIDS[@]}"}
    echo "Stopped. Run hack/local-up.sh again to restart on the same data (${DATA_DIR})."
}
trap stop INT TERM EXIT

# wait_ready waits until apiserver pid $1 answers /readyz through
# kubeconfig $2; its log is $3.
wait_ready() {
    for _ in $(seq 1 120); do
        if ! kill -0 "$1" 2>/dev/null; then
            echo "admitkit-apiserver exited during start-up; the end of $3:" >&2
            tail -n 20 "$3" >&2
            exit 1
        fi
        if "${KUBECTL}" --kubeconfig="$2" get --raw /readyz >/dev/null 2>&1; then
            return
        fi
        sleep 1
    done
    echo "admitkit-apiserver was not ready after 120s; see $3" >&2
    exit 1
}

# start_stock starts what WEBHOOK=1 runs in place of admitkit-apiserver: one
# admitkit-etcd member and upstream's kube-apiserver on it, with the same
# identities and audit policy, and its own NodeRestriction.
start_stock() {
    "${BIN_DIR}/admitkit-etcd" --data-dir="${DATA_DIR}" --members=1 --member=1 --port="${ETCD_PORT}" \
        >"${DATA_DIR}/etcd-1.out" 2>&1 &
    ETCD_PIDS+=($!)
    # upstream's kube-apiserver takes its service-account key from a file,
    # which kube-controller-manager signs tokens with too.
    local sa_key="${DATA_DIR}/service-account.key"
    # Made with Go's own crypto, so that WEBHOOK=1 needs nothing but Go.
    if [[ ! -s "${sa_key}" ]]; then
        local gen="${DATA_DIR}/service-account-key"
        mkdir -p "${gen}"
        cat >"${gen}/main.go" <<'GO'
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
        (umask 077 && cd "${gen}" && GOFLAGS= GOWORK=off go run main.go >"${sa_key}.tmp") && mv "${sa_key}.tmp" "${sa_key}"
    fi
    # The flags of admitkit-apiserver, but what only it understands.
    local flags=() flag
    for flag in "${SERVER_FLAGS[@]}"; do
        case "${flag}" in
        --runtime-config=* | --enable-admission-plugins=* | --admission-control-config-file=*) ;;
        *) flags+=("${flag}") ;;
        esac
    done
    echo "Starting upstream's kube-apiserver on https://127.0.0.1:${SECURE_PORT} (etcd data in ${DATA_DIR}/etcd-1, log in ${LOG})..."
    "${BIN_DIR}/kube-apiserver" --secure-port="${SECURE_PORT}" \
        --etcd-servers="http://127.0.0.1:${ETCD_PORT}" --cert-dir="${DATA_DIR}/certs" \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-account-key-file="${sa_key}" --service-account-signing-key-file="${sa_key}" \
        "${flags[@]}" --enable-admission-plugins=NodeRestriction \
        --audit-log-path="${DATA_DIR}/audit.log" >"${LOG}" 2>&1 &
    APISERVER_PIDS+=($!)
    wait_ready "${APISERVER_PIDS[0]}" "${ADMIN_KUBECONFIG}" "${LOG}"
}

# webhook_manifest prints a webhook configuration of hack/manifests with
# each clientConfig's service replaced by the url of the local server.
webhook_manifest() {
    awk -v base="https://127.0.0.1:${WEBHOOK_PORT}" '
        /^    service:$/ { inservice = 1; next }
        inservice && /^      (name|namespace|port):/ { next }
        inservice && /^      path:/ { print "    url: " base $2; inservice = 0; next }
        { print }
    ' "$1"
}

# install_webhook applies hack/manifests but the server's Deployment, starts
# the server as a process, and, once it is ready, applies the webhook
# configurations pointing at it; the server writes their caBundle.
install_webhook() {
    local f
    for f in hack/manifests/*.yaml; do
        case "$(basename "${f}")" in
        deployment.yaml | *-webhooks.yaml) ;;
        *) "${KUBECTL}" --kubeconfig="${ADMIN_KUBECONFIG}" apply -f "${f}" >/dev/null ;;
        esac
    done
    "${KUBECTL}" --kubeconfig="${ADMIN_KUBECONFIG}" wait --for=condition=Established --timeout=60s \
        crd/podpresets.settings.k8s.io crd/clusterpodpresets.settings.k8s.io crd/assign.mutations.gatekeeper.sh >/dev/null
    # The server's NodeRestriction GETs the objects it needs, as
    # hack/manifests configures it: the manifests' RBAC, which it signs in
    # with, lets it watch no pods or Nodes.
    local config="${DATA_DIR}/webhook-admission-config.yaml"
    sed 's/^    lookups: Informers$/    lookups: Requests/' hack/examples/admission-config.yaml > "${config}"
    if ! grep -q '^    lookups: Requests$' "${config}"; then
        echo "hack/examples/admission-config.yaml no longer sets NodeRestriction's lookups: Informers" >&2
        exit 1
    fi
    local log="${DATA_DIR}/admitkit-webhook.log"
    echo "Starting admitkit webhook on https://127.0.0.1:${WEBHOOK_PORT} (log in ${log})..."
    "${BIN_DIR}/admitkit" webhook --kubeconfig="${WEBHOOK_KUBECONFIG}" \
        --bind-address=127.0.0.1 --secure-port="${WEBHOOK_PORT}" \
        --admission-control-config-file="${config}" \
        --plugins=PodPreset,LocationMutator,NodeRestriction,SettingsDefaults,SettingsValidation \
        --identity=admitkit-webhook-1 \
        --cert-secret=admitkit-system/admitkit-webhook-cert --cert-ip-addresses=127.0.0.1 \
        --mutating-webhook-configuration=admitkit-mutating --validating-webhook-configuration=admitkit-validating \
        >"${log}" 2>&1 &
    WEBHOOK_PIDS+=($!)
    for _ in $(seq 1 60); do
        if ! kill -0 "${WEBHOOK_PIDS[0]}" 2>/dev/null; then
            echo "admitkit webhook exited during start-up; the end of ${log}:" >&2
            tail -n 20 "${log}" >&2
            exit 1
        fi
        if "${KUBECTL}" --server="https://127.0.0.1:${WEBHOOK_PORT}" --insecure-skip-tls-verify get --raw /readyz >/dev/null 2>&1; then
            break
        fi
        sleep 1
    done
    webhook_manifest hack/manifests/mutating-webhooks.yaml | "${KUBECTL}" --kubeconfig="${ADMIN_KUBECONFIG}" apply -f - >/dev/null
    webhook_manifest hack/manifests/validating-webhooks.yaml | "${KUBECTL}" --kubeconfig="${ADMIN_KUBECONFIG}" apply -f - >/dev/null
    # The server writes the CA bundle as soon as the configurations exist.
    for _ in $(seq 1 30); do
        if [[ -n "$("${KUBECTL}" --kubeconfig="${ADMIN_KUBECONFIG}" get validatingwebhookconfiguration admitkit-validating -o jsonpath='{.webhooks[0].clientConfig.caBundle}')" ]]; then
            return
        fi
        sleep 1
    done
    echo "admitkit-webhook did not write the CA bundle into its webhook configurations in 30s; see ${log}" >&2
    exit 1
}

# wait_controllers waits until kube-controller-manager, pid $1 with log $2,
# does what the walkthrough below relies on: it serves /healthz, holds its
# leader lease (only the leader runs controllers; after a restart the
# previous run's lease must first expire), has given the default namespace
# its service account (pods are refused without one), and has aggregated
# the PodPreset roles into admin.
wait_controllers() {
    # Its serving certificate is self-signed; /healthz needs no
    # permission, and its own token keeps kubectl from prompting for one.
    local step="serving /healthz" healthz=(
        "${KUBECTL}" --kubeconfig=/dev/null --token="${KCM_TOKEN}" --server="https://127.0.0.1:${KCM_PORT}"
        --insecure-skip-tls-verify=true get --raw /healthz)
    for _ in $(seq 1 120); do
        if ! kill -0 "$1" 2>/dev/null; then
            echo "kube-controller-manager exited during start-up; the end of $2:" >&2
            tail -n 20 "$2" >&2
            exit 1
        fi
        case "${step}" in
        "serving /healthz")
            "${healthz[@]}" </dev/null >/dev/null 2>&1 && step="holding its leader lease" && continue ;;
        "holding its leader lease")
            grep -q 'Successfully acquired lease" lock="kube-system/kube-controller-manager"' "$2" \
                && step="creating the default service account" && continue ;;
        "creating the default service account")
            "${KUBECTL}" --kubeconfig="${ADMIN_KUBECONFIG}" get serviceaccount default -n default >/dev/null 2>&1 \
                && step="aggregating the admin role" && continue ;;
        "aggregating the admin role")
            if "${KUBECTL}" --kubeconfig="${ADMIN_KUBECONFIG}" get clusterrole admin \
                -o jsonpath='{.rules[*].resources}' 2>/dev/null | grep -qw podpresets; then
                return
            fi ;;
        esac
        sleep 1
    done
    echo "kube-controller-manager was not ${step} after 120s; see $2" >&2
    exit 1
}

SERVER_FLAGS=(
    --bind-address=127.0.0.1
    --advertise-address=127.0.0.1
    --endpoint-reconciler-type=none
    --service-cluster-ip-range=10.0.0.0/24
    --token-auth-file="${TOKENS}"
    --authorization-mode=Node,RBAC
    --runtime-config=settings.k8s.io/v1alpha1=true
    --enable-admission-plugins=PodPreset,NodeRestriction,LocationMutator
    --admission-control-config-file=hack/examples/admission-config.yaml
    --audit-policy-file=hack/examples/audit-policy.yaml
    --audit-log-maxsize=100
    --audit-log-maxbackup=1
)

if [[ -n "${HA}" ]]; then
    ETCD_SERVERS=""
    for member in 1 2 3; do
        "${BIN_DIR}/admitkit-etcd" --data-dir="${DATA_DIR}" --members=3 --member="${member}" --port="${ETCD_PORT}" \
            >"${DATA_DIR}/etcd-${member}.out" 2>&1 &
        ETCD_PIDS+=($!)
        ETCD_SERVERS+="${ETCD_SERVERS:+,}http://127.0.0.1:$((ETCD_PORT + 2 * (member - 1)))"
    done
    echo "Started etcd members etcd-1, etcd-2 and etcd-3 for clients at ${ETCD_SERVERS} (data and logs in ${DATA_DIR}/etcd-N)."
fi

LOG="${DATA_DIR}/apiserver.log"
if [[ -n "${WEBHOOK}" ]]; then
    start_stock
elif [[ -z "${HA}" ]]; then
    echo "Starting admitkit-apiserver on https://127.0.0.1:${SECURE_PORT} (data in ${DATA_DIR}, log in ${LOG})..."
    "${APISERVER}" --data-dir="${DATA_DIR}" --secure-port="${SECURE_PORT}" "${SERVER_FLAGS[@]}" \
        --audit-log-path="${DATA_DIR}/audit.log" >"${LOG}" 2>&1 &
    APISERVER_PIDS+=($!)
    wait_ready "${APISERVER_PIDS[0]}" "${ADMIN_KUBECONFIG}" "${LOG}"
else
    echo "Starting admitkit-apiserver on https://127.0.0.1:${SECURE_PORT} (data in ${DATA_DIR}, log in ${LOG})..."
    "${APISERVER}" --data-dir="${DATA_DIR}" --secure-port="${SECURE_PORT}" "${SERVER_FLAGS[@]}" \
        --etcd-servers="${ETCD_SERVERS}" --apiserver-identity=admitkit-apiserver-1 \
        --audit-log-path="${DATA_DIR}/audit.log" >"${LOG}" 2>&1 &
    APISERVER_PIDS+=($!)

    # The second has its own data (serving certificate) and identity, and
    # must accept the service-account tokens the first issues: it takes the
    # key the first generates as it starts.
    SECOND_PORT=$((SECURE_PORT + 1))
    SECOND_DIR="${DATA_DIR}/apiserver-2"
    SECOND_LOG="${SECOND_DIR}/apiserver.log"
    SA_KEY="${DATA_DIR}/service-account.key"
    ADMIN_KUBECONFIG_2="${DATA_DIR}/admin-2.kubeconfig"
    mkdir -p "${SECOND_DIR}"
    write_kubeconfig "${ADMIN_KUBECONFIG_2}" admin "${ADMIN_TOKEN}" "${SECOND_PORT}" "${SECOND_DIR}/certs/apiserver.crt"
    for _ in $(seq 1 60); do
        [[ -s "${SA_KEY}" ]] && break
        sleep 1
    done
    echo "Starting the second admitkit-apiserver on https://127.0.0.1:${SECOND_PORT} (data in ${SECOND_DIR}, log in ${SECOND_LOG})..."
    "${APISERVER}" --data-dir="${SECOND_DIR}" --secure-port="${SECOND_PORT}" "${SERVER_FLAGS[@]}" \
        --etcd-servers="${ETCD_SERVERS}" --apiserver-identity=admitkit-apiserver-2 \
        --audit-log-path="${SECOND_DIR}/audit.log" \
        --service-account-key-file="${SA_KEY}" --service-account-signing-key-file="${SA_KEY}" \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        >"${SECOND_LOG}" 2>&1 &
    APISERVER_PIDS+=($!)
    wait_ready "${APISERVER_PIDS[0]}" "${ADMIN_KUBECONFIG}" "${LOG}"
    wait_ready "${APISERVER_PIDS[1]}" "${ADMIN_KUBECONFIG_2}" "${SECOND_LOG}"
fi

# Kubernetes' own kube-controller-manager, with every controller it runs by
# default, each under its own service account as kubeadm sets it up. No
# kubelet runs here, so the node lifecycle controller marks Nodes
# unreachable after a minute, as it would in any cluster.
KCM_LOG="${DATA_DIR}/kube-controller-manager.log"
echo "Starting kube-controller-manager (log in ${KCM_LOG})..."
"${KCM}" --kubeconfig="${KCM_KUBECONFIG}" \
    --bind-address=127.0.0.1 --secure-port="${KCM_PORT}" \
    --use-service-account-credentials=true \
    --service-account-private-key-file="${DATA_DIR}/service-account.key" \
    --root-ca-file="${DATA_DIR}/certs/apiserver.crt" \
    >"${KCM_LOG}" 2>&1 &
KCM_PIDS+=($!)
if [[ -n "${WEBHOOK}" ]]; then
    install_webhook
fi
wait_controllers "${KCM_PIDS[0]}" "${KCM_LOG}"

# The external data walkthrough: a tag-to-digest provider in Gatekeeper's
# wire format on 127.0.0.1, which writes the Provider object naming it.
TAG_PROVIDER_PORT=${TAG_PROVIDER_PORT:-8943}
TAG_PROVIDER_FILE="${DATA_DIR}/tag-provider.yaml"
TAG_PROVIDER_LOG="${DATA_DIR}/tag-provider.log"
rm -f "${TAG_PROVIDER_FILE}"
echo "Starting the tag-to-digest provider on https://127.0.0.1:${TAG_PROVIDER_PORT} (log in ${TAG_PROVIDER_LOG})..."
"${BIN_DIR}/admitkit-tagprovider" --listen="127.0.0.1:${TAG_PROVIDER_PORT}" --provider-file="${TAG_PROVIDER_FILE}" \
    --digest="nginx:1.27=nginx@sha256:6784fb0834aa7dbbe12e3d7471e69c290df3e6ba810dc38b34ae33d3c1c05f7d" \
    --digest="redis:7=redis@sha256:f8f0ba6a4d1a1d2b9e1d4c2a9f5e8b3c7d6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c" \
    >"${TAG_PROVIDER_LOG}" 2>&1 &
PROVIDER_PIDS+=($!)
for _ in $(seq 50); do
    [[ -s "${TAG_PROVIDER_FILE}" ]] && break
    sleep 0.1
done
if [[ ! -s "${TAG_PROVIDER_FILE}" ]]; then
    echo "the tag-to-digest provider did not start; see ${TAG_PROVIDER_LOG}" >&2
    exit 1
fi

K="${KUBECTL#"${ROOT}/"} --kubeconfig=${ADMIN_KUBECONFIG#"${ROOT}/"}"
READY="admitkit-apiserver is ready"
SERVED="settings.k8s.io is served next to the built-in APIs (--runtime-config turned it on)"
if [[ -n "${WEBHOOK}" ]]; then
    READY="Upstream's kube-apiserver is ready, with admitkit's webhooks at https://127.0.0.1:${WEBHOOK_PORT}"
    SERVED="settings.k8s.io is served as CustomResourceDefinitions (hack/manifests)"
fi
N="${KUBECTL#"${ROOT}/"} --kubeconfig=${NODE_KUBECONFIG#"${ROOT}/"}"
# With WEBHOOK=1 the NodeRestriction webhook is sent only the requests of
# the accounts its matchCondition names, and hack/manifests ships it naming
# none: the walkthrough names the node daemon's there too, as README
# "Clusters you cannot rebuild" asks of whoever lists an account.
DAEMON_WEBHOOK_STEP=""
if [[ -n "${WEBHOOK}" ]]; then
    MATCH_PATCH='[{"op":"test","path":"/webhooks/2/name","value":"noderestriction.admission.admitkit.io"},{"op":"replace","path":"/webhooks/2/matchConditions/0/expression","value":"request.userInfo.username in [\"system:serviceaccount:node-agents:hardware-labeller\"]"}]'
    DAEMON_WEBHOOK_STEP="  # (WEBHOOK=1) the NodeRestriction webhook's matchCondition names the account too
  ${K} patch validatingwebhookconfiguration admitkit-validating --type=json -p '${MATCH_PATCH}'
"
fi
AUDIT_LOG="${DATA_DIR#"${ROOT}/"}/audit.log"
cat <<EOF

${READY}. From ${ROOT}, try:

  # ${SERVED}
  ${K} api-resources --api-group=settings.k8s.io
  ${K} explain podpresets.spec

  # a namespace (the LocationMutator labels it managed-by=admitkit), two presets, a pod
  ${K} apply -f hack/examples/namespace.yaml
  ${K} get namespace shop --show-labels
  # (kube-controller-manager gives the new namespace the service account its pods run as)
  ${K} wait --for=create serviceaccount/default -n shop --timeout=30s
  ${K} apply -n shop -f hack/examples/podpreset.yaml
  ${K} apply -f hack/examples/clusterpodpreset.yaml
  ${K} get podpresets -n shop
  ${K} get clusterpodpresets
  ${K} apply -f hack/examples/pod.yaml
  ${K} get pod website -n shop -o jsonpath='{.metadata.annotations}{"\n"}{range .spec.containers[*]}{.name}: {.imagePullPolicy} {.env}{"\n"}{end}'

  # a pod that conflicts with a preset is admitted without presets, with a warning
  ${K} apply -f hack/examples/conflicting-pod.yaml

  # a preset in Warn mode changes no pod: kubectl prints what it would set, and the
  # audit log (every write's metadata: hack/examples/audit-policy.yaml) records it
  # (the key's prefix is the plugin's domain in-process, the webhook's name with WEBHOOK=1)...
  ${K} apply -n shop -f hack/examples/podpreset-warn.yaml
  ${K} run trial -n shop --image=nginx:1.27 --labels=role=frontend
  grep -o 'unenforced-presets":"[^}]*' ${AUDIT_LOG}
  # ...until it is switched to Enforce
  ${K} patch podpreset tracing -n shop --type=merge -p '{"spec":{"mode":"Enforce"}}'
  ${K} run trial-2 -n shop --image=nginx:1.27 --labels=role=frontend --dry-run=server -o jsonpath='{.spec.containers[0].env}{"\n"}'

  # kube-controller-manager aggregates preset access into the admin role...
  ${K} create rolebinding shop-admin -n shop --clusterrole=admin --user=shop-admin
  ${K} auth can-i create podpresets -n shop --as=shop-admin
  # ...and deletes a namespace with everything in it, presets included
  ${K} create namespace scratch
  ${K} create -n scratch -f hack/examples/podpreset.yaml
  ${K} delete namespace scratch

  # LocationMutator mutators from the API (watchMutators): Gatekeeper's own kinds, live
  ${K} get crd assign.mutations.gatekeeper.sh assignmetadata.mutations.gatekeeper.sh modifyset.mutations.gatekeeper.sh assignimage.mutations.gatekeeper.sh
  ${K} apply -f hack/examples/live-assign.yaml
  ${K} run probe -n shop --image=nginx:1.27 --dry-run=server -o jsonpath='{.spec.containers[0].securityContext}{"\n"}'
  ${K} patch assign shop-non-root --type=merge -p '{"spec":{"parameters":{"assign":{"value":false}}}}'
  ${K} run probe -n shop --image=nginx:1.27 --dry-run=server -o jsonpath='{.spec.containers[0].securityContext}{"\n"}'
  ${K} get assign shop-non-root -o jsonpath='{.status.byPod}{"\n"}'
  ${K} delete assign shop-non-root
  ${K} run probe -n shop --image=nginx:1.27 --dry-run=server -o jsonpath='{.spec.containers[0].securityContext}{"\n"}'
  # ...and a broken one is refused with 422 Invalid, naming spec.location
  ${K} apply -f hack/examples/live-assign-broken.yaml

  # External data: Gatekeeper's tag-to-digest Assign and its Provider, unchanged; the
  # provider is the one local-up started on 127.0.0.1:${TAG_PROVIDER_PORT}
  ${K} apply -f ${TAG_PROVIDER_FILE#"${ROOT}/"}
  ${K} apply -f hack/examples/tag-to-digest.yaml
  ${K} run pinned -n shop --image=nginx:1.27 --dry-run=server -o jsonpath='{.spec.containers[0].image}{"\n"}'
  # a tag the provider does not know is refused (failurePolicy: Fail)
  ${K} run unpinned -n shop --image=busybox:1.36 --dry-run=server
  ${K} delete -f hack/examples/tag-to-digest.yaml

  # NodeRestriction, as ${NODE_NAME}: it registers itself and sets its own label...
  ${N} apply -f hack/examples/node.yaml
  ${N} label node ${NODE_NAME} example.com/rack=r1
  # ...and is refused these two (Forbidden)
  ${N} label node ${NODE_NAME} node-restriction.kubernetes.io/trusted=true
  ${N} label node ${NODE_NAME} node-role.kubernetes.io/control-plane=

  # A node daemon (README "Node daemons"): hack/examples/node-daemon.yaml's DaemonSet runs
  # as node-agents/hardware-labeller, whose RBAC may patch every Node; the admission
  # configuration lists it in nodeScopedServiceAccounts, which holds it to its pod's node
${DAEMON_WEBHOOK_STEP}  ${K} apply -f hack/examples/node-daemon.yaml -f hack/examples/node-2.yaml
  # its pod on node-1 (no scheduler runs here, so it is created bound), and the token the
  # kubelet would mount into it: bound to the pod, it names node-1
  ${K} apply -f hack/examples/node-daemon-pod.yaml
  LABELLER_TOKEN=\$(${K} create token hardware-labeller -n node-agents --bound-object-kind Pod --bound-object-name hardware-labeller-node-1)
  ${K} --token="\${LABELLER_TOKEN}" auth whoami | grep -E 'Username|node-name'
  # it labels its own node under its allowed prefix (node/node-1 labeled)...
  ${K} --token="\${LABELLER_TOKEN}" label node node-1 hardware.example.k8s.io/gpu=true
  # ...and is refused node-2, and a kubernetes.io label on its own (Forbidden: held to node "node-1")
  ${K} --token="\${LABELLER_TOKEN}" label node node-2 hardware.example.k8s.io/gpu=true
  ${K} --token="\${LABELLER_TOKEN}" label node node-1 node-role.kubernetes.io/gpu=
  # a token bound to no pod names no node: it may ask who it is (no node-name), and may not write
  UNBOUND_TOKEN=\$(${K} create token hardware-labeller -n node-agents)
  ${K} --token="\${UNBOUND_TOKEN}" auth whoami | grep -E 'Username|node-name'
  ${K} --token="\${UNBOUND_TOKEN}" label node node-1 hardware.example.k8s.io/cpu=avx2

EOF
if [[ -n "${HA}" ]]; then
    K2="${KUBECTL#"${ROOT}/"} --kubeconfig=${ADMIN_KUBECONFIG_2#"${ROOT}/"}"
    cat <<EOF
  # HA: a second apiserver, https://127.0.0.1:${SECOND_PORT}, shares the etcd cluster
  # (${ETCD_SERVERS}). It enforces what was written through the first
  # within milliseconds: the preset created above reaches a pod created through it.
  ${K2} get podpresets -n shop
  ${K2} run probe -n shop --image=nginx --labels=role=frontend --dry-run=server -o jsonpath='{.spec.containers[0].env}{"\n"}'
  # each apiserver holds an identity lease of its own
  ${K2} get leases -n kube-system -l apiserver.kubernetes.io/identity=kube-apiserver

EOF
fi
echo "Press Ctrl-C to stop."

wait "${APISERVER_PIDS[@]}" ${WEBHOOK_PIDS[@]+"${WEBHOOK_PIDS[@]}"}
