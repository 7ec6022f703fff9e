"""Agent programs that ship with ralph-pipeline (run as separate processes, never imported by
the engine): :mod:`pipeline.app.agents.scripted`, the scripted agent for demos and tests."""
