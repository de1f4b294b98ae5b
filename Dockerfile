# syntax=docker/dockerfile:1
# The hami-core image: the `hami` command with the vendor drivers you choose (docs/operations.md).
#
#   docker build -t hami-core:0.1.0 .
#   docker build --build-arg DRIVERS="nvidia" \
#       --build-arg EXTRA_REQUIREMENTS="./examples/hami-vendor-acme" -t registry.example.com/hami-core:0.1.0 .
#
# DRIVERS: in-tree drivers (directories of vendors/), "all" or "none". EXTRA_REQUIREMENTS: more pip
# requirements, separated by spaces: a driver from an index ("hami-vendor-acme==1.2") or a package
# directory or wheel inside the build context. The only install step is scripts/install-drivers.sh, which
# the test suite runs the same way into a fresh virtualenv.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG DRIVERS=all
ARG EXTRA_REQUIREMENTS=""
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY . .
RUN bash scripts/install-drivers.sh --venv /opt/hami --drivers "${DRIVERS}" --extra "${EXTRA_REQUIREMENTS}"

# The final stage: the same Python base (the virtualenv points at its interpreter), no compilers, no
# source tree, a non-root user.
FROM ${PYTHON_IMAGE}
COPY --from=build /opt/hami /opt/hami
COPY LICENSE /usr/share/doc/hami-core/LICENSE
# Two C allocator arenas (glibc's default is 8 per core): the scheduler's patch threads would each keep
# one (hami_core/scheduler/allocator.py, which the scheduler also applies itself at start).
ENV PATH=/opt/hami/bin:${PATH} PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 MALLOC_ARENA_MAX=2
USER 10001:10001
ENTRYPOINT ["hami"]
CMD ["--help"]
