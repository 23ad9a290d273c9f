"""What-if: replaying a stretch of a recorded run with another model or prompt.

Owns the replay configuration, the recording as a source of answers, the one litellm call
(provider) and the replay loop. Imports the ground floor, `storage`, `ingest` and `understand`.
litellm is imported only when a model is called.
"""
