"""The leaseproof toolkit: run TLC on the models, parse its verdicts, validate traces.

What passes between `conformance` and `impl` is a trace file (and its schema) and a model file;
neither imports the other's internals.
"""
