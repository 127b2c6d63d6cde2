# syntax=docker/dockerfile:1
# The Agentyard image: `agentyard operator` (the Helm chart) or `agentyard serve`.
# TypeScript runs directly on Node's type stripping, so there is no build step: the image holds the
# production dependencies, bin/ and src/.
ARG NODE_VERSION=24

# Production dependencies only (no native modules: PGlite is WebAssembly).
FROM node:${NODE_VERSION}-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM node:${NODE_VERSION}-slim
# git and ssh fetch factory repositories; tini reaps the git processes and forwards signals; bubblewrap
# sandboxes the agents this server executes (docs/security.md).
RUN apt-get update \
  && apt-get install -y --no-install-recommends git openssh-client ca-certificates tini bubblewrap socat \
  && rm -rf /var/lib/apt/lists/*
# A fixed non-root user: the chart runs as 10001 with a read-only root filesystem (/tmp and /data are volumes).
RUN groupadd --system --gid 10001 agentyard \
  && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home --shell /usr/sbin/nologin agentyard \
  && mkdir -p /data && chown 10001:10001 /data
WORKDIR /app
ENV NODE_ENV=production \
    AGENTYARD_DATA_DIR=/data \
    HOME=/data \
    PORT=8080 \
    HOST=0.0.0.0 \
    AGENTYARD_REQUIRE_SANDBOX=1
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --chown=root:root package.json ./
COPY --chown=root:root bin ./bin
COPY --chown=root:root src ./src
COPY --chown=root:root docs/errors.md ./docs/errors.md
USER 10001:10001
EXPOSE 8080
VOLUME ["/data"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=16", "bin/agentyard.js"]
CMD ["serve"]
