#!/usr/bin/env bash
# Validate deploy/docker-compose.yml with Docker's own parser (`docker compose config`).
#
# Needs the docker CLI with the compose plugin, which CI machines here do not have (no Docker
# engine either), so this is a script to run where Docker is installed rather than a test
# that would be skipped everywhere it runs. Exit 0 = valid; 1 = invalid; 2 = no compose plugin.
# tests/deploy/test_compose.py checks the file's ports, paths, names and secrets on every CI
# run without Docker. The compose file's secrets are files of deploy/secrets/: run
# deploy/make-secrets.sh first.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! docker compose version >/dev/null 2>&1; then
    echo "check-compose: 'docker compose' is not available here; nothing checked" >&2
    exit 2
fi
if [[ ! -d "$here/secrets" ]]; then
    echo "check-compose: $here/secrets/ is missing; run deploy/make-secrets.sh first" >&2
    exit 1
fi
docker compose -f "$here/docker-compose.yml" config --quiet
echo "check-compose: $here/docker-compose.yml is valid"
