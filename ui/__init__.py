"""Streamlit-side helpers shared by the pages (the only place besides pages/ and app.py that imports Streamlit)."""
