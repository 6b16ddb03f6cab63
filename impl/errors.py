"""The exceptions of the reference implementations.

`ImplError` is the root: the command line prints any `ImplError` as a one-line message with
the chain of its causes, and no traceback. Anything else escaping `impl` is a bug in leaseproof.
"""

from __future__ import annotations


class ImplError(Exception):
    """Something the user can act on went wrong in a reference implementation."""


class StoreUnavailable(ImplError):
    """The store (SQLite file, MySQL or Redis server) cannot be reached or opened.

    The message names the URL and says how to make it reachable.
    """


class BadStoreUrl(ImplError):
    """A store URL is not one of `sqlite:///PATH`, `mysql://...` or `redis://...`."""


class TraceWriteError(ImplError):
    """A trace could not be written to the trace directory."""
