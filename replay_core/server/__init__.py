"""The HTTP server: API routes (`/api/v1/...`, OTLP `/v1/traces`, `/healthz`) and access
(tokens, passwords, OIDC users, roles).

Sits over every wing but the SDK: it ingests (`ingest`), reads (`storage`, `understand`) and
will launch replays (`whatif`). Nothing in `replay_core` imports it but the CLI.
"""
