# Surge in a container: CUDA 13.0 (the version Surge builds with) and cuDNN 9 on Ubuntu 24.04, set up by
# the same script as the README's two commands, with `surge doctor` as the default command.
#
#   docker build -t surge .
#   docker run --rm --gpus all surge                                  # surge doctor
#   docker run --rm --gpus all surge surge bench env --device cuda
#
# For one GPU only (a faster build): docker build --build-arg SURGE_CUDA_ARCHITECTURES=90-real -t surge .
# ("native" does not work here: no GPU is visible while an image builds.)
FROM nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04

ARG SURGE_CUDA_ARCHITECTURES=""
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /opt/surge

# The dependencies first, so that a change in the sources does not install them again.
COPY tools/setup.sh tools/setup.sh
RUN tools/setup.sh --deps-only && rm -rf /var/lib/apt/lists/*

COPY . .
RUN SURGE_CUDA_ARCHITECTURES="${SURGE_CUDA_ARCHITECTURES}" BUILD_DIR=build tools/setup.sh --build-only

ENV PATH=/opt/surge/build/bin:${PATH}
CMD ["surge", "doctor"]
