"""The HTTP API's routes, by resource: runs (reads), ingest (writes, OTLP, attachments),
experiments (datasets and experiments), team (review queues, share links) and docs (the OpenAPI
document, the docs page, health). Each module's class takes the shared `ApiContext` and gives its
`routes()`; `server.api` assembles them."""
