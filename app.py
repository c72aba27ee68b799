"""GET Explorer: ``streamlit run app.py``. The entry file is only a router; each page lives in pages/."""

import streamlit as st

st.set_page_config(page_title="GET Explorer", page_icon=":material/account_tree:", layout="wide")

navigation = st.navigation({
    "Build": [
        st.Page("pages/data.py", title="Data", icon=":material/table:", default=True),
        st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
        st.Page("pages/runs.py", title="Runs", icon=":material/list:"),
    ],
    "Explore": [
        st.Page("pages/tree.py", title="Tree", icon=":material/account_tree:"),
        st.Page("pages/compare.py", title="Compare", icon=":material/compare:"),
        st.Page("pages/predict.py", title="Predict", icon=":material/online_prediction:"),
        st.Page("pages/teaching.py", title="Teaching", icon=":material/school:"),
    ],
})
navigation.run()
