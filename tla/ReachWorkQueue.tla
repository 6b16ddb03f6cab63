---------------------------- MODULE ReachWorkQueue ----------------------------
(***************************************************************************)
(* Reach targets of the work queue's model-guided workloads               *)
(* (conformance/guided).  One action property per outcome of              *)
(* TraceWorkQueue's Outcomes table: Never_<op>_<outcome> is violated by    *)
(* the first behaviour that takes that logged step with that outcome, so   *)
(* TLC's counterexample is a shortest behaviour of the model that reaches  *)
(* it, which the replay then drives the queue's nodes along.  Each         *)
(* outcome is TraceWorkQueue's for that step (its Explains).               *)
(***************************************************************************)
EXTENDS MCWorkQueue

\* The renewal and the release claim exactly when the entry is pending and c may claim it.
Claims(c, e) == status[e] = "pending" /\ (owner[e] = c \/ ~RenewOwnerCheck)

Reach_offer_added == \E e \in Entries : Offer(e)
Never_offer_added == [][~Reach_offer_added]_vars

Reach_receive_new_delivered == \E c \in Consumers, e \in Entries : ReceiveNew(c, e)
Never_receive_new_delivered == [][~Reach_receive_new_delivered]_vars

Reach_reclaim_claimed == \E c \in Consumers, e \in Entries : Reclaim(c, e)
Never_reclaim_claimed == [][~Reach_reclaim_claimed]_vars

Reach_invoke_start_started ==
    \E c \in Consumers, e \in Entries : InvokeStart(c, e) /\ e \notin Renewing(c) /\ e \in active'[c]
Never_invoke_start_started == [][~Reach_invoke_start_started]_vars

Reach_invoke_start_rejected ==
    \E c \in Consumers, e \in Entries : InvokeStart(c, e) /\ e \notin Renewing(c) /\ e \notin active'[c]
Never_invoke_start_rejected == [][~Reach_invoke_start_rejected]_vars

\* A self-reclaim after heartbeat lag: the entry c already runs is handed to it again.
Reach_invoke_start_duplicate_dropped == \E c \in Consumers, e \in Entries : InvokeStart(c, e) /\ e \in Renewing(c)
Never_invoke_start_duplicate_dropped == [][~Reach_invoke_start_duplicate_dropped]_vars

Reach_invoke_end_ended == \E c \in Consumers, e \in Entries, r \in Results : InvokeEnd(c, e, r)
Never_invoke_end_ended == [][~Reach_invoke_end_ended]_vars

Reach_renew_renewed == \E c \in Consumers, e \in Entries : Renew(c, e) /\ Claims(c, e)
Never_renew_renewed == [][~Reach_renew_renewed]_vars

Reach_renew_refused == \E c \in Consumers, e \in Entries : Renew(c, e) /\ ~Claims(c, e)
Never_renew_refused == [][~Reach_renew_refused]_vars

Reach_ack_acked == \E c \in Consumers, e \in Entries : Ack(c, e) /\ faults' = faults
Never_ack_acked == [][~Reach_ack_acked]_vars

Reach_ack_failed == \E c \in Consumers, e \in Entries : Ack(c, e) /\ faults' = faults + 1
Never_ack_failed == [][~Reach_ack_failed]_vars

Reach_release_touched == \E c \in Consumers, e \in Entries : Release(c, e) /\ Claims(c, e)
Never_release_touched == [][~Reach_release_touched]_vars

Reach_release_refused == \E c \in Consumers, e \in Entries : Release(c, e) /\ ~Claims(c, e)
Never_release_refused == [][~Reach_release_refused]_vars

\* Situations (guided/workqueue.yaml `situations`): a step and outcome in a particular state.
\* A stale consumer renews an entry that a peer reclaimed and still owns (the coverage guard's
\* "stale meets live"), not one that was simply acked.
Reach_renew_refused_under_live_owner ==
    \E c \in Consumers, e \in Entries :
        /\ Renew(c, e) /\ ~Claims(c, e)
        /\ status[e] = "pending" /\ owner[e] \notin {c, NoOne}
Never_renew_refused_under_live_owner == [][~Reach_renew_refused_under_live_owner]_vars

\* The same for the one touch of a not-done entry (release refused while a peer owns it).
Reach_release_refused_under_live_owner ==
    \E c \in Consumers, e \in Entries :
        /\ Release(c, e) /\ ~Claims(c, e)
        /\ status[e] = "pending" /\ owner[e] \notin {c, NoOne}
Never_release_refused_under_live_owner == [][~Reach_release_refused_under_live_owner]_vars
=============================================================================
