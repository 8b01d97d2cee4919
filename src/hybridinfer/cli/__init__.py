"""The ``hybridinfer`` command line."""

from __future__ import annotations

import click

from hybridinfer import __version__
from hybridinfer.cli.change import add_change_commands
from hybridinfer.cli.demo import demo
from hybridinfer.cli.keys import keys
from hybridinfer.cli.models import models
from hybridinfer.cli.node import node
from hybridinfer.cli.policy import policy
from hybridinfer.cli.router import router
from hybridinfer.cli.serve import gateway, up
from hybridinfer.cli.trace import trace


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hybridinfer")
def main() -> None:
    """Hybrid inference: local, edge and cloud behind one entry point."""


main.add_command(up)
main.add_command(gateway)
main.add_command(node)
main.add_command(trace)
main.add_command(models)
main.add_command(keys)
add_change_commands(policy)
main.add_command(policy)
main.add_command(router)
main.add_command(demo)
