#!/usr/bin/env bash
# Create the keys, certificates and passwords the secured deploy files read (compose
# `secrets:`, Kubernetes Secrets, systemd credentials), in deploy/secrets/ (git-ignored) or
# the directory given as the first argument:
#
#   deploy/make-secrets.sh [DIR]
#
# Idempotent: a file that exists is kept, so running it again only fills in what is missing
# (delete a file to make a new one). Nothing secret is printed or put on a command line:
# passwords are written by openssl straight to their files, and the bcrypt hash of the
# metrics password is made by Python's `bcrypt` reading that file on stdin ($PYTHON, default
# python3: the interpreter tslog is installed in has bcrypt).
#
# Made (every certificate signed by ca.pem, RSA 2048, valid 825 days):
#   ca.pem ca.key                       the deployment's CA (keep ca.key offline for real use)
#   broker-{1,2,3}.pem/.key             compose brokers: SANs broker-N, localhost, 127.0.0.1
#   k8s-broker.pem/.key                 Kubernetes brokers: *.tslog-headless.$NAMESPACE.svc...,
#                                       tslog, tslog.$NAMESPACE.svc, localhost, 127.0.0.1
#   etcd.pem/.key                       etcd: etcd, tslog-etcd, tslog-etcd-0.tslog-etcd, ...
#   client.pem/.key                     a client certificate (CN=admin) for mutual TLS
#   admin-password broker-password      SCRAM passwords of the admin (a super user), the
#   healthcheck-password                brokers' inter-broker user, the health check's user
#   metrics-password                    the password Prometheus scrapes /metrics with
#   users.txt                           sasl_bootstrap_users_file: admin, broker, healthcheck
#   metrics-web.yml                     metrics_web_config_file: TLS + bcrypt basic auth
#   admin.properties                    --command-config files (paths under /run/secrets,
#   healthcheck.properties              where compose and Kubernetes mount these files)
#
# Files are mode 0644 inside a 0700 directory: the containers (uid 10001, Prometheus' 65534)
# read them through bind mounts, other users of this host cannot reach them.
set -euo pipefail
umask 077
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/secrets}"
namespace="${NAMESPACE:-default}"
python="${PYTHON:-python3}"
mkdir -p "$out"
chmod 700 "$out"
cd "$out"

made=()
note() { made+=("$1"); }

if [[ ! -f ca.key || ! -f ca.pem ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 825 \
        -subj "/CN=tslog deployment CA" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    note ca.pem
fi

# certificate NAME SUBJECT SAN-LIST: NAME.pem and NAME.key, for TLS servers and clients alike
# (brokers present theirs to their peers too, and to etcd).
certificate() {
    local name="$1" subject="$2" sans="$3"
    [[ -f "$name.pem" && -f "$name.key" ]] && return 0
    openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" \
        -subj "$subject" 2>/dev/null
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
        "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=$sans" > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out "$name.pem" -days 825 -sha256 -extfile "$name.ext" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
    note "$name.pem"
}

for n in 1 2 3; do
    certificate "broker-$n" "/CN=broker-$n/O=tslog" "DNS:broker-$n,DNS:localhost,IP:127.0.0.1"
done
svc="$namespace.svc"
certificate k8s-broker "/CN=tslog-broker/O=tslog" \
    "DNS:*.tslog-headless.$svc.cluster.local,DNS:*.tslog-headless.$svc,DNS:tslog,DNS:tslog.$svc,DNS:tslog.$svc.cluster.local,DNS:localhost,IP:127.0.0.1"
certificate etcd "/CN=etcd/O=tslog" \
    "DNS:etcd,DNS:tslog-etcd,DNS:tslog-etcd-0.tslog-etcd,DNS:tslog-etcd.$svc,DNS:tslog-etcd.$svc.cluster.local,DNS:localhost,IP:127.0.0.1"
certificate client "/CN=admin/O=tslog" "DNS:admin"

for user in admin broker healthcheck metrics; do
    if [[ ! -f "$user-password" ]]; then
        # 32 random bytes, base64 without /+= (safe in name:password lines and URLs)
        openssl rand -base64 48 | tr -d '/+=\n' | head -c 40 > "$user-password"
        note "$user-password"
    fi
done

if [[ ! -f users.txt ]]; then
    {
        echo "# sasl_bootstrap_users_file: name:password, created at the broker's first start"
        for user in admin broker healthcheck; do
            printf '%s:%s\n' "$user" "$(cat "$user-password")"
        done
    } > users.txt
    note users.txt
fi

if [[ ! -f metrics-web.yml ]]; then
    hash="$("$python" -c 'import sys, bcrypt
print(bcrypt.hashpw(sys.stdin.readline().rstrip("\n").encode(), bcrypt.gensalt()).decode())' \
        < metrics-password)"
    cat > metrics-web.yml <<YAML
# metrics_web_config_file (Prometheus exporter-toolkit format): /metrics over TLS with the
# broker's own certificate, basic auth for the user prometheus (bcrypt hash of
# metrics-password). Paths are relative to this file.
tls_server_config:
  cert_file: broker.pem
  key_file: broker.key
  min_version: TLS12
basic_auth_users:
  prometheus: $hash
YAML
    note metrics-web.yml
fi

for user in admin healthcheck; do
    if [[ ! -f "$user.properties" ]]; then
        cat > "$user.properties" <<PROPERTIES
# tslog --command-config file for the SCRAM user $user (TLS, the deployment's CA)
security.protocol=SASL_SSL
ssl.ca.location=/run/secrets/ca.pem
sasl.mechanism=SCRAM-SHA-512
sasl.username=$user
sasl.password.file=/run/secrets/$user-password
PROPERTIES
        note "$user.properties"
    fi
done

rm -f ca.srl
chmod 644 -- *
chmod 600 ca.key
if ((${#made[@]})); then
    echo "make-secrets: made ${made[*]} in $out"
else
    echo "make-secrets: everything already in $out; nothing made"
fi
