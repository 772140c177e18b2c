# syntax=docker/dockerfile:1
# Multi-stage build. The build stage makes wheels of the package and of its
# runtime dependencies only (no extras), at the versions constraints.txt pins,
# and installs exactly those into a virtual environment without pip. The final
# stage holds that environment on the same base with pip, setuptools, wheel
# and ensurepip removed, and no compiler or package manager added: only what
# runs. Non-root; works with a read-only root filesystem (/tmp is an emptyDir).
# The removal holds for the official python image (pip under /usr/local). On
# another PYTHON_IMAGE, e.g. Debian's python3 + python3-pip as `make e2e`
# builds it, `pip uninstall` leaves /usr/lib/python3/dist-packages alone ("Not
# uninstalling pip ... outside environment /usr") without failing: pip stays
# in the base, though never in /opt/venv, which is first on PATH. Such a base
# also needs `python` (python-is-python3) and no PEP 668 EXTERNALLY-MANAGED
# marker, or that uninstall fails. The build stage runs pip against PyPI:
# behind a TLS-intercepting proxy the base must trust the proxy's CA (e.g.
# /etc/pip.conf with `cert = /etc/ssl/certs/ca-certificates.crt`).
#
# Build: docker build --build-arg REVISION="$(git rev-parse HEAD)" \
#          --build-arg SOURCE=https://your.git/host/pyscheduler -t pyscheduler:0.1.0 .
#
# Out-of-tree plugins: the stage `plugins` is empty unless a directory of
# wheels replaces it as a named build context (BuildKit, `docker buildx
# build`, buildah or podman 1.27+):
#   docker buildx build --build-context plugins=./wheels -t pyscheduler-mine:1 .
# Every *.whl at the top of that directory is installed into /opt/venv next
# to pyscheduler, with no index: a plugin's dependencies beyond pyscheduler's
# must be wheels in the same directory, and pyscheduler's own stay at the
# versions constraints.txt pins (a conflict fails the build). Wheels are for
# the base's Python (3.11) and architecture; `pip wheel --no-deps -w wheels
# ./my-plugins` makes one. The plugins register through the
# `pyscheduler.plugins` entry points (examples/plugin-package).

# CPython 3.11.14 on Debian 12 (bookworm), slim, pinned by tag and by the
# digest of the tag's multi-architecture index (see ARCHITECTURE.md, "Image").
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d

FROM scratch AS plugins

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY scheduler/ scheduler/
COPY plugins/ plugins/
RUN pip wheel --no-cache-dir --wheel-dir /wheels -c constraints.txt . \
 && python -m venv --without-pip /opt/venv \
 && pip --python /opt/venv/bin/python install --no-cache-dir --no-index --no-deps /wheels/*.whl
COPY --from=plugins / /plugins/
RUN set -- /plugins/*.whl; \
    if [ -e "$1" ]; then \
      pip --python /opt/venv/bin/python install --no-cache-dir --no-index \
        --find-links /plugins -c constraints.txt "$@"; \
    fi

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="pyscheduler" \
      org.opencontainers.image.description="A custom Kubernetes scheduler in Python" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11.14-slim-bookworm"
RUN python -m pip uninstall --yes --no-cache-dir pip setuptools wheel \
 && rm -rf /usr/local/lib/python3.11/ensurepip \
 && groupadd --system --gid 65532 scheduler \
 && useradd --system --uid 65532 --gid scheduler --no-create-home scheduler
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["pyscheduler"]
CMD ["--config", "/etc/pyscheduler/config.yaml"]
