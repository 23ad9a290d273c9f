"""The first screen: the product in one sentence, what needs attention now, where to start."""

from __future__ import annotations

from ui.common import current_actor, get_store
from ui.home_view import home

home(get_store(), current_actor())
