# The in-cluster egress proxy image (deploy/kubernetes/egress-proxy-*.yaml), built from a clone:
#   docker build -f deploy/docker/egress-proxy.Dockerfile -t <registry>/sbx-egress-proxy:0.1.0 .
FROM node:20-slim AS bundle
WORKDIR /src
COPY . .
RUN npm ci --ignore-scripts --no-audit --no-fund \
  && bash deploy/docker/egress-proxy/bundle.sh /out/egress-proxy.mjs

FROM node:20-slim
COPY --from=bundle /out/egress-proxy.mjs /opt/sbx-egress-proxy/egress-proxy.mjs
# The Deployment's runAsUser; nothing in the image needs root.
USER 65532:65532
ENV SBX_EGRESS_LISTEN_HOST=0.0.0.0 SBX_EGRESS_LISTEN_PORT=3128
EXPOSE 3128
CMD ["node", "/opt/sbx-egress-proxy/egress-proxy.mjs"]
