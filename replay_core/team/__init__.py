"""Team: what people do together around the runs — review queues, share links and the audit
log of who did what. Sits over `storage` only (the Store keeps the rows, `storage.actor`
says who may do what); pages, routes and the CLI call it.

It holds the audit log (`audit.py`), review queues (`queues.py`) and share links (`shares.py`).
"""
