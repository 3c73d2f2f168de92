# taskgate's container image: `taskgate serve` as a non-root user on port
# 3000, state in the volume /data. Built and pushed by
# .github/workflows/release.yml (docs/decisions/distribution.md); .ci/run
# lints this file with hadolint.
#
# Task code runs in bubblewrap's sandbox, which needs user namespaces: run
# the container with `--security-opt seccomp=unconfined --security-opt
# apparmor=unconfined` (or TASKGATE_UNSANDBOXED=1, said on every check run).
# Tasks see this image's /usr as their toolchain: build FROM it and add the
# tools your tests need.

FROM rust:1.95-bookworm AS build
WORKDIR /src
# The commit for `taskgate --version` (the build context has no .git).
ARG TASKGATE_COMMIT=unknown
ENV TASKGATE_COMMIT=${TASKGATE_COMMIT}
COPY . .
RUN cargo build --release --locked --bin taskgate \
    && install -D -m 0755 target/release/taskgate /out/taskgate

FROM debian:bookworm-slim
# Versions float with Debian's security updates to bookworm.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap ca-certificates curl libssl3 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --create-home taskgate
COPY --from=build /out/taskgate /usr/local/bin/taskgate
ENV HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_URL=sqlite:///data/taskgate.db \
    TASKGATE_WORK_DIR=/data/work
USER 10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 3000
# On the default port: a container that changes PORT changes this too.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:3000/healthz"]
ENTRYPOINT ["taskgate"]
CMD ["serve"]
