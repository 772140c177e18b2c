# syntax=docker/dockerfile:1
# Multi-stage build: wheels are built in a full image, the runtime image holds
# only the installed package, runs as a non-root user and works with a
# read-only root filesystem (no writes outside /tmp, which is an emptyDir).

FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY scheduler/ scheduler/
COPY plugins/ plugins/
RUN pip wheel --no-cache-dir --wheel-dir /wheels -c constraints.txt .

FROM python:3.11-slim-bookworm
RUN groupadd --system --gid 65532 scheduler \
 && useradd --system --uid 65532 --gid scheduler --no-create-home scheduler
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels /wheels/*.whl \
 && rm -rf /wheels
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["pyscheduler"]
CMD ["--config", "/etc/pyscheduler/config.yaml"]
