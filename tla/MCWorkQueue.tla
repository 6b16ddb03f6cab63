---------------------------- MODULE MCWorkQueue ----------------------------
(***************************************************************************)
(* Bounds for the work queue models in models/workqueue/. The constants   *)
(* (consumers, entries, permits, VT, fault budget, gates) come from each  *)
(* model file; this module adds what TLC needs besides the protocol.      *)
(***************************************************************************)
EXTENDS WorkQueue, TLC

\* Consumers and entries are interchangeable names: safety models may use this symmetry
\* (never with liveness properties, which TLC cannot check under symmetry).
Symm == Permutations(Consumers) \cup Permutations(Entries)

=============================================================================
