"""Streamlit helpers shared by the pages (pages must not import streamlit_app.py)."""
