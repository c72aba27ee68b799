"""GET Explorer: ``streamlit run app.py``. The entry file is only a router; each page lives in pages/."""

import streamlit as st

from pages import common, signin

st.set_page_config(page_title="GET Explorer", page_icon=":material/account_tree:", layout="wide")
scope = signin.gate(common.open_store())  # None until a shared server's user signs in; a review link: one run
review = scope is not None and scope.read_only

tree = st.Page("pages/tree.py", title="Tree", icon=":material/account_tree:", default=review)
compare = st.Page("pages/compare.py", title="Compare", icon=":material/compare:")
predict = st.Page("pages/predict.py", title="Predict", icon=":material/online_prediction:")
navigation = st.navigation({"Review": [tree, compare, predict]} if review else {
    "Build": [
        st.Page("pages/data.py", title="Data", icon=":material/table:", default=True),
        st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
        st.Page("pages/runs.py", title="Runs", icon=":material/list:"),
    ],
    "Explore": [tree, compare, predict, st.Page("pages/teaching.py", title="Teaching", icon=":material/school:")],
}, position="sidebar" if scope is not None else "hidden")
if scope is None:
    signin.sign_in()  # the router knows the page asked for, so it opens once signed in
signin.sidebar(scope)
navigation.run()
