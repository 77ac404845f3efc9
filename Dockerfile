# lila in an image of its own: the official node image and lila's one-file build (scripts/build.js),
# nothing else. The build stage makes the file from this clone; the image runs it as the user
# 1000 (the node image's `node`, given by number so that Kubernetes' runAsNonRoot can check it),
# writes nothing outside /tmp (HOME, hence lila's state directory, is there), and so runs with a
# read-only root filesystem and an emptyDir on /tmp, as deploy/kubernetes/image/deployment.yaml
# runs it. Build it and load it into a local cluster (doc/kubernetes.md):
#
#   docker build -t lila-lb:2.0.0 .
#   kind load docker-image lila-lb:2.0.0        # or: minikube image load lila-lb:2.0.0
FROM node:24-alpine AS build
WORKDIR /src
COPY package.json lila ./
COPY lib lib
COPY scripts/build.js scripts/build.js
RUN node scripts/build.js /out/lila

FROM node:24-alpine
COPY --from=build /out/lila /opt/lila/lila
ENV HOME=/tmp
USER 1000:1000
ENTRYPOINT ["node", "/opt/lila/lila"]
CMD ["--help"]
