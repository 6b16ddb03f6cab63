--------------------------- MODULE MCCommandQueue ---------------------------
(***************************************************************************)
(* Bounds for the command layer models in models/command/. The constants  *)
(* (workers, commands, submits, fault budget, gates) come from each model *)
(* file; this module adds what TLC needs besides the protocol.            *)
(***************************************************************************)
EXTENDS CommandQueue, TLC

\* Workers and commands are interchangeable names: safety models may use this symmetry
\* (never with liveness properties, which TLC cannot check under symmetry).
Symm == Permutations(Workers) \cup Permutations(Commands)

=============================================================================
