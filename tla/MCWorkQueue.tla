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

-----------------------------------------------------------------------------
(* A producer that never stops: Entries are slots, and an acked entry's     *)
(* slot that no consumer remembers is offered again as a fresh entry (its   *)
(* own PEL record). It offers only while no entry waits undelivered: the    *)
(* spec picks any new entry, not the stream's oldest, and two at once would *)
(* let a fresh one pass an older one forever (an artifact, not the design). *)
(* Retries must then get their turn while new work keeps coming.            *)
Remembered(e) ==
    \E c \in Consumers : e \in inbox[c] \cup active[c] \cup toAck[c] \cup toRelease[c] \cup leaked[c]

OfferFresh(e) ==
    /\ status[e] = "gone" /\ ~Remembered(e) /\ ~NewReady
    /\ status' = [status EXCEPT ![e] = "new"]
    /\ deliveries' = [deliveries EXCEPT ![e] = 0]
    /\ UNCHANGED <<owner, idle, consumerVars, polls, faults, doubled>>

EndlessNext == Next \/ \E e \in Entries : OfferFresh(e)

\* Each call runs on its own thread, so under endless work one call's steps do not wait on
\* another's: fairness per entry (per consumer only, one entry's ack could be passed over
\* forever by the acks of fresh entries).
CallFairness ==
    \A c \in Consumers : \A e \in Entries :
        /\ WF_vars(InvokeStart(c, e) /\ UNCHANGED polls)
        /\ WF_vars((\E r \in Results : InvokeEnd(c, e, r)) /\ UNCHANGED polls)
        /\ WF_vars((Renew(c, e) \/ RenewCheck(c, e) \/ RenewClaim(c, e)) /\ UNCHANGED polls)
        /\ WF_vars((Ack(c, e) \/ Release(c, e)) /\ UNCHANGED polls)

\* XAUTOCLAIM's cursor visits the whole PEL round-robin: an entry that some poll could reclaim
\* again and again is in the end the one reclaimed (else one retry could pass another forever).
CursorFairness ==
    \A c \in Consumers : \A e \in Entries : SF_vars(Poll(c) /\ Reclaim(c, e))

EndlessSpec ==
    /\ Init /\ [][EndlessNext]_vars /\ Fairness /\ CallFairness /\ CursorFairness
    /\ WF_vars(\E e \in Entries : OfferFresh(e))

-----------------------------------------------------------------------------
(* Calls that may never return (a handler may run past VT and past        *)
(* maxProcessingTime, with no bound): every step but InvokeEnd stays fair. *)
(* LaggingLearnsLoss must then come from the heartbeat, not from the end.  *)
HangSpec == Init /\ [][Next]_vars /\ ProcessFairness

-----------------------------------------------------------------------------
(* TypeOK's calibration: a heartbeat lag that skips CanFault's budget     *)
(* check (a fault the budget never paid for) takes faults past MaxFaults.  *)
UnpaidLag(c, e) ==
    /\ LagFault /\ Up(c) /\ Holds(c, e)
    /\ lagging' = [lagging EXCEPT ![c] = @ \cup {e}]
    /\ faults' = faults + 1
    /\ UNCHANGED <<storeVars, mode, inbox, active, permits, toAck, toRelease, stalled, leaked,
                   lost, checked, elapsed, polls, doubled>>

NextWithUnpaidLag == Next \/ \E c \in Consumers : \E e \in Entries : UnpaidLag(c, e)

-----------------------------------------------------------------------------
(* MarksAreCurrent's calibration: a heartbeat lag that marks an entry the   *)
(* consumer does not run (HeartbeatLag without its Holds guard), the mark   *)
(* a call's end would leave if it forgot to clear it.                       *)
LagOnNoCall(c, e) ==
    /\ CanFault(LagFault) /\ Up(c) /\ e \notin Renewing(c)
    /\ lagging' = [lagging EXCEPT ![c] = @ \cup {e}]
    /\ faults' = faults + 1
    /\ UNCHANGED <<storeVars, mode, inbox, active, permits, toAck, toRelease, stalled, leaked,
                   lost, checked, elapsed, polls, doubled>>

NextWithLagOnNoCall == Next \/ \E c \in Consumers : \E e \in Entries : LagOnNoCall(c, e)

-----------------------------------------------------------------------------
(* AckedAfterDone's calibration: an ack on receipt (the bug of acking a    *)
(* delivery before its call runs): the entry is gone, and its to-ack set    *)
(* never held it.                                                           *)
AckOnReceipt(c, e) ==
    /\ Up(c) /\ e \in inbox[c] /\ status[e] = "pending"
    /\ status' = [status EXCEPT ![e] = "gone"]
    /\ owner' = [owner EXCEPT ![e] = NoOne]
    /\ idle' = [idle EXCEPT ![e] = 0]
    /\ UNCHANGED <<deliveries, consumerVars, faults, polls, doubled>>

NextWithAckOnReceipt == Next \/ \E c \in Consumers : \E e \in Entries : AckOnReceipt(c, e)

=============================================================================
