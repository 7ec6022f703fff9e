"""``python -m tests.model_server SCRIPT [--port N]``: serve a rules file (I/O)."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from tests.model_server._rules import ScriptFileError, load_rules
from tests.model_server._server import ModelServer


def main(argv: list[str] | None = None) -> int:
    """Serve the script until interrupted; print the base URL first."""
    parser = argparse.ArgumentParser(prog="python -m tests.model_server")
    parser.add_argument("script", type=Path, help="a rules file (.toml or .json)")
    parser.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    options = parser.parse_args(argv)
    try:
        script = load_rules(options.script)
    except ScriptFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with ModelServer(script, port=options.port) as server:
        print(server.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
