------------------------------ MODULE MCEngine ------------------------------
(***************************************************************************)
(* Bounds for the engine models in models/engine/.  The model files set    *)
(* the constants and gates of Engine; this module adds what only model     *)
(* checking needs.                                                         *)
(***************************************************************************)
EXTENDS Engine

\* A safety net: versions stay small in every model we check, so a run that leaves this
\* bound means a budget is missing somewhere, or (in a spec mutant) writes that never stop.
\* The models of the spec mutation matrix (mutants/specs/engine.yaml) check it; its
\* calibration is versions_past_bound.
MaxVersion == 12
StateBound ==
    \A w \in Workflows : instance[w].version <= MaxVersion /\ task[w].version <= MaxVersion

\* The checks that every model states: one name, so a model file lists it once.
SafetyInv == TypeOK /\ NoOverlappingRuns /\ RunningIsDriven

\* TypeOK's calibration (clock_past_window): Next plus a Tick that, at MaxClock, moves the
\* clock on instead of shifting the stored times, so that ClockOK fails: TypeOK bounds time.
TickPastWindow ==
    /\ clock = MaxClock
    /\ ENABLED Tick
    /\ clock' = clock + 1
    /\ UNCHANGED <<instance, task, queue, work, starter, signaller, sigRead, budget, timerVars,
                   hist>>
NextPastWindow == Next \/ TickPastWindow

\* TimerOnTime's calibration (timer_fetched_early): Next plus a fetch of a TIMER row before it
\* is due, the bug of a due check that compares the wrong way or not at all.
FetchTimerEarly ==
    \E n \in Nodes, w \in Workflows :
        /\ timer[w].row.status \in LiveTask
        /\ timer[w].row.run_after > clock
        /\ LeaseTimer(n, w)
NextTimerEarly == Next \/ FetchTimerEarly

\* OverlapNeedsLapse's calibration (copy_bound_at_lease_end): Next plus a take that counts a
\* lapsed copy whose lease ends this very tick as still held (LeaseKept's `>` made `>=`).
TakeAtLeaseEnd ==
    \E n \in Nodes, w \in Workflows, s \in Slots :
        /\ SlotFree(n, s)
        /\ queue[n][w].phase = "queued" /\ ~queue[n][w].bound
        /\ task[w].status \in LiveTask /\ task[w].run_after = queue[n][w].lease
        /\ queue[n][w].lease = clock
        /\ TakeCopy(n, w, s, TRUE)
        /\ UNCHANGED timerVars
NextTakeAtLeaseEnd == Next \/ TakeAtLeaseEnd

\* DeadLetterEarned's calibration (dead_letter_before_retries): Next plus a mark_failed of a
\* failed run whose retries are not spent (the bug of a retry check dropped or reversed).
DeadLetterEarly ==
    \E n \in Nodes, w \in Workflows, s \in Slots :
        /\ work[n][w][s].phase = "ended"
        /\ work[n][w][s].result = "failed"
        /\ work[n][w][s].retry < MaxRetries
        /\ DeadLetter(n, w, s)
        /\ UNCHANGED timerVars
NextDeadLetterEarly == Next \/ DeadLetterEarly

\* DeadLetterFailsWorkflow's calibration (dead_letter_after_completion): Next plus a mark_failed
\* of a run that completed (the bug of a finishing path that takes any ended run for a failed
\* one): the row is dead-lettered while the instance stays COMPLETED.
DeadLetterCompleted ==
    \E n \in Nodes, w \in Workflows, s \in Slots :
        /\ work[n][w][s].phase = "ended"
        /\ work[n][w][s].result = "completed"
        /\ work[n][w][s].retry >= MaxRetries
        /\ DeadLetter(n, w, s)
        /\ UNCHANGED timerVars
NextDeadLetterCompleted == Next \/ DeadLetterCompleted

\* SlotsFreed's calibration (retry_keeps_slot): Spec with Next plus a reschedule_retry that never
\* gives its slot back (the bug of a retry path that forgets to free the worker slot): the row is
\* rescheduled as RescheduleRetry does, and the slot keeps an ended item that no finishing step
\* takes.  A liveness calibration, so a specification with Engine's fairness.  (RescheduleRetry's
\* writes are repeated here, not factored out of it: that would renumber its generated spec mutants.)
RetryKeepsSlot ==
    \E n \in Nodes, w \in Workflows, s \in Slots :
        /\ work[n][w][s].phase = "ended"
        /\ work[n][w][s].result = "failed"
        /\ work[n][w][s].retry < MaxRetries
        /\ task' = IF FinishOutcome(n, w, s) = "ok"
                   THEN [task EXCEPT ![w].status = "PENDING", ![w].run_after = clock + Backoff,
                                     ![w].version = @ + 1]
                   ELSE task
        /\ hist' = IF FinishOutcome(n, w, s) = "ok" THEN TaskWrote(w, work[n][w][s]) ELSE hist
        /\ work' = [work EXCEPT ![n][w][s].result = "none"]
        /\ UNCHANGED <<instance, clock, queue, starter, signaller, budget, sigRead>>
        /\ UNCHANGED timerVars
SpecRetryKeepsSlot == Init /\ [][Next \/ RetryKeepsSlot]_vars /\ NoLongPauses /\ WorkersProgress

\* Reachability witnesses: each must be violated by the model that lists it, which shows
\* that the model reaches the path its verdict is about (a guard against a vacuous ok).
NeverCompletedInv == \A w \in Workflows : instance[w].status # "COMPLETED"
NeverRerunInv == \A n \in Nodes, w \in Workflows, s \in Slots : work[n][w][s].phase # "rerun"
NeverRecoveredInv == \A n \in Nodes, w \in Workflows : starter[n][w] # "recovering"
NeverDeadLetteredInv == \A w \in Workflows : task[w].status # "FAILED"
\* A timer that fired while the run that armed it still held the task: the firing's schedule
\* was honoured (and bumped), so the holder reruns.
NeverFiredUnderLeaseInv ==
    \A n \in Nodes, w \in Workflows, s \in Slots :
        ~(timer[w].entry = "fired" /\ work[n][w][s].phase = "rerun" /\ waitsOn[w] = "timer")

\* Finding 3's path, as the seed tells it: a copy still waits in n's queue, its lease lapsed
\* (EarlyExpiry), while another node runs the row it fetched; the copy's RunStart, enabled
\* here, is the overlap.
NeverLapsedCopyWaitsInv ==
    \A n, m \in Nodes, w \in Workflows, r \in Slots :
        ~ /\ n # m
          /\ queue[n][w].phase = "queued" /\ queue[n][w].source = "memory" /\ ~queue[n][w].bound
          /\ Running(m, w, r) /\ work[m][w][r].source = "store"

=============================================================================
