# tslog broker image.
#
# Two stages: the builder turns the source tree into a wheel; the runtime stage installs only
# that wheel (and its dependencies from the package index) into a virtualenv, so the image
# holds exactly what `pip install tslog` gives a user and none of the repository.
# tests/deploy/test_wheel_install.py runs the same two pip commands, in a fresh venv, on every
# CI run (this machine kind has no Docker engine to build the image itself).
#
#   docker build -t tslog .
#   docker run -d -e TSLOG_ALLOW_ANONYMOUS=true -p 127.0.0.1:9092:9092 -p 127.0.0.1:9308:9308 -v tslog-data:/var/lib/tslog tslog
#
# Settings are TSLOG_* environment variables (TSLOG_NODE_ID, TSLOG_ADVERTISED_LISTEN,
# TSLOG_ETCD_ENDPOINTS, TSLOG_LOG_RETENTION_MS, ...) or a TOML file passed with --config.
# Security: the image listens on 0.0.0.0, so the broker refuses to start (protected mode)
# unless it is given client authentication (TSLOG_SASL_MECHANISMS=... or mutual TLS; see
# deploy/docker-compose.yml and docs/security.md, "Deploying") or explicitly
# TSLOG_ALLOW_ANONYMOUS=true, as in the local-only example above (published on 127.0.0.1).
# The health check's tslog reads TSLOG_COMMAND_CONFIG for its login; the secured compose file
# overrides the check with its own --command-config file instead.

FROM python:3.11-slim AS builder
WORKDIR /src
COPY . /src
RUN python -m pip wheel --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/tslog/bin:$PATH \
    TSLOG_DATA_DIR=/var/lib/tslog \
    TSLOG_LISTEN=0.0.0.0:9092 \
    TSLOG_METRICS_LISTEN=0.0.0.0:9308
COPY --from=builder /wheels /tmp/wheels
RUN python -m venv /opt/tslog \
    && /opt/tslog/bin/python -m pip install --no-cache-dir /tmp/wheels/tslog-*.whl \
    && rm -rf /tmp/wheels \
    && groupadd --system --gid 10001 tslog \
    && useradd --system --uid 10001 --gid tslog --home-dir /var/lib/tslog --shell /usr/sbin/nologin tslog \
    && mkdir -p /var/lib/tslog \
    && chown tslog:tslog /var/lib/tslog
USER tslog
WORKDIR /var/lib/tslog
VOLUME ["/var/lib/tslog"]
EXPOSE 9092 9308
# Healthy = the broker answers a Metadata request on its own client port (the port is taken
# from TSLOG_LISTEN, so overriding the listen address keeps the check right).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD tslog topics list --bootstrap "127.0.0.1:${TSLOG_LISTEN##*:}" > /dev/null || exit 1
# SIGTERM (docker stop) makes the broker finish in-flight requests, flush and exit 0; give it
# longer than shutdown_grace_ms with `docker stop -t 30` or compose's stop_grace_period.
STOPSIGNAL SIGTERM
ENTRYPOINT ["tslog-broker"]
