"""GET Explorer: ``streamlit run app.py``. The entry file is only a router; each page lives in pages/."""

import streamlit as st

st.set_page_config(page_title="GET Explorer", page_icon="🌳", layout="wide")

navigation = st.navigation({
    "Build": [
        st.Page("pages/data.py", title="Data", icon="📄", default=True),
        st.Page("pages/train.py", title="Train", icon="🏋️"),
        st.Page("pages/runs.py", title="Runs", icon="🗂️"),
    ],
    "Explore": [
        st.Page("pages/tree.py", title="Tree", icon="🌳"),
        st.Page("pages/compare.py", title="Compare", icon="⚖️"),
        st.Page("pages/predict.py", title="Predict", icon="🔮"),
    ],
})
navigation.run()
