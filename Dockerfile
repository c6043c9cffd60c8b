# weir: build in one stage, run from a slim one.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts ./scripts
COPY lua ./lua
RUN npm ci --ignore-scripts && npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY lua ./lua
COPY web ./web
COPY seeds ./seeds
USER node
ENTRYPOINT ["node", "/app/dist/cli.js"]
CMD ["--help"]
