# farm-apiserver image: build with dev dependencies, run with production ones as a non-root user.
# Node 24, the LTS line CI tests besides the machine's Node 20 (.ci/run, scripts/node-lts.sh).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
RUN npm ci --no-audit --no-fund
COPY src ./src
COPY scripts/bundle.ts scripts/seedCodeCache.ts scripts/freePort.ts ./scripts/
# tsc type-checks and emits dist/; scripts/bundle.ts adds the bundled entry point dist/farm-apiserver.js
# and V8's code cache of a warm-up start (on loopback) beside it, which a new pod's first start runs:
# made by this stage's Node, which must be the runtime stage's (V8 rejects another's, harmlessly).
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER 1000:1000
EXPOSE 8443
ENTRYPOINT ["node", "dist/farm-apiserver.js"]
