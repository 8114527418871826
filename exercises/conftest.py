# The student notebooks here are stubs that raise NotImplementedError by design, so nbval
# must not run them; tests/grading runs them through `mlcbook grade`. Their solved versions
# in solutions/ are collected as usual.
collect_ignore_glob = ["[0-9][0-9]_*.ipynb"]
