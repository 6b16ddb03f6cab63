"""Mutation testing of the checks: every check must kill the code-level bugs it is there for.

`catalogue.py` reads the mutant catalogues (`mutants/<system>.yaml`); `run.py` makes a scratch
copy per mutant and runs the checks there; `matrix.py` adds the verdicts up. The command line
is `leaseproof mutate` (`conformance/cli/mutate.py`).
"""
