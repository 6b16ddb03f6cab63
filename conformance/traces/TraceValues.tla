---- MODULE TraceValues ----
(***************************************************************************)
(* Read(path): the value written in the file `path`, in the TLA+ value     *)
(* syntax leaseproof renders traces in.  The Java class TraceValues        *)
(* (conformance/traces/java/TraceValues.java), on TLC's classpath,         *)
(* overrides Read: a batch's traces are read in milliseconds instead of    *)
(* parsed as a TLA+ literal in seconds.  Without the class TLC evaluates   *)
(* the body below, which stops the run: a batch is never checked against   *)
(* no traces.                                                              *)
(***************************************************************************)
EXTENDS TLC

Read(path) == Assert(FALSE, "leaseproof: the Java class TraceValues is not on TLC's classpath")
====
