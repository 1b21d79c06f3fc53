# The provisioner image for a registry, built from a clone of the repository:
#   docker build -f deploy/docker/provisioner.Dockerfile -t <registry>/sbx-provisioner:0.1.0 .
# (The tests build the same bundle into a local image without a registry: tools/images/build-images.sh.)
FROM node:20-slim AS bundle
WORKDIR /src
COPY . .
RUN npm ci --ignore-scripts --no-audit --no-fund \
  && bash tools/images/provisioner/bundle.sh /out/provisioner.mjs

FROM node:20-slim
COPY --from=bundle /out/provisioner.mjs /opt/sbx-provisioner/provisioner.mjs
# The Deployment's runAsUser; nothing in the image needs root.
USER 65532:65532
ENV PROVISIONER_HOST=0.0.0.0 PROVISIONER_PORT=8002
EXPOSE 8002
CMD ["node", "/opt/sbx-provisioner/provisioner.mjs"]
