---------------------------- MODULE TraceEngine ----------------------------
(***************************************************************************)
(* The engine's trace spec: each logged line of an engine trace is the     *)
(* Engine action of the same name, taken by the logged node, and its       *)
(* logged fields (outcome, args, the instance and task rows after it) must *)
(* be what that action says.  Contract: traces/README.md; names: the       *)
(* Engine table of tla/README.md.  Checked by `leaseproof traces check`    *)
(* with traces/systems/engine.yaml.                                        *)
(*                                                                         *)
(*   trace op           spec action        store transaction (impl/engine) *)
(*   create_instance    CreateInstance     Store.create_instance           *)
(*   schedule           Schedule           Store.schedule                  *)
(*   schedule_in_memory ScheduleInMemory   Store.schedule(in_memory=True)  *)
(*   update_instance    UpdateInstance     Store.update_instance           *)
(*   fetch              Fetch              Store.fetch                     *)
(*   run_start          RunStart           Store.run_start                 *)
(*   run_end            RunEnd             Store.run_end                   *)
(*   renew              Renew              Store.renew                     *)
(*   remove             Remove             Store.remove                    *)
(*   reschedule_retry   RescheduleRetry    Store.reschedule_retry          *)
(*   mark_failed        MarkFailed         Store.mark_failed               *)
(*                                                                         *)
(* One trace is one workflow (impl/engine/export.py writes one file per    *)
(* workflow, and in Engine a workflow's steps depend only on its own       *)
(* rows): Workflows is one model value W, whatever the trace calls it.     *)
(*                                                                         *)
(* Time: `clock` counts milliseconds since the trace's first event (the    *)
(* checker makes times relative), so Lease, Backoff and RenewAhead are the *)
(* header's lease_ms, retry_backoff_ms and renew_interval_ms.  Engine's    *)
(* Tick moves one unit at a time; here the hidden TraceTick jumps to the   *)
(* next line's `now` in one step, under Tick's timing assumption (no       *)
(* lease a node still holds lapses on the way, unless a fault detached     *)
(* it).  Every logged step happens at clock = its `now`.                   *)
(*                                                                         *)
(* Hidden steps (leave l alone): TraceTick; Engine's ReadInstance (a       *)
(* signal's read, at the version its update logs having read, or just      *)
(* before that update: ReadsAsLogged), AlreadyQueued, Crash, StoreError;   *)
(* Lapse (in place of Engine's OutliveLease and EarlyExpiry); and the      *)
(* environment and implementation quirks collected in ImplQuirk.           *)
(* CallerFails and SignalFails are left out: in a trace a caller that      *)
(* fails and one that never goes on look the same, and the spec never      *)
(* forces a caller on.                                                     *)
(*                                                                         *)
(* No hidden step is free.  A fault is taken at most as often as the       *)
(* header's `faults` says the run had it (impl/engine/faults.py; a kind    *)
(* left out is 0): Crash `faults.crash` times, Lapse `faults.lapse`,       *)
(* StoreError `faults.store_error`.  A Lapse is moreover taken only where  *)
(* the trace's own clock shows the gap it needs: the next line's `now` is  *)
(* at or past the end of the lease it lets go.  Soundness, also on         *)
(* wall-clock traces (engine run on SQLite or MariaDB), where nothing is   *)
(* injected, rests on the lapse count: the holder counts a                 *)
(* lapse when a step it meant to take before its lease's end (a call, a    *)
(* wake-up, taking a queued task) came at or after that end (a stall, a    *)
(* slow commit), read on its own clock after the step, so the count can be *)
(* high (a step that committed in time but returned late) but never low;   *)
(* a lease that ends because the code planned no step before it (renewal  *)
(* off, a bug) is not counted, so no count pays for the bug it would hide. *)
(* The gap rule keeps each lapse where the trace shows it and the search   *)
(* small (an earlier lapse would let the same ticks through later).        *)
(* FinishAttemptsSpent (ImplQuirk) is bounded by the header's             *)
(* max_finish_attempts, counted per taken task (`attempts`).               *)
(*                                                                         *)
(* Every field a check reads is logged and required by the event schema   *)
(* (traces/schema/engine-event.schema.json): the comparisons below read    *)
(* E.args directly, with no fallback to the spec's own value.              *)
(*                                                                         *)
(* Besides the protocol, a trace must keep NoOverlappingRuns: a run_start  *)
(* while another node's run of the workflow is in progress is rejected at  *)
(* that line, even where the header's gates (HONOUR_CHECK off, say) let    *)
(* the protocol reach it.  That is what the trace check is for.            *)
(***************************************************************************)
EXTENDS Engine, TraceData

CONSTANT AutoRenew          \* the header's AUTOMATIC_LEASE_RENEWAL (off: MaxRenewals = 0)
CONSTANT MaxFinishAttempts  \* the header's max_finish_attempts (impl/engine/worker.py run_task)

VARIABLES t, l          \* which trace of the batch; how many of its lines are explained

\* attempts[n][s]: the runs slot s of node n has begun of the task it took last (RunStart from its queue is
\* the first, each rerun one more): finish_task gives a task up only once these are spent.
VARIABLE attempts

W == CHOOSE w \in Workflows : TRUE
E == Traces[t][l + 1]                   \* the next line to explain
Lines == Len(Traces[t])

\* The spec's rows as the trace writes them: JSON null for an absent row.
InstanceView(i) == IF i.status = "ABSENT" THEN Nil ELSE i
TaskView(r) == IF r.status = "ABSENT" THEN Nil ELSE r

\* The next line is an `op`, of the trace's one workflow, committed now.
Logged(op) ==
    /\ l < Lines
    /\ E.op = op
    /\ E.wf = Traces[t][1].wf
    /\ E.now = clock

\* The logged outcome and state after the step, and `extra` fields, agree with the spec.
Agrees(outcome, extra) ==
    Match(t, l + 1, [outcome |-> <<outcome, E.outcome>>,
                     instance |-> <<InstanceView(instance'[W]), E.state.instance>>,
                     task |-> <<TaskView(task'[W]), E.state.task>>] @@ extra)

\* The workflow waits for a signal: its last saved run ended `waiting` and no signal has
\* updated the instance since.
WaitsForSignal ==
    LET saved == {k \in 1..Lines : Traces[t][k].op = "run_end" /\ Traces[t][k].outcome = "saved"}
        last == CHOOSE k \in saved : \A j \in saved : j <= k
    IN /\ saved # {}
       /\ Traces[t][last].args.result = "waiting"
       /\ ~\E k \in (last + 1)..Lines :
              Traces[t][k].op = "update_instance" /\ Traces[t][k].outcome = "updated"

\* RunningIsDriven where a trace ends: a RUNNING workflow that no row, queued copy, run or
\* caller between its writes will drive, and that does not wait for a signal, is stranded
\* (the lost rerun signal of BUMP_TASK_VERSION_ON_HONORED_LEASE off, say).  A finite trace
\* cannot show a liveness violation in general; this one it can, because nothing is left
\* that could ever move the workflow.
Stranded ==
    /\ instance[W].status = "RUNNING"
    /\ task[W].status \notin LiveTask
    /\ \A n \in Nodes : /\ queue[n][W].phase = "none" /\ \A s \in Slots : work[n][W][s].phase = "none"
                       /\ starter[n][W] \notin {"created", "recovering"}
                       /\ signaller[n][W] # "updated"
    /\ ~WaitsForSignal

\* The line is explained: advance the cursor; at the last line the workflow must not be
\* stranded.  Consumed last, so that it prints only on success.  Only a run_start counts
\* finish attempts (IsRunStart sets attempts itself).
Step == /\ l' = l + 1 /\ UNCHANGED t
        /\ E.op # "run_start" => UNCHANGED attempts
        \* impl/engine has no timers (TimerRuns FALSE): only a run_end moves waitsOn.
        /\ UNCHANGED timer
        /\ E.op # "run_end" => UNCHANGED waitsOn
        /\ l + 1 = Lines => Match(t, l + 1, [RunningIsDriven |-> <<Stranded', FALSE>>])
        /\ Consumed(t, l + 1, Lines)

-----------------------------------------------------------------------------
(* One Is<Op> per logged op.                                               *)

IsCreateInstance ==
    /\ Logged("create_instance")
    /\ CreateInstance(E.node, W)
    /\ Agrees(IF instance[W].status = "ABSENT" THEN "created" ELSE "exists", <<>>)
    /\ Step

\* A recovering start with RecoverAfterLease asks for a row due a lease from now.
RequestedRunAfter(n) ==
    IF starter[n][W] = "recovering" /\ starter'[n][W] # "recovering" /\ RecoverAfterLease
    THEN clock + Lease ELSE clock

IsSchedule ==
    /\ Logged("schedule")
    /\ Schedule(E.node, W)
    /\ Agrees(ScheduleOutcome(W, TRUE),
              [run_after |-> <<RequestedRunAfter(E.node), E.args.run_after>>,
               honour_leases |-> <<TRUE, E.args.honour_leases>>])
    /\ Step

IsScheduleInMemory ==
    /\ Logged("schedule_in_memory")
    /\ ScheduleInMemory(E.node, W)
    /\ Agrees(ScheduleOutcome(W, TRUE),
              [run_after |-> <<clock + Lease, E.args.run_after>>,
               honour_leases |-> <<TRUE, E.args.honour_leases>>,
               queued |-> <<queue'[E.node][W].phase = "queued", E.args.queued>>])
    /\ Step

IsUpdateInstance ==
    /\ Logged("update_instance")
    /\ UpdateInstance(E.node, W)
    /\ Agrees(CASE instance[W].status \in Terminal -> "terminal"
                [] instance[W].version = sigRead[E.node][W] -> "updated"
                [] OTHER -> "conflict",
              [version |-> <<sigRead[E.node][W], E.args.version>>])
    /\ Step

IsFetch ==
    /\ Logged("fetch")
    /\ Fetch(E.node, W)
    /\ Agrees("leased", [task_version |-> <<task[W].version, E.args.task_version>>])
    /\ Step

\* Never enabled: a fetch of a live row whose lease has not ended (run_after > now) only
\* prints why the line cannot be explained (a fetch WHERE clause without its run_after guard,
\* a lease comparison off: impl/engine/decide.py decide_fetch, Task.is_due).
FetchUnderLease ==
    /\ Logged("fetch")
    /\ task[W].status \in LiveTask /\ task[W].run_after > clock
    /\ UNCHANGED vars
    /\ Match(t, l + 1, [FetchOnlyDue |->
           <<"leased the row at " \o ToString(clock) \o " under a lease to " \o ToString(task[W].run_after),
             "a fetch only where run_after <= now">>])
    /\ FALSE

\* NoOverlappingRuns, checked where a run begins: runs in progress per node after the line
\* must be this one alone.
RunsAfter(extra) ==
    [m \in Nodes |-> Cardinality({s \in Slots : Running(m, W, s)'}) + (IF m = E.node THEN extra ELSE 0)]
OneRun == [m \in Nodes |-> IF m = E.node THEN 1 ELSE 0]

\* Traces name the node of a run, not its worker thread: a queued task is taken by the node's
\* first free slot (one choice, so that slots do not multiply the search), a rerun by its own.
FirstFree(n) == CHOOSE s \in Slots : SlotFree(n, s)
\* A copy the taker took already (TakenBeforeStart, ImplQuirk) waits in its own slot.
TakesSlot(n, s) ==
    \/ work[n][W][s].phase \in {"rerun", "queued"}
    \/ (\E r \in Slots : SlotFree(n, r)) /\ s = FirstFree(n)

\* Engine's RunStart of a queued task, for a copy TakenBeforeStart put in slot s.
StartTaken(n, s) ==
    /\ work[n][W][s].phase = "queued"
    /\ work' = [work EXCEPT ![n][W][s] = [@ EXCEPT !.phase = "running", !.snap = instance[W].version,
                                                   !.bound = @ \/ LeaseKept(W, work[n][W][s])]]
    /\ UNCHANGED <<instance, task, clock, queue, starter, signaller, budget, sigRead>>

IsRunStart(s) ==
    /\ Logged("run_start")
    /\ TakesSlot(E.node, s)
    /\ RunStart(E.node, W, s) \/ StartTaken(E.node, s)
    /\ attempts' = [attempts EXCEPT ![E.node][s] = IF work[E.node][W][s].phase = "rerun" THEN @ + 1 ELSE 1]
    /\ Agrees("started",
              [source |-> <<work'[E.node][W][s].source, E.args.source>>,
               task_version |-> <<work'[E.node][W][s].version, E.args.task_version>>,
               NoOverlappingRuns |-> <<RunsAfter(0), OneRun>>])
    /\ Step

\* Never enabled: a run_start on a node whose own run is in progress and no slot is free only
\* prints why the line cannot be explained (with a free slot, IsRunStart prints the same).
RunStartOverOwnRun ==
    /\ Logged("run_start")
    /\ \E s \in Slots : Running(E.node, W, s)
    /\ ~\E s \in Slots : SlotFree(E.node, s)
    /\ UNCHANGED vars
    /\ Match(t, l + 1, [NoOverlappingRuns |-> <<RunsAfter(1), OneRun>>])
    /\ FALSE

\* The result RunEnd chose, read from the state it left.  A stale run that owes a rerun
\* leaves the same state whether it completed or waited: then either is the logged one.
RunResult(n, s) ==
    CASE budget'.user < budget.user -> "failed"
      [] work'[n][W][s].phase = "ended" -> work'[n][W][s].result
      [] instance'[W].status = "COMPLETED" /\ instance[W].status # "COMPLETED" -> "completed"
      [] instance'[W].version > instance[W].version -> "waiting"
      [] E.args.result \in {"completed", "waiting"} -> E.args.result
      [] OTHER -> "completed"

IsRunEnd(s) ==
    /\ Logged("run_end")
    /\ RunEnd(E.node, W, s)
    /\ Agrees(IF Fresh(E.node, W, s) THEN "saved" ELSE "conflict",
              [result |-> <<RunResult(E.node, s), E.args.result>>])
    /\ Step

HeldOK(n, s) == task[W].status \in LiveTask /\ task[W].version = work[n][W][s].version

\* The lease a renewal or finishing write is made on: the version and the run_after held
\* (the run_after is what tells a rerun from a lost lease: FinishOutcome).
Held(n, s) == [task_version |-> <<work[n][W][s].version, E.args.task_version>>,
               held_run_after |-> <<work[n][W][s].lease, E.args.held_run_after>>]

IsRenew(s) ==
    /\ Logged("renew")
    /\ AutoRenew
    /\ Renew(E.node, W, s)
    /\ Agrees(IF HeldOK(E.node, s) THEN "renewed" ELSE "conflict",
              Held(E.node, s))
    /\ Step

FinishTrace(n, s, ok) == IF FinishOutcome(n, W, s) = "ok" THEN ok ELSE FinishOutcome(n, W, s)

IsRemove(s) ==
    /\ Logged("remove")
    /\ Remove(E.node, W, s)
    /\ Agrees(FinishTrace(E.node, s, "removed"), Held(E.node, s))
    /\ Step

IsRescheduleRetry(s) ==
    /\ Logged("reschedule_retry")
    /\ RescheduleRetry(E.node, W, s)
    /\ Agrees(IF FinishOutcome(E.node, W, s) = "ok" THEN "rescheduled" ELSE "conflict",
              Held(E.node, s) @@ [run_after |-> <<clock + Backoff, E.args.run_after>>])
    /\ Step

IsMarkFailed(s) ==
    /\ Logged("mark_failed")
    /\ MarkFailed(E.node, W, s)
    /\ Agrees(IF FinishOutcome(E.node, W, s) = "ok" THEN "failed" ELSE "conflict", Held(E.node, s))
    /\ Step

LoggedStep ==
    \/ IsCreateInstance \/ IsSchedule \/ IsScheduleInMemory \/ IsUpdateInstance
    \/ IsFetch \/ RunStartOverOwnRun \/ FetchUnderLease
    \/ \E s \in Slots : \/ IsRunStart(s) \/ IsRunEnd(s) \/ IsRenew(s) \/ IsRemove(s)
                       \/ IsRescheduleRetry(s) \/ IsMarkFailed(s)

-----------------------------------------------------------------------------
(* Hidden steps.                                                           *)

\* Time jumps to the next line's `now`; as in Engine's Tick, never past the end of a lease
\* that a node still holds under the timing assumption.
TraceTick ==
    /\ l < Lines
    /\ clock < E.now
    /\ \A n \in Nodes : HoldsLease(n, W) => task[W].run_after > E.now
    /\ clock' = E.now
    /\ UNCHANGED <<instance, task, queue, work, starter, signaller, sigRead, budget>>

\* Never enabled: time must pass the end of a lease a node holds under the timing assumption,
\* and no fault is left to let it go (no lapse or crash in the budget, the holder's finish
\* attempts not spent).  Only prints why the next line cannot be explained: a worker that
\* dropped a task it had to rerun, a holder that stopped renewing, a lapse the run did not
\* count.
TickPastHeldLease ==
    /\ l < Lines /\ clock < E.now
    /\ \E n \in Nodes : HoldsLease(n, W) /\ task[W].run_after <= E.now
    /\ budget.outlive = 0 /\ budget.crash = 0
    /\ ~\E n \in Nodes, s \in Slots :
          work[n][W][s].phase = "rerun" /\ attempts[n][s] >= MaxFinishAttempts
    /\ LET n == CHOOSE m \in Nodes : HoldsLease(m, W) /\ task[W].run_after <= E.now
           \* the slot holding the lease, if a run holds it (else any: a queued copy holds it)
           held(r) == work[n][W][r].phase # "none" /\ work[n][W][r].lease = task[W].run_after
           s == IF \E r \in Slots : held(r) THEN CHOOSE r \in Slots : held(r)
                ELSE CHOOSE r \in Slots : TRUE
           holds == IF queue[n][W].phase # "none" /\ queue[n][W].lease = task[W].run_after
                    THEN "queued" ELSE work[n][W][s].phase
       IN Match(t, l + 1, [HeldLeaseKept |->
            <<n \o " holds (" \o holds \o ", " \o ToString(attempts[n][s]) \o " of "
                \o ToString(MaxFinishAttempts) \o " finish attempts run) the lease to "
                \o ToString(task[W].run_after) \o ", and this line is at " \o ToString(E.now),
              "a lapse or crash the header counts (lapses left " \o ToString(budget.outlive)
                \o ", crashes left " \o ToString(budget.crash) \o "), or finish attempts spent">>])
    /\ UNCHANGED vars
    /\ FALSE

\* Hidden fault: a lease node n holds on the row lapses under it (a pause, a stall, a slow
\* commit: a step n meant to take before the lease's end came after it).  Engine's OutliveLease (a
\* running handler) and EarlyExpiry (a queued copy) in one step, for whatever n holds with that
\* lease.  Taken only where the next line is at or past the lease's end (the gap is in the
\* trace), and at most `faults.lapse` times (budget.outlive, which engine.yaml fills from it).
Lapse(n) ==
    /\ budget.outlive > 0
    /\ l < Lines
    /\ HoldsLease(n, W)
    /\ task[W].run_after <= E.now
    /\ LET Detach(it) == IF it.phase # "none" /\ it.lease = task[W].run_after
                         THEN [it EXCEPT !.bound = FALSE] ELSE it
       IN /\ queue' = [queue EXCEPT ![n][W] = Detach(@)]
          /\ work' = [work EXCEPT ![n][W] = [s \in Slots |-> Detach(@[s])]]
    /\ budget' = [budget EXCEPT !.outlive = @ - 1]
    /\ UNCHANGED <<instance, task, clock, starter, signaller, sigRead>>

\* Some later line is a signal's update from node n: only then may n signal again (NewSignal;
\* a signal that no update follows explains nothing, and pruning it keeps the search small).
SignalAhead(n) ==
    \E k \in (l + 1)..Lines : Traces[t][k].op = "update_instance" /\ Traces[t][k].node = n

\* n's signal reads the instance at the version its next update logs having read (args.version,
\* which IsUpdateInstance requires of sigRead; no read comes between, as a read needs an idle
\* signaller), or just before that update, whatever the version (so that an update that
\* disagrees is rejected naming the versions): a read at another version earlier explains
\* nothing more, and pruning it keeps the search small. (After the read's own guards: it walks
\* the rest of the trace. An implication, not a disjunction: see WorkQueue's Heartbeats.)
NextUpdates(n) == {k \in (l + 1)..Lines : Traces[t][k].op = "update_instance" /\ Traces[t][k].node = n}
ReadsAsLogged(n) ==
    \E ks \in {NextUpdates(n)} :
        /\ ks # {}
        /\ \E next \in {CHOOSE k \in ks : \A j \in ks : k <= j} :
              next # l + 1 => instance[W].version = Traces[t][next].args.version

EngineHidden(n) ==
    \/ ReadInstance(n, W) /\ ReadsAsLogged(n)
    \/ AlreadyQueued(n, W)
    \/ Crash(n)
    \/ Lapse(n)
    \/ \E s \in Slots : StoreError(n, W, s)

(* The environment and the implementation where they differ from Engine, in one place:   *)
(*  - NewStart / NewSignal: Engine's callers start and signal once per node; a program    *)
(*    may call again on the same node once its last call is done (engine tests do).       *)
(*  - FinishAttemptsSpent: finish_task runs a task at most max_finish_attempts times      *)
(*    (impl/engine/worker.py); a worker about to rerun gives the task up once it has run  *)
(*    that many times, and its lease lapses (Engine leaves this bound out: reruns are     *)
(*    bounded by the bumps).  Before then, a worker that logged `remove: rerun` must run  *)
(*    again: dropping the task is the bug TickPastHeldLease names.                        *)
(*  - TakenBeforeStart: the taker takes n's queued copy off its queue (queue.py take) a   *)
(*    step before the run's run_start commits (worker.py run_task); Engine's RunStart     *)
(*    does both in one step.  In between the copy is in no queue, as the seed has it ("a  *)
(*    second schedule from the node whose copy is running queues nothing":                *)
(*    tests/engine/test_seed_cases.py), so a schedule_in_memory on n writes, honouring    *)
(*    the copy's lease (bumped, nothing queued, the run then owes a rerun), and a fetch   *)
(*    on n may lease a lapsed row.  The taken copy waits in the slot that will run it, as *)
(*    phase "queued", holding its lease (HoldsLease); StartTaken begins its run.  Taken   *)
(*    only where the next line is n's schedule_in_memory or fetch, the lines it explains  *)
(*    (an earlier take explains nothing more, and pruning it keeps the search small).     *)
NewStart(n) ==
    /\ l < Lines /\ E.op = "create_instance" /\ E.node = n
    /\ starter[n][W] \in {"awaiting", "polling"} \cup AnswerPhases
    /\ starter' = [starter EXCEPT ![n][W] = "idle"]
    /\ UNCHANGED <<instance, task, clock, queue, work, signaller, sigRead, budget>>

NewSignal(n) ==
    /\ signaller[n][W] \in {"awaiting", "polling"} \cup AnswerPhases
    /\ SignalAhead(n)
    /\ signaller' = [signaller EXCEPT ![n][W] = "idle"]
    /\ UNCHANGED <<instance, task, clock, queue, work, starter, sigRead, budget>>

FinishAttemptsSpent(n) ==
    \E s \in Slots :
        /\ work[n][W][s].phase = "rerun"
        /\ attempts[n][s] >= MaxFinishAttempts
        /\ work' = [work EXCEPT ![n][W][s] = NoItem]
        /\ UNCHANGED <<instance, task, clock, queue, starter, signaller, sigRead, budget>>

TakenBeforeStart(n) ==
    /\ l < Lines /\ E.node = n /\ E.op \in {"schedule_in_memory", "fetch"}
    /\ queue[n][W].phase = "queued"
    /\ \E r \in Slots : SlotFree(n, r)
    /\ work' = [work EXCEPT ![n][W][FirstFree(n)] = queue[n][W]]
    /\ queue' = [queue EXCEPT ![n][W] = NoItem]
    /\ UNCHANGED <<instance, task, clock, starter, signaller, sigRead, budget>>

ImplQuirk(n) == NewStart(n) \/ NewSignal(n) \/ FinishAttemptsSpent(n) \/ TakenBeforeStart(n)

Hidden ==
    /\ \/ TraceTick
       \/ \E n \in Nodes : EngineHidden(n) \/ ImplQuirk(n)
    /\ UNCHANGED <<t, l, attempts, waitsOn, timer>>

-----------------------------------------------------------------------------
TraceInit == t \in 1..Len(Traces) /\ l = 0 /\ attempts = [n \in Nodes |-> [s \in Slots |-> 0]] /\ Init

TraceNext == LoggedStep \/ Hidden \/ TickPastHeldLease

=============================================================================
