"""``python -m pipeline``: the ``ralph`` command, for when its script is not on PATH."""

from pipeline.app.cli import main

main()
