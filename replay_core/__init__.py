"""Agent Replay core: record, import, inspect, replay and compare AI agent runs.

Nothing heavy is imported here (litellm in particular is imported only by the code
that calls a model), so `import replay_core` stays fast.
"""

__version__ = "0.1.0"
