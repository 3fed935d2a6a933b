# syntax=docker/dockerfile:1
# xlate images (multi-stage). Targets:
#   docker build -t xlate:cpu .                       the server on the CPU (the last stage)
#   docker build --target cuda -t xlate:cuda .        the server on NVIDIA GPUs, sm_60 to sm_90
#   docker build --target trainer -t xlate-trainer .  xlate-trainer and Open MPI (CUDA runtime)
# Run: docker run -p 50051:50051 -p 8080:8080 -p 9464:9464 xlate:cpu [xlate-server flags...]; or set flags by
# environment, FLAGS_<name> (e.g. -e FLAGS_threads=4), for the flags listed in --tryfromenv.
# Without a Docker daemon, tests/deploy/image_rootfs_test.sh proves the CPU image from the same
# inputs: this Debian release, scripts/runtime-packages.txt and scripts/build_install.sh.

ARG DEBIAN_RELEASE=bookworm

# --- build: the project's own setup and build scripts, CPU backend only -----------------------
FROM debian:${DEBIAN_RELEASE} AS build
WORKDIR /src
COPY scripts/setup.sh scripts/
RUN bash scripts/setup.sh --no-python
COPY . .
RUN bash scripts/build_install.sh /tmp/build /opt/xlate -DXLATE_CUDA=OFF

# --- build-cuda: the same with CUDA 12.x from NVIDIA's Debian 12 repository (12.x still targets
# sm_60, the P100; nvcc 13 does not) ----------------------------------------------------------
FROM debian:${DEBIAN_RELEASE} AS build-cuda
ARG CUDA_PACKAGE_VERSION=12-4
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ADD https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb /tmp/cuda-keyring.deb
# The CUDA release is pinned by the package names (cuda-nvcc-12-4, ...).
# hadolint ignore=DL3008
RUN dpkg -i /tmp/cuda-keyring.deb \
 && apt-get update \
 && apt-get install -y --no-install-recommends "cuda-nvcc-${CUDA_PACKAGE_VERSION}" \
      "cuda-cudart-dev-${CUDA_PACKAGE_VERSION}" "libcublas-dev-${CUDA_PACKAGE_VERSION}" \
      libnccl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY scripts/setup.sh scripts/
RUN bash scripts/setup.sh --no-python
COPY . .
RUN bash scripts/build_install.sh /tmp/build /opt/xlate -DXLATE_CUDA=ON \
      -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
      "-DCMAKE_CUDA_ARCHITECTURES=60-real;70-real;75-real;80-real;86-real;90" \
 && cmake --install /tmp/build --component trainer --prefix /opt/xlate-trainer

# --- runtime-base: the slim runtime every image shares: the libraries of
# scripts/runtime-packages.txt and an unprivileged user --------------------------------------
FROM debian:${DEBIAN_RELEASE}-slim AS runtime-base
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY scripts/runtime-packages.txt /tmp/
# The versions are Debian 12's own (the release is pinned above); the list lives in one file.
# hadolint ignore=DL3008
RUN apt-get update \
 && grep -v '^#' /tmp/runtime-packages.txt | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && useradd --system --uid 10001 --home-dir /opt/xlate --shell /usr/sbin/nologin xlate
ENV FLAGS_model_dir=/opt/xlate/share/xlate/models/en-de-general
EXPOSE 50051 8080 9464
# The server of the cuda and cpu images (their stages add /opt/xlate); the trainer's overrides it.
# Flags come from FLAGS_<name> variables too. With TLS (FLAGS_tls_cert, FLAGS_tls_key), set
# FLAGS_tls_ca (the roots that verify the certificate; itself when self-signed) and, when the
# certificate does not name 127.0.0.1, FLAGS_tls_server_name: the HEALTHCHECK's probe reads them.
ENTRYPOINT ["/opt/xlate/bin/xlate-server", "--port=50051", "--http_port=8080", "--metrics_port=9464", "--tryfromenv=model_dir,model_name,device,compute_type,threads,max_batch_tokens,max_batch_sentences,max_queue_delay_ms,queue_capacity,decoding_sentences,max_beam_size,max_input_tokens,max_output_tokens,max_sentences_per_request,max_entry_code_points,max_request_code_points,max_receive_message_bytes,max_entries_per_request,max_queued_sentences_per_client,grace_period_seconds,tls_cert,tls_key,admin_address,api_keys_file"]

# --- cuda: runtime-base plus the CUDA 12.x runtime libraries ---------------------------------
FROM runtime-base AS cuda
ARG CUDA_PACKAGE_VERSION=12-4
ADD https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb /tmp/cuda-keyring.deb
# The CUDA release is pinned by the package names.
# hadolint ignore=DL3008
RUN dpkg -i /tmp/cuda-keyring.deb \
 && apt-get update \
 && apt-get install -y --no-install-recommends "cuda-cudart-${CUDA_PACKAGE_VERSION}" \
      "libcublas-${CUDA_PACKAGE_VERSION}" libnccl2 \
 && rm -rf /var/lib/apt/lists/* /tmp/cuda-keyring.deb
# What the NVIDIA container runtime reads: every GPU, compute only.
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
COPY --from=build-cuda /opt/xlate /opt/xlate
USER 10001
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
  CMD ["/opt/xlate/bin/xlate-health", "--target=127.0.0.1:50051", "--tryfromenv=tls_ca,tls_server_name"]

# --- trainer: the CUDA runtime plus xlate-trainer and Open MPI (mpirun -np N) ----------------
FROM cuda AS trainer
USER 0
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY scripts/trainer-runtime-packages.txt /tmp/
# hadolint ignore=DL3008
RUN apt-get update \
 && grep -v '^#' /tmp/trainer-runtime-packages.txt \
    | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/trainer-runtime-packages.txt
COPY --from=build-cuda /opt/xlate-trainer/bin/xlate-trainer /opt/xlate/bin/
USER 10001
WORKDIR /work
HEALTHCHECK NONE
ENTRYPOINT ["/opt/xlate/bin/xlate-trainer"]
CMD ["--help"]

# --- cpu (the default target): runtime-base plus the CPU build -------------------------------
FROM runtime-base AS cpu
COPY --from=build /opt/xlate /opt/xlate
USER 10001
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/opt/xlate/bin/xlate-health", "--target=127.0.0.1:50051", "--tryfromenv=tls_ca,tls_server_name"]
