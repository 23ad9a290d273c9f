"""Threads: a conversation's runs in order with their totals (`?thread=<id>`), else the latest conversations."""

from __future__ import annotations

from ui.common import get_store
from ui.thread_view import threads_page

threads_page(get_store())
