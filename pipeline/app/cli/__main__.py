"""``python -m pipeline.app.cli``: the same as the ``ralph`` command."""

from pipeline.app.cli import main

main()
