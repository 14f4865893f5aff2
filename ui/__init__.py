"""Streamlit-side helpers shared by the pages (the only place besides views/ and app.py that imports Streamlit)."""
