"""``python -m pipeline.cli``: the same as the ``ralph`` command."""

from pipeline.cli import main

main()
