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
(* signal's read), AlreadyQueued, Crash, OutliveLease, EarlyExpiry,        *)
(* StoreError; and the environment and implementation quirks collected in  *)
(* ImplQuirk.  CallerFails and SignalFails are left out: in a trace a      *)
(* caller that fails and one that never goes on look the same, and the     *)
(* spec never forces a caller on.                                          *)
(*                                                                         *)
(* Besides the protocol, a trace must keep NoOverlappingRuns: a run_start  *)
(* while another node's run of the workflow is in progress is rejected at  *)
(* that line, even where the header's gates (HONOUR_CHECK off, say) let    *)
(* the protocol reach it.  That is what the trace check is for.            *)
(***************************************************************************)
EXTENDS Engine, TraceData

CONSTANT AutoRenew      \* the header's AUTOMATIC_LEASE_RENEWAL (off: MaxRenewals = 0)

VARIABLES t, l          \* which trace of the batch; how many of its lines are explained

W == CHOOSE w \in Workflows : TRUE
E == Traces[t][l + 1]                   \* the next line to explain
Lines == Len(Traces[t])

\* The spec's rows as the trace writes them: JSON null for an absent row.
InstanceView(i) == IF i.status = "ABSENT" THEN Nil ELSE i
TaskView(r) == IF r.status = "ABSENT" THEN Nil ELSE r

\* An argument of the line, or `none` when the line does not carry it.
Arg(name, none) == IF name \in DOMAIN E.args THEN E.args[name] ELSE none

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
    /\ \A n \in Nodes : /\ queue[n][W].phase = "none" /\ work[n][W].phase = "none"
                       /\ starter[n][W] \notin {"created", "recovering"}
                       /\ signaller[n][W] # "updated"
    /\ ~WaitsForSignal

\* The line is explained: advance the cursor; at the last line the workflow must not be
\* stranded.  Consumed last, so that it prints only on success.
Step == /\ l' = l + 1 /\ UNCHANGED t
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
              [run_after |-> <<RequestedRunAfter(E.node), Arg("run_after", Nil)>>,
               honour_leases |-> <<TRUE, Arg("honour_leases", Nil)>>])
    /\ Step

IsScheduleInMemory ==
    /\ Logged("schedule_in_memory")
    /\ ScheduleInMemory(E.node, W)
    /\ Agrees(ScheduleOutcome(W, TRUE),
              [run_after |-> <<clock + Lease, Arg("run_after", Nil)>>,
               honour_leases |-> <<TRUE, Arg("honour_leases", Nil)>>,
               queued |-> <<queue'[E.node][W].phase = "queued", Arg("queued", Nil)>>])
    /\ Step

IsUpdateInstance ==
    /\ Logged("update_instance")
    /\ UpdateInstance(E.node, W)
    /\ Agrees(CASE instance[W].status \in Terminal -> "terminal"
                [] instance[W].version = sigRead[E.node][W] -> "updated"
                [] OTHER -> "conflict",
              [version |-> <<sigRead[E.node][W], Arg("version", sigRead[E.node][W])>>])
    /\ Step

IsFetch ==
    /\ Logged("fetch")
    /\ Fetch(E.node, W)
    /\ Agrees("leased", [task_version |-> <<task[W].version, Arg("task_version", task[W].version)>>])
    /\ Step

\* NoOverlappingRuns, checked where a run begins: runs in progress per node after the line
\* must be this one alone.
RunsAfter(extra) ==
    [m \in Nodes |-> (IF Running(m, W)' THEN 1 ELSE 0) + (IF m = E.node THEN extra ELSE 0)]
OneRun == [m \in Nodes |-> IF m = E.node THEN 1 ELSE 0]

IsRunStart ==
    /\ Logged("run_start")
    /\ RunStart(E.node, W)
    /\ Agrees("started",
              [source |-> <<work'[E.node][W].source, Arg("source", Nil)>>,
               task_version |-> <<work'[E.node][W].version, Arg("task_version", Nil)>>,
               NoOverlappingRuns |-> <<RunsAfter(0), OneRun>>])
    /\ Step

\* Never enabled: a run_start on a node whose own run is in progress (Engine has one worker
\* slot per workflow and node) only prints why the line cannot be explained.
RunStartOverOwnRun ==
    /\ Logged("run_start")
    /\ Running(E.node, W)
    /\ UNCHANGED vars
    /\ Match(t, l + 1, [NoOverlappingRuns |-> <<RunsAfter(1), OneRun>>])
    /\ FALSE

\* The result RunEnd chose, read from the state it left.  A stale run that owes a rerun
\* leaves the same state whether it completed or waited: then either is the logged one.
RunResult(n) ==
    CASE budget'.user < budget.user -> "failed"
      [] work'[n][W].phase = "ended" -> work'[n][W].result
      [] instance'[W].status = "COMPLETED" /\ instance[W].status # "COMPLETED" -> "completed"
      [] instance'[W].version > instance[W].version -> "waiting"
      [] Arg("result", Nil) \in {"completed", "waiting"} -> Arg("result", Nil)
      [] OTHER -> "completed"

IsRunEnd ==
    /\ Logged("run_end")
    /\ RunEnd(E.node, W)
    /\ Agrees(IF instance[W].status = "RUNNING" /\ instance[W].version = work[E.node][W].snap
              THEN "saved" ELSE "conflict",
              [result |-> <<RunResult(E.node), Arg("result", Nil)>>])
    /\ Step

HeldOK(n) == task[W].status \in LiveTask /\ task[W].version = work[n][W].version

IsRenew ==
    /\ Logged("renew")
    /\ AutoRenew
    /\ Renew(E.node, W)
    /\ Agrees(IF HeldOK(E.node) THEN "renewed" ELSE "conflict",
              [task_version |-> <<work[E.node][W].version, Arg("task_version", work[E.node][W].version)>>])
    /\ Step

FinishTrace(n, ok) == IF FinishOutcome(n, W) = "ok" THEN ok ELSE FinishOutcome(n, W)

IsRemove ==
    /\ Logged("remove")
    /\ Remove(E.node, W)
    /\ Agrees(FinishTrace(E.node, "removed"),
              [task_version |-> <<work[E.node][W].version, Arg("task_version", work[E.node][W].version)>>])
    /\ Step

IsRescheduleRetry ==
    /\ Logged("reschedule_retry")
    /\ RescheduleRetry(E.node, W)
    /\ Agrees(IF FinishOutcome(E.node, W) = "ok" THEN "rescheduled" ELSE "conflict",
              [task_version |-> <<work[E.node][W].version, Arg("task_version", work[E.node][W].version)>>,
               run_after |-> <<clock + Backoff, Arg("run_after", clock + Backoff)>>])
    /\ Step

IsMarkFailed ==
    /\ Logged("mark_failed")
    /\ MarkFailed(E.node, W)
    /\ Agrees(IF FinishOutcome(E.node, W) = "ok" THEN "failed" ELSE "conflict",
              [task_version |-> <<work[E.node][W].version, Arg("task_version", work[E.node][W].version)>>])
    /\ Step

LoggedStep ==
    \/ IsCreateInstance \/ IsSchedule \/ IsScheduleInMemory \/ IsUpdateInstance
    \/ IsFetch \/ IsRunStart \/ IsRunEnd \/ IsRenew \/ IsRemove \/ IsRescheduleRetry
    \/ IsMarkFailed \/ RunStartOverOwnRun

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

\* Some later line is a signal's update from node n: only then may n's signal read (a read
\* that no update follows explains nothing, and pruning it keeps the search small).
SignalAhead(n) ==
    \E k \in (l + 1)..Lines : Traces[t][k].op = "update_instance" /\ Traces[t][k].node = n

EngineHidden(n) ==
    \/ SignalAhead(n) /\ ReadInstance(n, W)
    \/ AlreadyQueued(n, W)
    \/ Crash(n)
    \/ OutliveLease(n, W)
    \/ EarlyExpiry(n, W)
    \/ StoreError(n, W)

(* The environment and the implementation where they differ from Engine, in one place:   *)
(*  - NewStart / NewSignal: Engine's callers start and signal once per node; a program    *)
(*    may call again on the same node once its last call is done (engine tests do).       *)
(*  - FinishAttemptsSpent: finish_task runs a task at most max_finish_attempts times      *)
(*    (impl/engine/worker.py); a worker about to rerun may give the task up, and its      *)
(*    lease lapses (Engine leaves this bound out: reruns are bounded by the bumps).       *)
NewStart(n) ==
    /\ l < Lines /\ E.op = "create_instance" /\ E.node = n
    /\ starter[n][W] \in {"awaiting", "polling"}
    /\ starter' = [starter EXCEPT ![n][W] = "idle"]
    /\ UNCHANGED <<instance, task, clock, queue, work, signaller, sigRead, budget>>

NewSignal(n) ==
    /\ SignalAhead(n)
    /\ signaller[n][W] \in {"awaiting", "polling"}
    /\ signaller' = [signaller EXCEPT ![n][W] = "idle"]
    /\ UNCHANGED <<instance, task, clock, queue, work, starter, sigRead, budget>>

FinishAttemptsSpent(n) ==
    /\ work[n][W].phase = "rerun"
    /\ work' = [work EXCEPT ![n][W] = NoItem]
    /\ UNCHANGED <<instance, task, clock, queue, starter, signaller, sigRead, budget>>

ImplQuirk(n) == NewStart(n) \/ NewSignal(n) \/ FinishAttemptsSpent(n)

Hidden ==
    /\ \/ TraceTick
       \/ \E n \in Nodes : EngineHidden(n) \/ ImplQuirk(n)
    /\ UNCHANGED <<t, l>>

-----------------------------------------------------------------------------
TraceInit == t \in 1..Len(Traces) /\ l = 0 /\ Init

TraceNext == LoggedStep \/ Hidden

=============================================================================
