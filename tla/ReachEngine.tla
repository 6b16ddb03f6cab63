----------------------------- MODULE ReachEngine -----------------------------
(***************************************************************************)
(* Reach targets of the engine's model-guided workloads (conformance/      *)
(* guided).  One action property per outcome of TraceEngine's Outcomes     *)
(* table: Never_<op>_<outcome> is violated by the first behaviour that     *)
(* takes that logged step with that outcome, so TLC's counterexample is a  *)
(* shortest behaviour of the model that reaches it, which the replay then  *)
(* drives the engine along.  Each outcome is TraceEngine's for that step.  *)
(***************************************************************************)
EXTENDS MCEngine

\* History for one situation (renew_renewed_after_two_adoptions): the renew conflicts each run
\* adopted since it started running (Renew's RenewAdoptsRerun branch: the run takes the row's
\* version, keeps its lease and its renewal count), back to 0 when the slot is not running.
\* Counted up to 2 only, which is all the situation asks, so that the history multiplies the
\* model's states as little as it can.
VARIABLE adoptions
reachVars == <<vars, adoptions>>
Adopts(n, w, s) ==
    /\ Renew(n, w, s)
    /\ work'[n][w][s].version # work[n][w][s].version
    /\ work'[n][w][s].renewals = work[n][w][s].renewals
ReachInit == Init /\ adoptions = [n \in Nodes |-> [w \in Workflows |-> [s \in Slots |-> 0]]]
ReachNext ==
    /\ Next
    /\ adoptions' = [n \in Nodes |-> [w \in Workflows |-> [s \in Slots |->
                       IF work'[n][w][s].phase # "running" THEN 0
                       ELSE IF Adopts(n, w, s) /\ adoptions[n][w][s] < 2 THEN adoptions[n][w][s] + 1
                       ELSE adoptions[n][w][s]]]]
ReachSpec == ReachInit /\ [][ReachNext]_reachVars

Reach_create_instance_created == \E n \in Nodes, w \in Workflows : CreateInstance(n, w) /\ instance[w].status = "ABSENT"
Never_create_instance_created == [][~Reach_create_instance_created]_vars

Reach_create_instance_exists == \E n \in Nodes, w \in Workflows : CreateInstance(n, w) /\ instance[w].status # "ABSENT"
Never_create_instance_exists == [][~Reach_create_instance_exists]_vars

Reach_schedule_inserted == \E n \in Nodes, w \in Workflows : Schedule(n, w) /\ ScheduleOutcome(w, TRUE) = "inserted"
Never_schedule_inserted == [][~Reach_schedule_inserted]_vars

Reach_schedule_bumped == \E n \in Nodes, w \in Workflows : Schedule(n, w) /\ ScheduleOutcome(w, TRUE) = "bumped"
Never_schedule_bumped == [][~Reach_schedule_bumped]_vars

Reach_schedule_honoured == \E n \in Nodes, w \in Workflows : Schedule(n, w) /\ ScheduleOutcome(w, TRUE) = "honoured"
Never_schedule_honoured == [][~Reach_schedule_honoured]_vars

Reach_schedule_overwritten == \E n \in Nodes, w \in Workflows : Schedule(n, w) /\ ScheduleOutcome(w, TRUE) = "overwritten"
Never_schedule_overwritten == [][~Reach_schedule_overwritten]_vars

Reach_schedule_in_memory_inserted == \E n \in Nodes, w \in Workflows : ScheduleInMemory(n, w) /\ ScheduleOutcome(w, TRUE) = "inserted"
Never_schedule_in_memory_inserted == [][~Reach_schedule_in_memory_inserted]_vars

Reach_schedule_in_memory_bumped == \E n \in Nodes, w \in Workflows : ScheduleInMemory(n, w) /\ ScheduleOutcome(w, TRUE) = "bumped"
Never_schedule_in_memory_bumped == [][~Reach_schedule_in_memory_bumped]_vars

Reach_schedule_in_memory_honoured == \E n \in Nodes, w \in Workflows : ScheduleInMemory(n, w) /\ ScheduleOutcome(w, TRUE) = "honoured"
Never_schedule_in_memory_honoured == [][~Reach_schedule_in_memory_honoured]_vars

Reach_schedule_in_memory_overwritten == \E n \in Nodes, w \in Workflows : ScheduleInMemory(n, w) /\ ScheduleOutcome(w, TRUE) = "overwritten"
Never_schedule_in_memory_overwritten == [][~Reach_schedule_in_memory_overwritten]_vars

Reach_update_instance_terminal == \E n \in Nodes, w \in Workflows : UpdateInstance(n, w) /\ instance[w].status \in Terminal
Never_update_instance_terminal == [][~Reach_update_instance_terminal]_vars

Reach_update_instance_updated == \E n \in Nodes, w \in Workflows : UpdateInstance(n, w) /\ instance[w].status \notin Terminal /\ instance[w].version = sigRead[n][w]
Never_update_instance_updated == [][~Reach_update_instance_updated]_vars

Reach_update_instance_conflict == \E n \in Nodes, w \in Workflows : UpdateInstance(n, w) /\ instance[w].status \notin Terminal /\ instance[w].version # sigRead[n][w]
Never_update_instance_conflict == [][~Reach_update_instance_conflict]_vars

Reach_fetch_leased == \E n \in Nodes, w \in Workflows : Fetch(n, w)
Never_fetch_leased == [][~Reach_fetch_leased]_vars

Reach_run_start_started == \E n \in Nodes, w \in Workflows, s \in Slots : RunStart(n, w, s)
Never_run_start_started == [][~Reach_run_start_started]_vars

Reach_run_end_saved == \E n \in Nodes, w \in Workflows, s \in Slots : RunEnd(n, w, s) /\ Fresh(n, w, s)
Never_run_end_saved == [][~Reach_run_end_saved]_vars

Reach_run_end_conflict == \E n \in Nodes, w \in Workflows, s \in Slots : RunEnd(n, w, s) /\ ~Fresh(n, w, s)
Never_run_end_conflict == [][~Reach_run_end_conflict]_vars

Reach_renew_renewed == \E n \in Nodes, w \in Workflows, s \in Slots : Renew(n, w, s) /\ task[w].status \in LiveTask /\ task[w].version = work[n][w][s].version
Never_renew_renewed == [][~Reach_renew_renewed]_vars

Reach_renew_conflict == \E n \in Nodes, w \in Workflows, s \in Slots : Renew(n, w, s) /\ ~(task[w].status \in LiveTask /\ task[w].version = work[n][w][s].version)
Never_renew_conflict == [][~Reach_renew_conflict]_vars

Reach_remove_removed == \E n \in Nodes, w \in Workflows, s \in Slots : Remove(n, w, s) /\ FinishOutcome(n, w, s) = "ok"
Never_remove_removed == [][~Reach_remove_removed]_vars

Reach_remove_rerun == \E n \in Nodes, w \in Workflows, s \in Slots : Remove(n, w, s) /\ FinishOutcome(n, w, s) = "rerun"
Never_remove_rerun == [][~Reach_remove_rerun]_vars

Reach_remove_lost == \E n \in Nodes, w \in Workflows, s \in Slots : Remove(n, w, s) /\ FinishOutcome(n, w, s) = "lost"
Never_remove_lost == [][~Reach_remove_lost]_vars

Reach_remove_gone == \E n \in Nodes, w \in Workflows, s \in Slots : Remove(n, w, s) /\ FinishOutcome(n, w, s) = "gone"
Never_remove_gone == [][~Reach_remove_gone]_vars

Reach_reschedule_retry_rescheduled == \E n \in Nodes, w \in Workflows, s \in Slots : RescheduleRetry(n, w, s) /\ FinishOutcome(n, w, s) = "ok"
Never_reschedule_retry_rescheduled == [][~Reach_reschedule_retry_rescheduled]_vars

Reach_reschedule_retry_conflict == \E n \in Nodes, w \in Workflows, s \in Slots : RescheduleRetry(n, w, s) /\ FinishOutcome(n, w, s) # "ok"
Never_reschedule_retry_conflict == [][~Reach_reschedule_retry_conflict]_vars

Reach_mark_failed_failed == \E n \in Nodes, w \in Workflows, s \in Slots : MarkFailed(n, w, s) /\ FinishOutcome(n, w, s) = "ok"
Never_mark_failed_failed == [][~Reach_mark_failed_failed]_vars

Reach_mark_failed_conflict == \E n \in Nodes, w \in Workflows, s \in Slots : MarkFailed(n, w, s) /\ FinishOutcome(n, w, s) # "ok"
Never_mark_failed_conflict == [][~Reach_mark_failed_conflict]_vars

\* Situations (guided/engine.yaml `situations`): a step and outcome in a particular state.
\* A stale remove refused while another node holds the lease it lost (the coverage guard's
\* "stale finish refused while another node holds the lease"), not after it simply lapsed.
Reach_remove_lost_under_live_lease ==
    \E n \in Nodes, w \in Workflows, s \in Slots :
        /\ Remove(n, w, s) /\ FinishOutcome(n, w, s) = "lost"
        /\ task[w].status = "RUNNING" /\ task[w].run_after > clock
        /\ \E m \in Nodes \ {n} : HoldsLease(m, w)
Never_remove_lost_under_live_lease == [][~Reach_remove_lost_under_live_lease]_vars

\* A run that adopted one rerun (its renewal met a bump and took the row's version) meets a
\* second bump at its next renewal: two renew conflicts in a row.
Reach_renew_conflict_after_adopting ==
    \E n \in Nodes, w \in Workflows, s \in Slots :
        /\ Renew(n, w, s) /\ work[n][w][s].owed
        /\ ~(task[w].status \in LiveTask /\ task[w].version = work[n][w][s].version)
Never_renew_conflict_after_adopting == [][~Reach_renew_conflict_after_adopting]_vars

\* A run that adopted two reruns in a row (its renewal met a bump, then a second one) renews
\* again at the row's version: it kept renewing (Renew adopts at each conflict), rather than
\* let its lease lapse under it.
Reach_renew_renewed_after_two_adoptions ==
    \E n \in Nodes, w \in Workflows, s \in Slots :
        /\ Renew(n, w, s) /\ adoptions[n][w][s] >= 2
        /\ task[w].status \in LiveTask /\ task[w].version = work[n][w][s].version
Never_renew_renewed_after_two_adoptions == [][~Reach_renew_renewed_after_two_adoptions]_vars
=============================================================================
