"""Streamlit helpers shared by the app's pages: widgets and glue only, no science."""
