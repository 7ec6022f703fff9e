"""The application built on the engine: the ``ralph`` command line and its web view,
workers, workspaces, workflows, the phase graph, the bundled agents and the testing kit.
"""
