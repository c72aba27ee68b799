"""Tree page (placeholder): the next issue fills it with the tree explorer."""

import streamlit as st

st.title("Tree")
st.info("Coming next: the fitted oblique tree of a run as an interactive diagram, its splits and leaves in the "
        "data's own units, and exports (rules, Python, C, DOT, HTML report).")
