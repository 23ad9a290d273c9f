"""What a share link opens (`/share?token=…`): one run, comparison or queue's results, read-only.

Reached without signing in; streamlit_app.py lets exactly this page through its door, with
no navigation to anything else.
"""

from __future__ import annotations

import streamlit as st

from ui.common import get_store
from ui.share_view import shared_page

shared_page(get_store(), st.query_params.get("token"))
