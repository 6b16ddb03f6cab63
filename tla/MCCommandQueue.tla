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

\* Calibration of TypeOK (model type_offer_retry): a client that offers again on its own,
\* without a submit_state call (an XADD retried after a timeout). TypeOK bounds the messages
\* by the submit calls (one offer each); with this step they leave that bound.
OfferRetry(k) ==
    /\ client[k] = "done"
    /\ fresh' = [fresh EXCEPT ![k] = @ + 1]
    /\ msgs' = [msgs EXCEPT ![k] = @ + 1]
    /\ UNCHANGED <<status, guard, externalVars, clientVars, workerVars, historyVars>>

NextWithOfferRetry == Next \/ \E k \in Commands : OfferRetry(k)

=============================================================================
