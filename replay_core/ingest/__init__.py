"""Ingestion: the one pipeline (validate → redact → store) and the readers of every format.

Owns reading files and payloads into contract events, redaction before storage, and the
write through the Store. Imports the ground floor and `storage`.
"""
