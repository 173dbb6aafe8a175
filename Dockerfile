# Cluster node image for prism_fast (Ray workers and the driver). Built with the same system-package script
# as `make demo` / `make test`, so renders, fonts and TeX match the machine the tests ran on.
FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/prism-venv \
    PATH=/opt/prism-venv/bin:$PATH

WORKDIR /opt/prism_fast
COPY scripts/install_system_deps.sh scripts/install_system_deps.sh
RUN bash scripts/install_system_deps.sh && rm -rf /var/lib/apt/lists/*

COPY . .
RUN python3 -m venv "$VIRTUAL_ENV" \
 && pip install --upgrade pip setuptools wheel \
 && pip install .

ENTRYPOINT ["prism-fast"]
