"""The Python SDK: record a live run (Recorder, sessions, spans, tool calls, fallback blocks),
deliver it in the background (spool, sinks), and the litellm logger.

Imports the ground floor, `storage` and `ingest` (delivery goes through the one pipeline).
Its parts never import `recorder`: what they need of a run is typed in `handles`.
"""
