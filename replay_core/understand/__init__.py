"""Understanding a run: the opened timeline, decision cycles, the state at step n, the nesting
of a run, compare, and analytics over many runs.

Reads stored runs; never writes them. Imports the ground floor, `storage` and `ingest`
(for the readers' JSON helpers), never what-if, the SDK or the server.
"""
