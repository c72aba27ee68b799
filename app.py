"""GET Explorer: ``streamlit run app.py``. The entry file is only a router; each page lives in pages/."""

import streamlit as st

from pages import common, signin

st.set_page_config(page_title="GET Explorer", page_icon=":material/account_tree:", layout="wide")
scope = signin.gate(common.open_store())  # a shared server's sign-in, or a review link's one run
signin.sidebar(scope)

tree = st.Page("pages/tree.py", title="Tree", icon=":material/account_tree:", default=scope.read_only)
compare = st.Page("pages/compare.py", title="Compare", icon=":material/compare:")
predict = st.Page("pages/predict.py", title="Predict", icon=":material/online_prediction:")
navigation = st.navigation({"Review": [tree, compare, predict]} if scope.read_only else {
    "Build": [
        st.Page("pages/data.py", title="Data", icon=":material/table:", default=True),
        st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
        st.Page("pages/runs.py", title="Runs", icon=":material/list:"),
    ],
    "Explore": [tree, compare, predict, st.Page("pages/teaching.py", title="Teaching", icon=":material/school:")],
})
navigation.run()
