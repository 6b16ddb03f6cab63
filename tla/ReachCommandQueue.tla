--------------------------- MODULE ReachCommandQueue ---------------------------
(***************************************************************************)
(* Reach targets of the command layer's model-guided workloads            *)
(* (conformance/guided).  One action property per outcome of              *)
(* TraceCommandQueue's Outcomes table: Never_<op>_<outcome> is violated by *)
(* the first behaviour that takes that logged step with that outcome, so   *)
(* TLC's counterexample is a shortest behaviour of the model that reaches  *)
(* it, which the replay then drives the command layer along.  An outcome   *)
(* that only the trace spec's implementation quirks give (a failed ack)   *)
(* has no step here: guided/command.yaml declares it outside the model,   *)
(* with the reason.                                                        *)
(***************************************************************************)
EXTENDS MCCommandQueue

\* Some steps leave the same state as another (a guard renewal that finds the guard lost ends
\* the attempt as a refused write does; a refused cancel changes nothing at all), and an action
\* property holds of any step that changes the state as it says. `lastStep` names each step and
\* what it acted on, so that each target is the step it names and the replay's map
\* (conformance/replay/command_map.py) reads which step it was. ReachNext is Next with each
\* disjunct named: keep the two in step.
VARIABLE lastStep
reachVars == <<vars, lastStep>>
Named(name, of, A) == A /\ lastStep' = [step |-> name, of |-> of]
ReachInit == Init /\ lastStep = [step |-> "none", of |-> NoOne]
ReachNext ==
    \/ \E k \in Commands :
          \/ Named("SubmitState", k, SubmitState(k)) \/ Named("Offer", k, Offer(k))
          \/ Named("Cancel", k, Cancel(k)) \/ Named("GuardExpire", k, GuardExpire(k))
          \/ Named("ClientCrash", k, ClientCrash(k)) \/ Named("StateExpire", k, StateExpire(k))
    \/ \E w \in Workers :
          \/ \E k \in Commands : Named("ReceiveNew", w, ReceiveNew(w, k)) \/ Named("Reclaim", w, Reclaim(w, k))
          \/ Named("GuardTake", w, GuardTake(w)) \/ Named("GuardRenew", w, GuardRenew(w))
          \/ Named("PutCheck", w, PutCheck(w)) \/ \E s \in Statuses : Named("PutIfOwner", w, PutIfOwner(w, s))
          \/ Named("ExternalCall", w, ExternalCall(w)) \/ Named("GuardRelease", w, GuardRelease(w))
          \/ Named("Ack", w, Ack(w)) \/ Named("Crash", w, Crash(w)) \/ Named("Pause", w, Pause(w))
          \/ Named("Resume", w, Resume(w)) \/ Named("Throw", w, Throw(w))
ReachSpec == ReachInit /\ [][ReachNext]_reachVars

\* The step taken is `name` (on `of`).
Took(name, of) == lastStep' = [step |-> name, of |-> of]

Reach_submit_state_created == \E k \in Commands : Took("SubmitState", k) /\ status[k] = "NONE"
Never_submit_state_created == [][~Reach_submit_state_created]_reachVars

Reach_submit_state_exists == \E k \in Commands : Took("SubmitState", k) /\ status[k] # "NONE"
Never_submit_state_exists == [][~Reach_submit_state_exists]_reachVars

Reach_offer_added == \E k \in Commands : Took("Offer", k)
Never_offer_added == [][~Reach_offer_added]_reachVars

Reach_receive_new_delivered == \E w \in Workers, k \in Commands : Took("ReceiveNew", w) /\ ReceiveNew(w, k)
Never_receive_new_delivered == [][~Reach_receive_new_delivered]_reachVars

Reach_reclaim_claimed == \E w \in Workers, k \in Commands : Took("Reclaim", w) /\ Reclaim(w, k)
Never_reclaim_claimed == [][~Reach_reclaim_claimed]_reachVars

Reach_guard_take_taken == \E w \in Workers : Took("GuardTake", w) /\ AttemptGuard /\ guard[cmdOf[w]] = NoOne
Never_guard_take_taken == [][~Reach_guard_take_taken]_reachVars

Reach_guard_take_busy == \E w \in Workers : Took("GuardTake", w) /\ AttemptGuard /\ guard[cmdOf[w]] # NoOne
Never_guard_take_busy == [][~Reach_guard_take_busy]_reachVars

Reach_guard_renew_renewed == \E w \in Workers : Took("GuardRenew", w) /\ guard[cmdOf[w]] = w
Never_guard_renew_renewed == [][~Reach_guard_renew_renewed]_reachVars

Reach_guard_renew_lost == \E w \in Workers : Took("GuardRenew", w) /\ guard[cmdOf[w]] # w
Never_guard_renew_lost == [][~Reach_guard_renew_lost]_reachVars

\* Whether w's put_if_owner writes (PutIfOwner's IF).
PutWrites(w) == ~AtomicPutIfOwner \/ ~AttemptGuard \/ guard[cmdOf[w]] = w

Reach_put_if_owner_written == \E w \in Workers : Took("PutIfOwner", w) /\ PutWrites(w)
Never_put_if_owner_written == [][~Reach_put_if_owner_written]_reachVars

Reach_put_if_owner_refused == \E w \in Workers : Took("PutIfOwner", w) /\ ~PutWrites(w)
Never_put_if_owner_refused == [][~Reach_put_if_owner_refused]_reachVars

Reach_external_call_called == \E w \in Workers : Took("ExternalCall", w) /\ ~CallRefused(w)
Never_external_call_called == [][~Reach_external_call_called]_reachVars

Reach_external_call_refused == \E w \in Workers : Took("ExternalCall", w) /\ CallRefused(w)
Never_external_call_refused == [][~Reach_external_call_refused]_reachVars

Reach_guard_release_released == \E w \in Workers : Took("GuardRelease", w) /\ guard[cmdOf[w]] = w
Never_guard_release_released == [][~Reach_guard_release_released]_reachVars

Reach_guard_release_lost == \E w \in Workers : Took("GuardRelease", w) /\ guard[cmdOf[w]] # w
Never_guard_release_lost == [][~Reach_guard_release_lost]_reachVars

Reach_cancel_cancelled == \E k \in Commands : Took("Cancel", k) /\ status'[k] = "CANCELLED" /\ status[k] \notin Terminal
Never_cancel_cancelled == [][~Reach_cancel_cancelled]_reachVars

Reach_cancel_busy == \E k \in Commands : Took("Cancel", k) /\ status[k] \notin Terminal /\ status'[k] = status[k]
Never_cancel_busy == [][~Reach_cancel_busy]_reachVars

Reach_cancel_terminal == \E k \in Commands : Took("Cancel", k) /\ status[k] \in Terminal
Never_cancel_terminal == [][~Reach_cancel_terminal]_reachVars

Reach_ack_acked == \E w \in Workers : Took("Ack", w)
Never_ack_acked == [][~Reach_ack_acked]_reachVars

\* Outside the model (guided/command.yaml): CommandQueue's Ack never fails.
Never_ack_failed == TRUE

\* A situation: a stale attempt's state write refused while another attempt holds the guard
\* (the coverage guard's stale write refused), not after the guard simply expired.
Reach_put_refused_under_live_guard ==
    \E w \in Workers, s \in Statuses :
        /\ Took("PutIfOwner", w) /\ PutIfOwner(w, s) /\ ~PutWrites(w)
        /\ guard[cmdOf[w]] \notin {w, NoOne}
Never_put_refused_under_live_guard == [][~Reach_put_refused_under_live_guard]_reachVars

\* ... and its guard renewal lost while another attempt holds the guard.
Reach_renew_lost_under_live_guard ==
    \E w \in Workers : Took("GuardRenew", w) /\ guard[cmdOf[w]] \notin {w, NoOne}
Never_renew_lost_under_live_guard == [][~Reach_renew_lost_under_live_guard]_reachVars

\* ... and a call that threw: the attempt's early release finds the guard another attempt's
\* (its own lapsed while it stalled), and leaves it (the compare-and-delete).
Reach_release_lost_after_throw ==
    \E w \in Workers : Took("GuardRelease", w) /\ pc[w] = "drop" /\ guard[cmdOf[w]] \notin {w, NoOne}
Never_release_lost_after_throw == [][~Reach_release_lost_after_throw]_reachVars
=============================================================================
