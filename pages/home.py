"""The first screen: the product in one sentence, what needs attention now, where to start.

A link made before this was the default page (`/?status=failed`) still opens the runs list.
"""

from __future__ import annotations

import streamlit as st

from ui.common import FILTER_PARAMS, PAGE_RUNS, current_actor, get_store
from ui.home_view import home

if any(key in st.query_params for key in FILTER_PARAMS):
    st.switch_page(PAGE_RUNS, query_params=st.query_params.to_dict())
home(get_store(), current_actor())
