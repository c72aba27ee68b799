"""Predict page (placeholder): the next issue fills it with predictions from a run's model."""

import streamlit as st

st.title("Predict")
st.info("Coming next: predictions of a finished run's tree for rows you type or upload, with the path each row "
        "takes through the tree.")
