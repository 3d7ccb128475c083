"""Command line: a thin click layer over the library.

Each command reads its options, calls the library, and prints; ``common`` is the only place
that configures logging and maps errors to exit codes (0 success, 1 a finding, 2 an error,
3 for ``delink``: written, but an audit attack ranks a source first).
"""

from __future__ import annotations

from presidio_delink.cli import delink_cmd, detect_cmd, eval_cmd, index_cmd, other_cmd, serve_cmd
from presidio_delink.cli.common import main

__all__ = ["main"]

# imported to register them
_COMMANDS = (delink_cmd, detect_cmd, index_cmd, other_cmd, eval_cmd, serve_cmd)
