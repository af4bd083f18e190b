"""Transitions: a breaking change shipped as expand / migrate / contract. Pure: the versions a transition proposes
(each schema format edits its own text) and who still reads the old fields, judged from lineage, the census and
what teams said."""
