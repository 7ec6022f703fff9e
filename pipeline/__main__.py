"""``python -m pipeline``: the ``ralph`` command, for when its script is not on PATH."""

from pipeline.cli import main

main()
