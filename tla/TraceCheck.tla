---- MODULE TraceCheck ----
(***************************************************************************)
(* What every trace spec (TraceEngine, TraceWorkQueue, TraceCommandQueue)  *)
(* shares with leaseproof's trace checker (conformance/traces/).           *)
(*                                                                         *)
(* The checker generates a module TraceData that EXTENDS this one and      *)
(* defines Traces: a sequence of traces, each a sequence of event records  *)
(* (the NDJSON event lines, with "kind" and "seq" dropped, JSON null as    *)
(* Nil, times made relative to the trace's first event). A trace spec     *)
(* EXTENDS its protocol spec and TraceData, keeps the trace index t and   *)
(* the number of lines explained so far l in its state, and calls the     *)
(* operators below, which print what the checker reads:                    *)
(*                                                                         *)
(*   <<"L", t, n>>        lines 1..n of trace t are explained              *)
(*   <<"ACCEPT", t>>      every line of trace t is explained               *)
(*   <<"DIFF", t, n, d>>  line n disagrees with the spec on the fields d   *)
(*                                                                         *)
(* See traces/README.md.                                                   *)
(***************************************************************************)
EXTENDS Integers, Sequences, TLC

\* JSON null in a trace. A model value: unequal to, and comparable with, any other value.
CONSTANT Nil

\* Lines 1..n of trace t are explained. Always TRUE; put it last in an action, after the guards.
Explained(t, n) == PrintT(<<"L", t, n>>)

\* Trace t is explained to its end. Always TRUE.
Accept(t) == PrintT(<<"ACCEPT", t>>)

\* The bookkeeping of one logged line: line n of trace t is explained, and the trace is
\* accepted when n is its last line. Always TRUE.
Consumed(t, n, len) == Explained(t, n) /\ (n = len => Accept(t))

\* Trace t is explained to its end by a behaviour that used the fault lines `used` (a set of
\* line numbers) to excuse a hidden step: the checker reports the acceptance as excused by them
\* (the fewest any accepting behaviour used). Always TRUE.
AcceptExcused(t, used) == PrintT(<<"ACCEPT", t, used>>)

\* Consumed, for a spec that keeps the fault lines it used: at the last line the acceptance
\* names them (AcceptExcused). Always TRUE.
ConsumedExcused(t, n, len, used) == Explained(t, n) /\ (n = len => AcceptExcused(t, used))

\* The logged fields of line n of trace t agree with the spec. `pairs` maps a field's name to
\* <<what the spec says, what the line says>>; each field that differs is printed. (TLC
\* evaluates an operator's argument again at each use: bound by \E, `pairs` is built once.)
Match(t, n, pairs) ==
    \E p \in {pairs} :
        LET bad == {f \in DOMAIN p : p[f][1] # p[f][2]}
        IN  IF bad = {} THEN TRUE
            ELSE PrintT(<<"DIFF", t, n, [f \in bad |-> p[f]]>>) /\ FALSE
====
