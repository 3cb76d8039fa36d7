"""The SAM CLI with every Lambda container on the host network, on 127.0.0.1.

Usage: .venv-deploy/bin/python tools/sam/sam_host_network.py SAM-ARGS...
(what `tools/dev deploy invoke|start-api` and the sam_local tests run).

SAM 1.170 creates each Lambda container on Docker's default bridge and
publishes the emulator's port 8080 on 127.0.0.1:<port> (`--docker-network
host` only skips connecting a second network). On the bridge a function
cannot reach the services a local run gives it (PostgreSQL, moto, a sink:
all on the host's 127.0.0.1), and traffic would cross the bridge's private
addresses. This wrapper changes two things before SAM creates a container
(samcli.local.docker.container.Container.create), and nothing else:
- the container joins the host's network (network_mode host) and publishes
  no port (Docker ignores published ports there);
- the emulator listens on 127.0.0.1:<the port SAM picked for it> instead of
  0.0.0.0:8080, and serves the Runtime API to the bootstrap on 127.0.0.1 at
  a free port instead of 127.0.0.1:9001, so two containers (start-api's
  authorizer and ingest) never share a port.
It also skips SAM's check for a newer version (a request to pypi.org) and
turns telemetry off. SAM's own code, its images and its emulator are used
unchanged otherwise.
The daemon tools/dev starts has no bridge at all (--bridge=none): a
container this wrapper missed could not reach anything.
"""

from __future__ import annotations

import os
import socket
import sys

import docker.models.containers
from samcli.cli.main import cli
from samcli.lib.utils import version_checker
from samcli.local.docker import container as sam_container

RIE = "/var/rapid/aws-lambda-rie"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_sam_create = sam_container.Container.create


def create(self, context):
    entry = list(self._entrypoint or [])
    if not entry or entry[0] != RIE:
        raise SystemExit(
            f"tools/sam/sam_host_network.py: unexpected container entrypoint {entry!r} "
            f"(expected SAM's emulator {RIE}); this SAM CLI version is not supported"
        )
    self._entrypoint = entry + [
        "--runtime-interface-emulator-address",
        f"127.0.0.1:{self.rapid_port_host}",
        "--runtime-api-address",
        f"127.0.0.1:{free_port()}",
    ]
    self._container_opts = {**(self._container_opts or {}), "network_mode": "host"}
    return _sam_create(self, context)


_docker_create = docker.models.containers.ContainerCollection.create


def docker_create(self, image, command=None, **kwargs):
    if kwargs.get("network_mode") == "host":
        kwargs.pop("ports", None)
    return _docker_create(self, image, command, **kwargs)


sam_container.Container.create = create
docker.models.containers.ContainerCollection.create = docker_create
# No look-up of newer SAM versions on pypi.org, no telemetry: a local run
# talks to 127.0.0.1 only.
version_checker._inform_newer_version = lambda force_check=False: None
os.environ.setdefault("SAM_CLI_TELEMETRY", "0")

if __name__ == "__main__":
    sys.argv[0] = "sam"
    sys.exit(cli())
