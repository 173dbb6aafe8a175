# Cluster node image for prism_fast (Ray workers and the driver). Built with the same system-package and Python
# install scripts as `make demo` / `make test`, so renders, fonts and TeX match the machine the tests ran on.
#
#   docker build --build-arg PRISM_FAST_GIT_COMMIT=$(git rev-parse HEAD) -t prism-fast .
#   docker run --rm --gpus all --shm-size=8g --cap-add SYS_ADMIN prism-fast            # = prism-fast doctor
#   docker run -d --gpus all --shm-size=8g --cap-add SYS_ADMIN --network host -v /shared:/shared \
#       prism-fast ray start --head --block                                           # head node
#
# CUDA: torch==2.14.1 is the cu130 build and brings its CUDA 13.0 / cuDNN 9 libraries as wheels (onnxruntime-gpu
# uses the same ones), so the base only needs to match that CUDA major: the host driver must support CUDA 13.0
# (Linux driver >= 580). NVIDIA_DRIVER_CAPABILITIES includes `video` so NVDEC (libnvcuvid) is mounted.
# Sandbox: the render sandbox needs root with mount + PID namespaces in the container (`--cap-add SYS_ADMIN`, or
# --privileged), or bubblewrap with unprivileged user namespaces (docs/security.md). --shm-size: Ray's object
# store lives in /dev/shm (Docker's default is 64 MB). See README "Cluster".
ARG CUDA_IMAGE=nvidia/cuda:13.0.0-base-ubuntu24.04
FROM ${CUDA_IMAGE}

ARG PRISM_FAST_GIT_COMMIT=unknown
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/prism-venv \
    PATH=/opt/prism-venv/bin:$PATH \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility,video \
    PRISM_FAST_GIT_COMMIT=${PRISM_FAST_GIT_COMMIT}
LABEL org.opencontainers.image.title="prism-fast" \
      org.opencontainers.image.revision=${PRISM_FAST_GIT_COMMIT}

WORKDIR /opt/prism_fast
COPY scripts/install_system_deps.sh scripts/install_system_deps.sh
RUN bash scripts/install_system_deps.sh && rm -rf /var/lib/apt/lists/*

COPY . .
RUN bash scripts/install_python.sh "$VIRTUAL_ENV" gpu,embeddings wheel \
 && python -m prism_fast.buildinfo --write "$PRISM_FAST_GIT_COMMIT"

ENTRYPOINT ["/opt/prism_fast/scripts/docker-entrypoint.sh"]
CMD ["doctor"]
