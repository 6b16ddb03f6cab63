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
(* No hidden step is free: faults are lines of the trace                   *)
(* (impl/engine/faults.py), logged where they happened by the node they    *)
(* hit. A crash line is Crash at its place; a pause or stall window (start *)
(* ... end) lets a lease of its node lapse while open; a lapse line,       *)
(* logged by the holder when a step it meant to take before its lease's    *)
(* end came at or after it (read on its own clock after the step), lets    *)
(* that lease lapse and is checked where it stands (the lease held, meant  *)
(* before its end, logged after it).  A Lapse is taken only where a fault  *)
(* line lets it (LapseExcuse) and the trace's own clock shows the gap (the *)
(* next line's `now` at or past the lease's end); the acceptance names the *)
(* lines it needed.  A lease that ends because the code planned no step    *)
(* before it (renewal off, a bug) has no line, so no line pays for the bug *)
(* it would hide.  The header counts nothing.  What a start's caller was   *)
(* told is a line too (answer), checked against what the spec owes it; a   *)
(* drained trace ends with every caller answered and every signal          *)
(* scheduled.                                                              *)
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

\* The header's `drained`: the run ended with nothing left to do. Then the trace must end where
\* the work is done: every start's caller answered, no signal left unscheduled. One value per
\* trace of the batch: trace t's is Drained[t].
CONSTANT Drained

\* What the fault lines and the answer lines have said (impl/engine/faults.py, node.py).
VARIABLES
    win,    \* [Nodes -> [Windows -> Nat]]: the line that opened n's pause or stall (0: none open)
    held,   \* [Nodes -> SUBSET Int]: the lease ends n has held a copy or a run on (a lapse line's
            \* lease must be one of them)
    owed,   \* [Nodes -> Owed]: what the spec owes n's start caller and no answer line has told it:
            \* "unavailable" (ResultUnavailable), "run" or "store" (the result, from the run that
            \* finished the workflow here, or read from the store), "none", "told"
    used    \* the fault lines a hidden step needed (their line numbers)
lineVars == <<win, held, owed, used>>

Windows == {"pause", "stall"}
FaultOps == Windows \cup {"crash", "lapse", "store_error"}

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

\* Every outcome the spec can give each logged store step: the requirements of a trace set's
\* spec coverage (conformance/traces/spec_coverage.py reads this table; the system file says
\* which of them the designed code cannot reach, and why). Agrees holds the spec to it, so the
\* table cannot miss an outcome the spec gives.
Outcomes == [create_instance |-> {"created", "exists"},
             schedule |-> {"inserted", "bumped", "honoured", "overwritten"},
             schedule_in_memory |-> {"inserted", "bumped", "honoured", "overwritten"},
             update_instance |-> {"updated", "conflict", "terminal"},
             fetch |-> {"leased"},
             run_start |-> {"started"},
             run_end |-> {"saved", "conflict"},
             renew |-> {"renewed", "conflict"},
             remove |-> {"removed", "rerun", "lost", "gone"},
             reschedule_retry |-> {"rescheduled", "conflict"},
             mark_failed |-> {"failed", "conflict"}]

\* The logged outcome and state after the step, and `extra` fields, agree with the spec.
Agrees(outcome, extra) ==
    Match(t, l + 1, [outcome |-> <<outcome, E.outcome>>,
                     outcome_in_Outcomes |-> <<E.op \in DOMAIN Outcomes /\ outcome \in Outcomes[E.op], TRUE>>,
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

\* What the spec owes n's start caller after a step: ResultUnavailable once it polls, the result
\* once a run answered its future (from the run that saved it, or, where its save conflicted
\* with a finished workflow, from the store: AnswerFromStore), nothing once its node crashed or
\* it starts again; else what it was owed.
OwedAfter(n) ==
    CASE starter'[n][W] = "polling" /\ starter[n][W] # "polling" -> "unavailable"
      [] starter'[n][W] = "done" /\ starter[n][W] = "awaiting" ->
            IF E.op = "run_end" /\ E.outcome = "conflict" THEN "store" ELSE "run"
      [] starter'[n][W] \in {"idle", "lost", "failed"} /\ starter[n][W] # starter'[n][W] -> "none"
      [] OTHER -> owed[n]
OwedStep == owed' = [n \in Nodes |-> OwedAfter(n)]

\* The lease ends each node holds a copy or a run on, after the step, added to `held`.
HeldStep == held' = [n \in Nodes |-> held[n] \cup {it.lease : it \in {it \in {queue'[n][W]} \cup
                                         {work'[n][W][s] : s \in Slots} : it.phase # "none"}}]

\* At the end of a drained run: callers still owed an answer (between their two writes, waiting
\* for a workflow that never finished, or owed an answer line), and signals read or written but
\* never scheduled.  An awaiting caller of a finished workflow is answered: node.result reads
\* storage while it waits for its future (a workflow that waited for a signal and then finished
\* on another node never completes this node's future; Engine's awaiting phase does not poll).
Unanswered == {n \in Nodes : \/ starter'[n][W] \in {"created", "recovering"}
                             \/ starter'[n][W] \in {"awaiting", "polling"} /\ instance'[W].status \notin Terminal
                             \/ owed'[n] \in {"unavailable", "run", "store"}}
Unscheduled == {n \in Nodes : signaller'[n][W] \in {"read", "updated"}}

\* The line is explained: advance the cursor; at the last line the workflow must not be
\* stranded, and, where the run drained, every caller answered and every signal scheduled.
\* Consumed last, so that it prints only on success (naming the fault lines the behaviour
\* needed).  Only a run_start counts finish attempts (IsRunStart sets attempts itself).
Advance ==
    /\ l' = l + 1 /\ UNCHANGED t
    /\ E.op # "run_start" => UNCHANGED attempts
    \* impl/engine has no timers (TimerRuns FALSE): only a run_end moves waitsOn.
    /\ UNCHANGED timer
    /\ E.op # "run_end" => UNCHANGED waitsOn
    /\ HeldStep
    /\ l + 1 = Lines => Match(t, l + 1, [RunningIsDriven |-> <<Stranded', FALSE>>])
    /\ (Drained[t] /\ l + 1 = Lines) =>
          Match(t, l + 1, [CallersAnswered |-> <<Unanswered, {}>>, SignalsScheduled |-> <<Unscheduled, {}>>])
    /\ ConsumedExcused(t, l + 1, Lines, used')

\* A logged store step.
Step == OwedStep /\ UNCHANGED <<win, used>> /\ Advance

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
                                                   !.base = hist.writes[W],
                                                   !.bound = @ \/ LeaseKept(W, work[n][W][s])]]
    /\ UNCHANGED <<instance, task, clock, queue, starter, signaller, budget, sigRead, hist>>

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

-----------------------------------------------------------------------------
(* Fault lines and answers: lines no store step wrote (impl/engine/store.py line).          *)

\* A line of kind `op`, of the trace's workflow, committed now.
LineOf(op) == /\ l < Lines /\ E.op = op /\ E.wf = Traces[t][1].wf /\ E.now = clock
KeepEngine == UNCHANGED <<instance, task, clock, queue, work, starter, signaller, sigRead, budget, hist>>

\* A pause or stall window opens or closes (injected: a simulation freezes a node, a thread is
\* held up before a call or a taker before its copy); one opened twice, or closed unopened, is
\* rejected naming fault_window.
IsWindow ==
    \E k \in Windows :
        /\ LineOf(k) /\ E.outcome \in {"start", "end"}
        /\ Match(t, l + 1, [fault_window |-> <<IF win[E.node][k] = 0 THEN "closed" ELSE "open",
                                                IF E.outcome = "start" THEN "closed" ELSE "open">>])
        /\ win' = [win EXCEPT ![E.node][k] = IF E.outcome = "start" THEN l + 1 ELSE 0]
        /\ KeepEngine /\ UNCHANGED <<owed, used>> /\ Advance

\* A node crashed (logged by whoever crashed it): it loses its queue and runs, and the callers in
\* its process die with it (an awaiting one's future is lost; one between its writes never goes
\* on). Engine's Crash, here at its line, and for a node that held only a caller too.  Its open
\* pause and stall windows end with it (a dead process logs no window's end).
LostByCrash(phase, between) == CASE phase = "awaiting" -> "lost" [] phase \in between -> "failed" [] OTHER -> phase
IsCrash ==
    /\ LineOf("crash")
    /\ queue' = [queue EXCEPT ![E.node] = [w \in Workflows |-> NoItem]]
    /\ work' = [work EXCEPT ![E.node] = [w \in Workflows |-> [s \in Slots |-> NoItem]]]
    /\ starter' = [starter EXCEPT ![E.node][W] = LostByCrash(@, {"created", "recovering"})]
    /\ signaller' = [signaller EXCEPT ![E.node][W] = LostByCrash(@, {"read", "updated"})]
    \* Needed (named by the acceptance) where the node held the row's lease and the trace goes
    \* on past its end: from here it may lapse. A crash that only ends callers or a run off its
    \* lease changes what the node would do, and the lines show it, but excuses nothing.
    /\ used' = IF HoldsLease(E.node, W) /\ task[W].run_after <= Traces[t][Lines].now
               THEN used \cup {l + 1} ELSE used
    /\ win' = [win EXCEPT ![E.node] = [k \in Windows |-> 0]]
    /\ UNCHANGED <<instance, task, clock, sigRead, budget, hist>> /\ OwedStep /\ Advance

\* A lease lapsed under its holder, as the holder measured it: a step it meant to take at
\* args.meant, before the lease's end args.run_after, came at or after that end (this line's
\* now is when it noticed). The lease must be one it held; the hidden Lapse it excuses may come
\* before this line (LapseExcuse).
IsLapseLine ==
    /\ LineOf("lapse")
    /\ Match(t, l + 1, [lapse |-> <<[held |-> E.args.run_after \in held[E.node],
                                       meant_before_end |-> E.args.meant < E.args.run_after,
                                       end_by_now |-> E.args.run_after <= E.now],
                                      [held |-> TRUE, meant_before_end |-> TRUE, end_by_now |-> TRUE]>>])
    /\ KeepEngine /\ UNCHANGED <<win, owed, used>> /\ Advance

\* A finishing write failed in the store: the worker gives the task up (Engine's StoreError).
IsStoreError ==
    /\ LineOf("store_error")
    /\ \E s \in Slots : StoreError(E.node, W, s)
    /\ used' = used \cup {l + 1}
    /\ UNCHANGED win /\ OwedStep /\ Advance

\* What node n's start caller was told (node.py): `unavailable`, or the `result` or that it
\* `failed`, `from` the run that finished it on n or the store. It must be what the spec owes
\* that caller (answer: <<owed, told>>; a caller answered from a run whose save conflicted is
\* owed the store's), of the workflow's terminal status (answered_with).
Told == IF E.outcome = "unavailable" THEN "unavailable" ELSE E.args.from
ToldStatus == CASE E.outcome = "result" -> "COMPLETED" [] E.outcome = "failed" -> "FAILED" [] OTHER -> instance[W].status
IsAnswer ==
    /\ LineOf("answer")
    /\ Match(t, l + 1, [answer |-> <<owed[E.node], Told>>, answered_with |-> <<instance[W].status, ToldStatus>>])
    /\ owed' = [owed EXCEPT ![E.node] = "told"]
    /\ KeepEngine /\ UNCHANGED <<win, used>> /\ Advance

LineStep == IsWindow \/ IsCrash \/ IsLapseLine \/ IsStoreError \/ IsAnswer

LoggedStep ==
    \/ LineStep
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
    /\ UNCHANGED <<instance, task, queue, work, starter, signaller, sigRead, budget, hist>>

\* The first fault line that lets the lease n holds lapse, 0 for none: a pause or stall window
\* of n open since no later than the lease's end (n was held up when it ended), or a lapse line
\* of n for that lease, later in the trace (n noticed it after its late step).
LapseExcuse(n) ==
    LET end == task[W].run_after
        open == {win[n][k] : k \in {k \in Windows : win[n][k] # 0 /\ Traces[t][win[n][k]].now <= end}}
        seen == {j \in (l + 1)..Lines : /\ Traces[t][j].op = "lapse" /\ Traces[t][j].node = n
                                        /\ Traces[t][j].args.run_after = end}
        lines == open \cup seen
    IN IF lines = {} THEN 0 ELSE CHOOSE j \in lines : \A i \in lines : j <= i

\* Never enabled: time must pass the end of a lease a node holds under the timing assumption,
\* and no fault line lets it go (no pause or stall window of the holder open since before the
\* lease's end, no lapse line of its for that lease, the holder's finish attempts not spent).
\* Only prints why the next line cannot be explained: a worker that dropped a task it had to
\* rerun, a holder that stopped renewing, a lapse the run did not log.
TickPastHeldLease ==
    /\ l < Lines /\ clock < E.now
    /\ \E n \in Nodes : HoldsLease(n, W) /\ task[W].run_after <= E.now /\ LapseExcuse(n) = 0
    /\ ~\E n \in Nodes, s \in Slots :
          work[n][W][s].phase = "rerun" /\ attempts[n][s] >= MaxFinishAttempts
    /\ LET n == CHOOSE m \in Nodes : HoldsLease(m, W) /\ task[W].run_after <= E.now /\ LapseExcuse(m) = 0
           \* the slot holding the lease, if a run holds it (else any: a queued copy holds it)
           holding(r) == work[n][W][r].phase # "none" /\ work[n][W][r].lease = task[W].run_after
           s == IF \E r \in Slots : holding(r) THEN CHOOSE r \in Slots : holding(r)
                ELSE CHOOSE r \in Slots : TRUE
           holds == IF queue[n][W].phase # "none" /\ queue[n][W].lease = task[W].run_after
                    THEN "queued" ELSE work[n][W][s].phase
       IN Match(t, l + 1, [HeldLeaseKept |->
            <<n \o " holds (" \o holds \o ", " \o ToString(attempts[n][s]) \o " of "
                \o ToString(MaxFinishAttempts) \o " finish attempts run) the lease to "
                \o ToString(task[W].run_after) \o ", and this line is at " \o ToString(E.now),
              "a pause or stall window of that node, a lapse line for that lease, or finish attempts spent">>])
    /\ UNCHANGED vars
    /\ FALSE

\* Hidden fault: a lease node n holds on the row lapses under it (a pause, a stall, a slow
\* commit: a step n meant to take before the lease's end came after it).  Engine's OutliveLease (a
\* running handler) and EarlyExpiry (a queued copy) in one step, for whatever n holds with that
\* lease.  Taken only where the next line is at or past the lease's end (the gap is in the
\* trace), and only where a fault line lets it (LapseExcuse), which the acceptance then names.
Lapse(n) ==
    /\ budget.outlive > 0
    /\ l < Lines
    /\ HoldsLease(n, W)
    /\ task[W].run_after <= E.now
    /\ \E j \in {LapseExcuse(n)} : j # 0 /\ used' = used \cup {j}
    /\ LET Detach(it) == IF it.phase # "none" /\ it.lease = task[W].run_after
                         THEN [it EXCEPT !.bound = FALSE] ELSE it
       IN /\ queue' = [queue EXCEPT ![n][W] = Detach(@)]
          /\ work' = [work EXCEPT ![n][W] = [s \in Slots |-> Detach(@[s])]]
    /\ budget' = [budget EXCEPT !.outlive = @ - 1]
    /\ UNCHANGED <<instance, task, clock, starter, signaller, sigRead, hist>>

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
    \/ ReadInstance(n, W) /\ ReadsAsLogged(n) /\ UNCHANGED used
    \/ AlreadyQueued(n, W) /\ UNCHANGED used
    \/ Lapse(n)

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
    /\ UNCHANGED <<instance, task, clock, queue, work, signaller, sigRead, budget, hist>>

NewSignal(n) ==
    /\ signaller[n][W] \in {"awaiting", "polling"} \cup AnswerPhases
    /\ SignalAhead(n)
    /\ signaller' = [signaller EXCEPT ![n][W] = "idle"]
    /\ UNCHANGED <<instance, task, clock, queue, work, starter, sigRead, budget, hist>>

FinishAttemptsSpent(n) ==
    \E s \in Slots :
        /\ work[n][W][s].phase = "rerun"
        /\ attempts[n][s] >= MaxFinishAttempts
        /\ work' = [work EXCEPT ![n][W][s] = NoItem]
        /\ UNCHANGED <<instance, task, clock, queue, starter, signaller, sigRead, budget, hist>>

TakenBeforeStart(n) ==
    /\ l < Lines /\ E.node = n /\ E.op \in {"schedule_in_memory", "fetch"}
    /\ queue[n][W].phase = "queued"
    /\ \E r \in Slots : SlotFree(n, r)
    /\ work' = [work EXCEPT ![n][W][FirstFree(n)] = queue[n][W]]
    /\ queue' = [queue EXCEPT ![n][W] = NoItem]
    /\ UNCHANGED <<instance, task, clock, starter, signaller, sigRead, budget, hist>>

ImplQuirk(n) == NewStart(n) \/ NewSignal(n) \/ FinishAttemptsSpent(n) \/ TakenBeforeStart(n)

Hidden ==
    /\ \/ TraceTick /\ UNCHANGED used
       \/ \E n \in Nodes : \/ EngineHidden(n)
                           \/ ImplQuirk(n) /\ UNCHANGED used
    /\ OwedStep /\ HeldStep /\ UNCHANGED win
    /\ UNCHANGED <<t, l, attempts, waitsOn, timer>>

-----------------------------------------------------------------------------
TraceInit ==
    /\ t \in 1..Len(Traces) /\ l = 0 /\ attempts = [n \in Nodes |-> [s \in Slots |-> 0]]
    /\ win = [n \in Nodes |-> [k \in Windows |-> 0]] /\ held = [n \in Nodes |-> {}]
    /\ owed = [n \in Nodes |-> "none"] /\ used = {}
    /\ Init

TraceNext == LoggedStep \/ Hidden \/ TickPastHeldLease

=============================================================================
