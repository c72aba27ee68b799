"""Compare page (placeholder): the next issue fills it with GET against its baselines."""

import streamlit as st

st.title("Compare")
st.info("Coming next: a run's GET tree against CART of the same depth and a random forest on the same split: test "
        "R², parameters, model size and prediction latency. Finished runs already store these baselines.")
