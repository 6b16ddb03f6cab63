------------------------------- MODULE Engine -------------------------------
(***************************************************************************)
(* The workflow engine's scheduling protocol (impl/engine), as changed by  *)
(* seed 000_c26494eee3a5b9ef: the in-memory execution queue keeps no copy  *)
(* when its backstop write honoured an active lease.                       *)
(*                                                                         *)
(*   node n1                    store                     node n2          *)
(*   callers ---CreateInstance--> instance[w]                              *)
(*           ---Schedule(InMemory)--> task[w] <----Fetch---- fetch loop    *)
(*   queue[n1][w] <- copy                        queue[n2][w] <- leased    *)
(*   work[n1][w][s]: RunStart .. RunEnd, Renew, Remove / RescheduleRetry   *)
(*                                                                         *)
(* Every action named like a row of the Engine table in tla/README.md is   *)
(* one store transaction and one trace event; the others (Tick, Crash,     *)
(* the fault actions, the caller steps that write nothing) are hidden.     *)
(* The timer steps (ArmTimer, FetchTimer, FireTimer) are store             *)
(* transactions of the reference with no trace op: impl/engine has no      *)
(* timers.                                                                 *)
(*                                                                         *)
(* Time: `clock` is a small integer; the lease is `Lease` ticks and        *)
(* `run_after` holds absolute ticks, as in the trace.  When the clock      *)
(* reaches MaxClock, Tick shifts every stored time down by one instead of  *)
(* moving the clock (floored at 0), so that behaviours may last forever    *)
(* (liveness needs that) while the state space stays finite.  The floor    *)
(* can make two ancient times equal; Remove compares a held lease with the *)
(* row's run_after, so keep MaxClock above a few leases.                   *)
(*                                                                         *)
(* Timing assumption (lifted by faults): a live node's lease does not      *)
(* lapse under it.  A queued copy is taken, and a running handler renews   *)
(* or finishes, before its lease ends: Tick is disabled while it would     *)
(* lapse a lease that a node still holds.  EarlyExpiry (a queued item) and *)
(* OutliveLease (a running handler) detach a holder from this promise, and *)
(* so does a renewal that finds its lease taken: the run goes on unleased. *)
(*                                                                         *)
(* Seed paths to the double run, all reachable with HonourCheck off: an    *)
(* in-process start of a running workflow (inmem_overlap_unguarded), an    *)
(* in-process signal during a run, and a stalled start recovered by        *)
(* another start (start_race_unguarded, start_race_after_lease_unguarded). *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
    Nodes,            \* the JVMs (impl/engine/node.py), each with its own queue and workers
    Slots,            \* the worker slots (threads) of each node, each running one task at a time
    Workflows,        \* workflow instance ids
    StartNodes,       \* nodes whose caller starts each workflow once (in process)
    SignalNodes,      \* nodes whose caller signals each workflow once (in process)
    Lease,            \* the lease, in ticks (run_after = now + Lease)
    Backoff,          \* the retry delay after a failed run, in ticks
    MaxRetries,       \* a failed run whose task has retry_count >= MaxRetries is marked FAILED
    MaxRenewals,      \* renewals per run (0: AUTOMATIC_LEASE_RENEWAL off)
    MaxClock          \* the clock's window (see the header)

\* Gates (all default on in the engine): impl/engine/model.py Gates; names in tla/README.md
CONSTANTS
    HonourCheck,            \* the seed's fix: no in-memory copy on an honoured lease
    BumpOnHonoredLease,     \* BUMP_TASK_VERSION_ON_HONORED_LEASE
    CreateExistingIsNoop,   \* CREATE_EXISTING_WORKFLOW_IS_NOOP
    ForceSignalInScheduler, \* FORCE_SIGNAL_WORKFLOW_EXEC_IN_SCHEDULER
    InMemoryStart,          \* a start's second write goes through the execution queue
    RecoverStrandedStart,   \* a start that finds a RUNNING instance with no row schedules it
    RecoverAfterLease,      \* ... with a row due after a lease (scheduleAfterLease), not now
    RenewAdoptsRerun,       \* RENEW_ADOPTS_RERUN: a renewal that finds a rerun recorded on its
                            \* lease renews at the row's version and reruns (impl/engine/worker.py)
    RunEndChecksStatus,     \* a run's save requires a RUNNING instance, not only the version it
                            \* read (impl/engine/store.py run_end; off: a calibration only)
    ResultUnavailable,      \* the seed's fix for callers: a call that queued no copy here fails
                            \* its future (ResultUnavailable) and polls the store; off, it awaits
                            \* its future whatever the schedule queued
    AnswerFromStore,        \* a run whose save conflicts with a terminal instance answers its
                            \* node's callers from the store (impl/engine/worker.py; off: the
                            \* finding inmem_start_late_copy, a copy that runs late never answers)
    SaveChecksVersion,      \* a run's save requires the instance version the run read
                            \* (impl/engine/decide.py decide_run_end; off: a calibration only,
                            \* the save overwrites a signal's update: NoLostUpdate)
    ContinueVersions        \* issue 38's fencing fix: a removed row's version is kept (the
                            \* engine's task_fences table) and a row inserted again continues
                            \* it; off: it starts again at version 1, and a stale holder's
                            \* version comes back (ABA: lease_faults_aba)

\* Fault budgets (0 turns a fault off)
CONSTANTS
    CrashFaults,        \* node crashes: the node loses its queue and its runs
    OutliveFaults,      \* a running handler outlives its lease
    EarlyExpiryFaults,  \* a lease lapses under a copy still waiting in its queue
    StoreErrorFaults,   \* a finishing write commits nothing (the worker gives up)
    CallerFaults,       \* a start's caller fails between its two writes
    SignalFaults,       \* a signal's caller fails between its update and its schedule
    UserFailures,       \* runs whose handler throws (result "failed")
    StartRetries        \* a failed start's caller retries the start

\* Timers (see "Timers" below).  Not in impl/engine, which has no timers: TraceEngine sets
\* TimerRuns FALSE.
CONSTANTS
    TimerRuns,          \* the workflow sleeps on one timer before it completes
    ArmTimerWithSave    \* the fix: run_end writes the TIMER row in the instance's transaction
                        \* (off: the reference's order, the TIMER row in a later transaction)

ASSUME /\ Lease \in Nat \ {0} /\ Backoff \in Nat /\ MaxClock \in Nat \ {0}
       /\ MaxRetries \in Nat /\ MaxRenewals \in Nat
       /\ StartNodes \subseteq Nodes /\ SignalNodes \subseteq Nodes
       /\ TimerRuns \in BOOLEAN /\ ArmTimerWithSave \in BOOLEAN

\* How close to its end a lease is renewed: a worker renews when its lease would lapse within
\* RenewAhead ticks.  The models' tick is the renew interval, so 1; TraceEngine, whose clock
\* counts milliseconds, replaces it by the trace's renew_interval_ms (impl/engine/worker.py).
RenewAhead == 1

\* Whether a run may end `waiting` (the workflow waits for a signal: its instance is saved,
\* still RUNNING, and the task is finished as after a completed run, so that the signal's
\* schedule drives it on).  FALSE in the models (waiting on a timer is TimerRuns);
\* TraceEngine replaces it by TRUE, to explain traces of workflows that wait
\* (impl/engine/workflows.py approval).
WaitingRuns == FALSE

Terminal == {"COMPLETED", "FAILED"}
LiveTask == {"PENDING", "RUNNING"}
MaxTime  == MaxClock + Lease + Backoff

-----------------------------------------------------------------------------
(* The store: impl/engine/store.py (sqlite, mysql) and its in-memory twin.  *)

\* The workflow instance row; "ABSENT" stands for no row (null in the trace).
VARIABLE instance
InstanceOK == instance \in [Workflows -> [status : {"ABSENT", "RUNNING"} \cup Terminal,
                                          version : Nat]]

\* The scheduler row of the workflow's task; "ABSENT" once removed (null in the trace).
\* There is no lease column: the lease is run_after.  COMPLETED rows are deleted, FAILED
\* rows are the dead letters.
VARIABLE task
TaskOK == task \in [Workflows -> [status : {"ABSENT", "FAILED"} \cup LiveTask,
                                  run_after : 0..MaxTime, version : Nat,
                                  retry_count : Nat]]

\* The row of a removed (or never scheduled) task: all fields zero, so that one absent row
\* is one state.
NoRow == [status |-> "ABSENT", run_after |-> 0, version |-> 0, retry_count |-> 0]

VARIABLE clock
ClockOK == clock \in 0..MaxClock

-----------------------------------------------------------------------------
(* The nodes: impl/engine/queue.py (execution queue), impl/engine/worker.py *)

\* What a node holds of a workflow: a task as its worker knows it.  `lease` and `version`
\* are the run_after and version the node last wrote or read; `bound` is the timing
\* assumption (see the header); `snap` is the instance version a run read at RunStart;
\* `owed`: a renewal adopted a rerun recorded on its lease (RenewAdoptsRerun).
Phases  == {"none", "queued", "running", "ended", "rerun"}
\* "arming": the run ended waiting on a timer it created and still owes its TIMER row
\* (ArmTimer).
Results == {"none", "completed", "waiting", "failed", "arming"}
\* `base` and `grant` are history (see History): the instance writes the run had seen when it
\* read the instance, and which lease on the row the node was granted.
Item == [phase : Phases, source : {"none", "memory", "store"}, version : Nat,
         lease : 0..MaxTime, retry : Nat, bound : BOOLEAN, snap : Nat,
         result : Results, renewals : Nat, owed : BOOLEAN, base : Nat, grant : Nat]
NoItem == [phase |-> "none", source |-> "none", version |-> 0, lease |-> 0, retry |-> 0,
           bound |-> FALSE, snap |-> 0, result |-> "none", renewals |-> 0, owed |-> FALSE,
           base |-> 0, grant |-> 0]

\* queue[n][w]: the copy or fetched task waiting in n's execution queue (one per id).
VARIABLE queue
QueueOK == queue \in [Nodes -> [Workflows -> Item]]

\* work[n][w][s]: the task of w that n's worker slot s took: running, ended (finishing) or
\* about to rerun.  A slot holds one task at a time (SlotFree), of any workflow.
VARIABLE work
WorkOK == work \in [Nodes -> [Workflows -> [Slots -> Item]]]

-----------------------------------------------------------------------------
(* The callers: impl/engine/node.py start and signal.                     *)

\* "created": between the two writes of a start; "recovering": a start that found a
\* stranded RUNNING instance and will schedule it; "awaiting": it waits for its result
\* future, which a run on this node completes (impl/engine/node.py complete, fail);
\* "polling": ResultUnavailable, it polls the store (answered once the instance is terminal);
\* "done": answered by its future (or never called);
\* "lost": its node crashed (see Crash).
AnswerPhases == {"done", "lost"}
StarterPhases == {"idle", "created", "recovering", "failed", "awaiting", "polling"} \cup AnswerPhases
VARIABLE starter
StarterOK == starter \in [Nodes -> [Workflows -> StarterPhases]]

\* "read": the signal read the instance (at version sigRead) and ran its signal method;
\* "updated": between the signal's instance update and its schedule.
SignallerPhases == {"idle", "read", "updated", "failed", "awaiting", "polling"} \cup AnswerPhases
VARIABLE signaller
SignallerOK == signaller \in [Nodes -> [Workflows -> SignallerPhases]]

VARIABLE sigRead
SigReadOK == sigRead \in [Nodes -> [Workflows -> Nat]]

\* What is left of each fault budget.
VARIABLE budget
BudgetOK == budget \in [crash : Nat, outlive : Nat, expiry : Nat, storeError : Nat,
                        caller : Nat, signal : Nat, user : Nat, retry : Nat]

-----------------------------------------------------------------------------
(* Timers: the reference's TIMER rows (impl/engine has none; TimerRuns).   *)
(* A run that sleeps creates its timer, which the instance's transaction   *)
(* saves (the reference keeps timers beside the workflow row), and arms    *)
(* it: a TIMER row in the scheduler table, due TimerDelay later.  A        *)
(* worker leases the due TIMER row; its firing marks the timer fired and   *)
(* schedules the workflow's execution.  A replay of the workflow (a rerun  *)
(* of its task) finds a saved timer and does not create it again.          *)

\* waitsOn[w]: what the workflow's last saved run waits on: "none" (it did not wait),
\* "signal" (WaitingRuns) or "timer" (TimerRuns).
VARIABLE waitsOn
WaitsOnOK == waitsOn \in [Workflows -> {"none", "signal", "timer"}]

\* timer[w]: the workflow's one timer.  `entry`: the timer as the instance's transaction saved
\* it; `row`: its TIMER row (NoRow when absent); `heldBy`: the node whose worker leased the row
\* (empty, or one node: a held lease does not lapse, as for task rows).
VARIABLE timer
TimerRowOK(r) == r \in [status : {"ABSENT"} \cup LiveTask, run_after : 0..MaxTime,
                         version : Nat, retry_count : Nat]
TimerOK == \A w \in Workflows :
              /\ timer[w].entry \in {"none", "active", "fired"}
              /\ TimerRowOK(timer[w].row)
              /\ timer[w].heldBy \subseteq Nodes
NoTimer == [entry |-> "none", row |-> NoRow, heldBy |-> {}]

\* A timer is due one tick after it is armed (the shortest sleep: its TIMER row may fire while
\* the run that armed it still holds its task).
TimerDelay == 1

timerVars == <<waitsOn, timer>>

-----------------------------------------------------------------------------
(* History: what the properties NoLostUpdate and LeaseFenced judge.  It    *)
(* counts what happened and never reads a version, so a step that loses   *)
(* an update or lets a superseded lease write shows here whatever the      *)
(* versions say.  Nothing in the protocol reads it.                        *)

\* hist.writes[w]: the instance writes committed so far; hist.sigBase[n][w]: the writes a
\* signal had seen when it read the instance; hist.grants[w]: the leases on w's row granted
\* so far (a fetch, a copy queued with its write, a row inserted or overwritten);
\* hist.lost: some instance write committed over a write its writer had not seen;
\* hist.stale: some write of the task row committed for a lease that a later grant had
\* superseded.
VARIABLE hist
HistOK == hist \in [writes : [Workflows -> Nat], sigBase : [Nodes -> [Workflows -> Nat]],
                    grants : [Workflows -> Nat], lost : BOOLEAN, stale : BOOLEAN]

\* An instance write commits: lost if its writer read the instance before the last write.
Wrote(w, base) == [hist EXCEPT !.writes[w] = @ + 1, !.lost = @ \/ base # hist.writes[w]]
\* A task write commits for the lease `it` holds: stale if a later lease was granted.
TaskWrote(w, it) == [hist EXCEPT !.stale = @ \/ it.grant # hist.grants[w]]
\* A schedule's outcome that grants a new lease on the row (to a copy queued with it, or to
\* whoever fetches the row next): every lease granted before is superseded.
Grants(outcome, queued) == outcome \in {"inserted", "overwritten"} \/ queued
Granted(w, grants) == [hist EXCEPT !.grants[w] = @ + (IF grants THEN 1 ELSE 0)]

storeVars  == <<instance, task, clock>>
nodeVars   == <<queue, work>>
callerVars == <<starter, signaller, sigRead>>
vars == <<instance, task, clock, queue, work, starter, signaller, sigRead, budget,
          waitsOn, timer, hist>>

TypeOK == InstanceOK /\ TaskOK /\ ClockOK /\ QueueOK /\ WorkOK /\ StarterOK
          /\ SignallerOK /\ SigReadOK /\ BudgetOK /\ WaitsOnOK /\ TimerOK /\ HistOK

-----------------------------------------------------------------------------
Init ==
    /\ instance = [w \in Workflows |-> [status |-> "ABSENT", version |-> 0]]
    /\ task = [w \in Workflows |-> NoRow]
    /\ clock = 0
    /\ queue = [n \in Nodes |-> [w \in Workflows |-> NoItem]]
    /\ work = [n \in Nodes |-> [w \in Workflows |-> [s \in Slots |-> NoItem]]]
    /\ starter = [n \in Nodes |-> [w \in Workflows |->
                    IF n \in StartNodes THEN "idle" ELSE "done"]]
    /\ signaller = [n \in Nodes |-> [w \in Workflows |->
                    IF n \in SignalNodes THEN "idle" ELSE "done"]]
    /\ sigRead = [n \in Nodes |-> [w \in Workflows |-> 0]]
    /\ budget = [crash |-> CrashFaults, outlive |-> OutliveFaults,
                 expiry |-> EarlyExpiryFaults, storeError |-> StoreErrorFaults,
                 caller |-> CallerFaults, signal |-> SignalFaults, user |-> UserFailures,
                 retry |-> StartRetries]
    /\ waitsOn = [w \in Workflows |-> "none"]
    /\ timer = [w \in Workflows |-> NoTimer]
    /\ hist = [writes |-> [w \in Workflows |-> 0],
               sigBase |-> [n \in Nodes |-> [w \in Workflows |-> 0]],
               grants |-> [w \in Workflows |-> 0], lost |-> FALSE, stale |-> FALSE]

-----------------------------------------------------------------------------
(* The scheduler's decisions, pure.  impl/engine/scheduler.py               *)

\* Task.hasActiveLease: a live row due no later than one lease from now.  A row due within
\* a lease (a short retry backoff, an after-a-lease row, a lapsed lease) counts too; only a
\* row due further out than a lease is overwritten by an honouring schedule.
HasActiveLease(t) == t.status \in LiveTask /\ t.run_after <= clock + Lease

\* schedule_with_outcome(run_after, honour_leases): the outcome of the one transaction.
ScheduleOutcome(w, honour) ==
    IF task[w].status = "ABSENT" THEN "inserted"
    ELSE IF honour /\ HasActiveLease(task[w])
         THEN IF BumpOnHonoredLease THEN "bumped" ELSE "honoured"
         ELSE "overwritten"

\* The row it leaves.  An inserted row continues the version of the row removed before it
\* (ContinueVersions; an absent row keeps it, see Removed), or starts again at version 1.
\* A FAILED (dead-letter) row is overwritten like any row without an active lease.
ScheduledRow(w, runAfter, outcome) ==
    CASE outcome = "inserted" ->
            [status |-> "PENDING", run_after |-> runAfter, version |-> task[w].version + 1,
             retry_count |-> 0]
      [] outcome = "bumped" -> [task[w] EXCEPT !.version = @ + 1]
      [] outcome = "honoured" -> task[w]
      [] outcome = "overwritten" ->
            [status |-> "PENDING", run_after |-> runAfter, version |-> task[w].version + 1,
             retry_count |-> 0]

\* A copy in the execution queue: it carries the row as the write left it, and the lease
\* granted with it (history: see Grants).
CopyOf(row, g) == [NoItem EXCEPT !.phase = "queued", !.source = "memory",
                   !.version = row.version, !.lease = row.run_after,
                   !.retry = row.retry_count, !.bound = TRUE, !.grant = g]

\* What a removed row leaves: no row, with its version kept for the next insert
\* (ContinueVersions) or forgotten.
Removed(w) == [NoRow EXCEPT !.version = IF ContinueVersions THEN task[w].version ELSE 0]

-----------------------------------------------------------------------------
(* Caller steps.  A caller's schedule is the second write of a start or a  *)
(* signal: through n's execution queue (StartsInMemory, SignalsInMemory)   *)
(* or straight to the scheduler (Schedule).                                *)
StartsInMemory(n, w) ==
    \/ starter[n][w] = "created" /\ InMemoryStart
    \/ starter[n][w] = "recovering" /\ InMemoryStart /\ ~RecoverAfterLease
SignalsInMemory(n, w) == signaller[n][w] = "updated" /\ ~ForceSignalInScheduler

\* The caller phase after its in-memory schedule: a copy queued here completes its result
\* future; otherwise it gets ResultUnavailable and polls the store (seed:
\* Scheduled.queuedInMemory).  Without ResultUnavailable it awaits its future anyway.
AfterSchedule(phase, queued) ==
    IF phase \in {"created", "recovering", "updated"}
    THEN IF queued \/ ~ResultUnavailable THEN "awaiting" ELSE "polling"
    ELSE phase

\* A run on node n completed or failed w for good: the futures of n's callers of w are
\* answered (node.complete / node.fail answer every caller of w waiting on n).
Answer(phase) == IF phase = "awaiting" THEN "done" ELSE phase

\* create_instance: start, write 1.  impl/engine/engine.py start_workflow
CreateInstance(n, w) ==
    /\ starter[n][w] = "idle"
    /\ IF instance[w].status = "ABSENT"
       THEN /\ instance' = [instance EXCEPT ![w] = [status |-> "RUNNING", version |-> 1]]
            /\ starter' = [starter EXCEPT ![n][w] = "created"]
            /\ hist' = Wrote(w, hist.writes[w])
       ELSE /\ UNCHANGED <<instance, hist>>
            /\ starter' = [starter EXCEPT ![n][w] =
                 CASE instance[w].status \in Terminal -> "polling"
                   [] ~CreateExistingIsNoop -> "created"   \* start it again
                      \* the stranded-start recovery: a RUNNING instance with no live row
                   [] RecoverStrandedStart /\ task[w].status \notin LiveTask -> "recovering"
                   [] OTHER -> "polling"]
    /\ UNCHANGED <<task, clock, queue, work, signaller, budget, sigRead>>

\* Hidden: a signal reads the instance and runs its signal method (no write).
\* impl/engine/node.py signal
ReadInstance(n, w) ==
    /\ signaller[n][w] = "idle"
    /\ instance[w].status # "ABSENT"          \* a signal is sent to a started workflow
    /\ signaller' = [signaller EXCEPT ![n][w] = "read"]
    /\ sigRead' = [sigRead EXCEPT ![n][w] = instance[w].version]
    /\ hist' = [hist EXCEPT !.sigBase[n][w] = hist.writes[w]]
    /\ UNCHANGED <<instance, task, clock, queue, work, starter, budget>>

\* update_instance: signal, write 1: the instance at the version read, version+1.  On a
\* conflict the signal reads again; on a terminal instance it is dropped.
UpdateInstance(n, w) ==
    /\ signaller[n][w] = "read"
    /\ CASE instance[w].status \in Terminal ->                          \* terminal
            /\ signaller' = [signaller EXCEPT ![n][w] = "polling"]
            /\ UNCHANGED instance
            /\ hist' = [hist EXCEPT !.sigBase[n][w] = 0]
        [] instance[w].version = sigRead[n][w] ->                          \* updated
            /\ instance' = [instance EXCEPT ![w].version = @ + 1]
            /\ signaller' = [signaller EXCEPT ![n][w] = "updated"]
            /\ hist' = [Wrote(w, hist.sigBase[n][w]) EXCEPT !.sigBase[n][w] = 0]
        [] OTHER ->                                                         \* conflict
            /\ signaller' = [signaller EXCEPT ![n][w] = "idle"]
            /\ UNCHANGED instance
            /\ hist' = [hist EXCEPT !.sigBase[n][w] = 0]
    /\ sigRead' = [sigRead EXCEPT ![n][w] = 0]
    /\ UNCHANGED <<task, clock, queue, work, starter, budget>>

\* schedule: a caller writes the row directly (honouring leases).
\* impl/engine/scheduler.py schedule_with_outcome
Schedule(n, w) ==
    \E who \in {"starter", "signaller"} :
        /\ IF who = "starter"
           THEN starter[n][w] \in {"created", "recovering"} /\ ~StartsInMemory(n, w)
           ELSE signaller[n][w] = "updated" /\ ForceSignalInScheduler
        /\ LET runAfter == IF who = "starter" /\ starter[n][w] = "recovering"
                              /\ RecoverAfterLease
                           THEN clock + Lease   \* scheduleAfterLease
                           ELSE clock
               outcome == ScheduleOutcome(w, TRUE)
           IN /\ task' = [task EXCEPT ![w] = ScheduledRow(w, runAfter, outcome)]
              /\ hist' = Granted(w, Grants(outcome, FALSE))
        /\ IF who = "starter"
           THEN /\ starter' = [starter EXCEPT ![n][w] = "polling"]
                /\ UNCHANGED signaller
           ELSE /\ signaller' = [signaller EXCEPT ![n][w] = "polling"]
                /\ UNCHANGED starter
        /\ UNCHANGED <<instance, clock, queue, work, budget, sigRead>>

\* schedule_in_memory: the execution queue's backstop write (run_after = now + lease,
\* honouring leases) and its in-memory copy.  impl/engine/queue.py
\* The seed's fix: when the write honoured an active lease, queue no copy.
ScheduleInMemory(n, w) ==
    \E who \in {"starter", "signaller"} :
        /\ IF who = "starter" THEN StartsInMemory(n, w) ELSE SignalsInMemory(n, w)
        /\ queue[n][w].phase = "none"
        /\ LET outcome == ScheduleOutcome(w, TRUE)
               row == ScheduledRow(w, clock + Lease, outcome)
               queued == ~HonourCheck \/ outcome \notin {"honoured", "bumped"}
           IN /\ task' = [task EXCEPT ![w] = row]
              /\ hist' = Granted(w, Grants(outcome, queued))
              /\ queue' = [queue EXCEPT ![n][w] =
                            IF queued THEN CopyOf(row, hist.grants[w] + 1) ELSE @]
              /\ IF who = "starter"
                 THEN /\ starter' = [starter EXCEPT ![n][w] = AfterSchedule(@, queued)]
                      /\ UNCHANGED signaller
                 ELSE /\ signaller' = [signaller EXCEPT ![n][w] = AfterSchedule(@, queued)]
                      /\ UNCHANGED starter
        /\ UNCHANGED <<instance, clock, work, budget, sigRead>>

\* Hidden: the id is already queued on this node, so nothing is written and no copy
\* carries this caller's payload: ResultUnavailable.
AlreadyQueued(n, w) ==
    /\ StartsInMemory(n, w) \/ SignalsInMemory(n, w)
    /\ queue[n][w].phase # "none"
    /\ starter' = [starter EXCEPT ![n][w] =
                    IF StartsInMemory(n, w) THEN AfterSchedule(@, FALSE) ELSE @]
    /\ signaller' = [signaller EXCEPT ![n][w] =
                    IF ~StartsInMemory(n, w) THEN AfterSchedule(@, FALSE) ELSE @]
    /\ UNCHANGED <<instance, task, clock, queue, work, budget, sigRead, hist>>

\* Hidden fault: a start's caller fails between its two writes.
CallerFails(n, w) ==
    /\ budget.caller > 0
    /\ starter[n][w] \in {"created", "recovering"}
    /\ starter' = [starter EXCEPT ![n][w] = "failed"]
    /\ budget' = [budget EXCEPT !.caller = @ - 1]
    /\ UNCHANGED <<instance, task, clock, queue, work, signaller, sigRead, hist>>

\* Hidden: the failed start's caller tries the start again.
RetryStart(n, w) ==
    /\ budget.retry > 0
    /\ starter[n][w] = "failed"
    /\ starter' = [starter EXCEPT ![n][w] = "idle"]
    /\ budget' = [budget EXCEPT !.retry = @ - 1]
    /\ UNCHANGED <<instance, task, clock, queue, work, signaller, sigRead, hist>>

\* Hidden fault: a signal's caller fails after its update, before it schedules.
SignalFails(n, w) ==
    /\ budget.signal > 0
    /\ signaller[n][w] = "updated"
    /\ signaller' = [signaller EXCEPT ![n][w] = "failed"]
    /\ budget' = [budget EXCEPT !.signal = @ - 1]
    /\ UNCHANGED <<instance, task, clock, queue, work, starter, sigRead, hist>>

-----------------------------------------------------------------------------
(* Worker steps.  impl/engine/worker.py                                    *)

\* fetch: lease one due row (WHERE version = v); the leased task joins n's queue.
\* The engine drops a leased task whose id is already queued here, and its lease lapses
\* unused; here the fetch loop skips such ids instead, which only removes a delay (and
\* an unbounded fetch-and-drop loop that a real taker would not allow).
Fetch(n, w) ==
    /\ task[w].status \in LiveTask
    /\ task[w].run_after <= clock
    /\ queue[n][w].phase = "none"
    /\ LET row == [task[w] EXCEPT !.status = "RUNNING", !.run_after = clock + Lease,
                                  !.version = @ + 1, !.retry_count = @ + 1]
       IN /\ task' = [task EXCEPT ![w] = row]
          /\ queue' = [queue EXCEPT ![n][w] =
                        [CopyOf(row, hist.grants[w] + 1) EXCEPT !.source = "store"]]
          /\ hist' = Granted(w, TRUE)
    /\ UNCHANGED <<instance, clock, work, starter, signaller, budget, sigRead>>

\* A worker slot of n that holds no task of any workflow.
SlotFree(n, s) == \A v \in Workflows : work[n][v][s].phase = "none"

\* run_start: the taker hands a queued task to a free worker slot (or a rerun begins), and
\* the handler reads the instance.  From here to RunEnd the run is in progress.  Once taken,
\* the id has left the queue, so another copy may be queued and taken by another slot of the
\* same node (the seed's in-process signal during this node's own run).
\*
\* The run is bound (the timing assumption) when it starts on a lease it still holds: its
\* renewals keep it from now on, whatever happened while it waited.  A copy whose lease
\* lapsed while it waited (EarlyExpiry) and is already lost (the row was fetched or
\* rewritten, or its time is up) starts unbound: finding 3's overlap.  So EarlyExpiry acts
\* on waiting copies only.
LeaseKept(w, it) ==
    task[w].status \in LiveTask /\ task[w].run_after = it.lease /\ it.lease > clock

\* n's worker slot s takes w's queued copy and the handler reads the instance; `bound` says
\* whether the run holds its lease.
TakeCopy(n, w, s, bound) ==
    /\ work' = [work EXCEPT ![n][w][s] = [queue[n][w] EXCEPT !.phase = "running",
                                        !.snap = instance[w].version,
                                        !.base = hist.writes[w],
                                        !.bound = bound]]
    /\ queue' = [queue EXCEPT ![n][w] = NoItem]
    /\ UNCHANGED <<instance, task, clock, starter, signaller, budget, sigRead, hist>>

RunStart(n, w, s) ==
    \/ /\ SlotFree(n, s)
       /\ queue[n][w].phase = "queued"
       /\ TakeCopy(n, w, s, queue[n][w].bound \/ LeaseKept(w, queue[n][w]))
    \/ /\ work[n][w][s].phase = "rerun"
       /\ work' = [work EXCEPT ![n][w][s].phase = "running", ![n][w][s].snap = instance[w].version,
                               ![n][w][s].base = hist.writes[w], ![n][w][s].result = "none"]
       /\ UNCHANGED <<instance, task, clock, queue, starter, signaller, budget, sigRead, hist>>

\* A run's save commits: the instance is at the version the run read and, with
\* RunEndChecksStatus, still RUNNING.  Without the status check, a run that began on a terminal
\* instance (a row a late signal scheduled after MarkFailed) saves over it: TerminalIsStable's
\* calibration (terminal_overwritten).
Fresh(n, w, s) ==
    /\ ~RunEndChecksStatus \/ instance[w].status = "RUNNING"
    /\ ~SaveChecksVersion \/ instance[w].version = work[n][w][s].snap

\* A new timer's TIMER row: a timer's id is new, so the row is inserted at version 1.
ArmedRow == [status |-> "PENDING", run_after |-> clock + TimerDelay, version |-> 1,
             retry_count |-> 0]

\* run_end: the handler's result (args: result) and its versioned write of the instance,
\* saved only over the version the run read and only on a RUNNING instance (else
\* conflict: nothing is written).  A handler fails only on a RUNNING instance (a terminal
\* one gives it nothing to do); so does waiting (WaitingRuns).  A run that owes a rerun
\* (RenewAdoptsRerun) and did not fail runs again at once instead of finishing.
\* With TimerRuns the workflow sleeps on its timer (result "timer") until the timer has fired,
\* then completes.  A first visit of the sleep creates the timer, and the save commits it;
\* its TIMER row is written by the same transaction (ArmTimerWithSave) or by ArmTimer after
\* it, before the task is finished.  A replay that finds the timer saved waits on it as it is.
RunEnd(n, w, s) ==
    /\ work[n][w][s].phase = "running"
    /\ LET fresh == Fresh(n, w, s)
           canFail == instance[w].status = "RUNNING" /\ budget.user > 0
           canWait == instance[w].status = "RUNNING" /\ WaitingRuns
           sleeps == TimerRuns /\ instance[w].status = "RUNNING" /\ timer[w].entry # "fired"
           results == (IF sleeps THEN {"timer"} ELSE {"completed"})
                        \cup (IF canFail THEN {"failed"} ELSE {})
                        \cup (IF canWait THEN {"waiting"} ELSE {})
           creates(result) == fresh /\ result = "timer" /\ timer[w].entry = "none"
           arming(result) == creates(result) /\ ~ArmTimerWithSave
       IN \E result \in results :
            /\ instance' = [instance EXCEPT ![w] =
                 CASE fresh /\ result = "completed" ->
                        [status |-> "COMPLETED", version |-> @.version + 1]
                   [] fresh /\ result \in {"failed", "waiting", "timer"} ->
                        [@ EXCEPT !.version = @ + 1]
                   [] OTHER -> @]
            /\ budget' = [budget EXCEPT !.user = IF result = "failed" THEN @ - 1 ELSE @]
            /\ work' = [work EXCEPT ![n][w][s] =
                 IF result # "failed" /\ @.owed /\ ~arming(result)
                 THEN [@ EXCEPT !.phase = "rerun", !.owed = FALSE]
                 ELSE [@ EXCEPT !.phase = "ended",
                                !.result = CASE arming(result) -> "arming"
                                             [] result = "timer" -> "waiting"
                                             [] OTHER -> result]]
            /\ hist' = IF fresh THEN Wrote(w, work[n][w][s].base) ELSE hist
            /\ waitsOn' = [waitsOn EXCEPT ![w] =
                 CASE ~fresh -> @
                   [] result = "timer" -> "timer"
                   [] result = "waiting" -> "signal"
                   [] OTHER -> "none"]
            /\ timer' = IF creates(result)
                        THEN [timer EXCEPT ![w].entry = "active",
                                           ![w].row = IF ArmTimerWithSave THEN ArmedRow ELSE @]
                        ELSE timer
            /\ IF \/ fresh /\ result = "completed"
                  \/ AnswerFromStore /\ ~fresh /\ instance[w].status \in Terminal
               THEN /\ starter' = [starter EXCEPT ![n][w] = Answer(@)]
                    /\ signaller' = [signaller EXCEPT ![n][w] = Answer(@)]
               ELSE UNCHANGED <<starter, signaller>>
    /\ UNCHANGED <<task, clock, queue, sigRead>>

\* arm_timer: the TIMER row of the timer a run just saved, in its own transaction (the
\* reference: the timer is saved with the workflow, its TIMER task scheduled afterwards).  A
\* crash before it (Crash) or its write failing (StoreError) leaves the task to lapse and
\* rerun, and the replay finds the timer saved: no TIMER row is ever written
\* (timer_arming_crash, timer_arming_store_error).  Then the task is finished, or rerun at
\* once if a rerun is owed.
ArmTimer(n, w, s) ==
    /\ work[n][w][s].phase = "ended"
    /\ work[n][w][s].result = "arming"
    /\ timer' = [timer EXCEPT ![w].row = ArmedRow]
    /\ work' = [work EXCEPT ![n][w][s] =
                 IF @.owed THEN [@ EXCEPT !.phase = "rerun", !.owed = FALSE]
                 ELSE [@ EXCEPT !.result = "waiting"]]
    /\ UNCHANGED <<instance, task, clock, queue, starter, signaller, sigRead, budget, waitsOn,
                   hist>>

\* n leases w's TIMER row (the writes of fetch_timer, without its due check).
LeaseTimer(n, w) ==
    /\ timer' = [timer EXCEPT ![w].row = [@ EXCEPT !.status = "RUNNING",
                                                  !.run_after = clock + Lease,
                                                  !.version = @ + 1, !.retry_count = @ + 1],
                             ![w].heldBy = {n}]
    /\ UNCHANGED <<instance, task, clock, queue, work, starter, signaller, sigRead, budget,
                   waitsOn, hist>>

\* fetch_timer: a worker leases the due TIMER row, as Fetch a task row.
FetchTimer(n, w) ==
    /\ timer[w].row.status \in LiveTask
    /\ timer[w].row.run_after <= clock
    /\ LeaseTimer(n, w)

\* fire_timer: the leased timer fires: it is marked fired, the workflow's execution is
\* scheduled (due now, honouring leases, as a signal's schedule) and the TIMER row removed, in
\* one transaction.  (The reference takes several writes; a crash among them would leave the
\* TIMER row leased, to be fetched and fired again: one more schedule.)
FireTimer(n, w) ==
    /\ n \in timer[w].heldBy
    /\ timer' = [timer EXCEPT ![w] = [entry |-> "fired", row |-> NoRow, heldBy |-> {}]]
    /\ task' = [task EXCEPT ![w] = ScheduledRow(w, clock, ScheduleOutcome(w, TRUE))]
    /\ hist' = Granted(w, Grants(ScheduleOutcome(w, TRUE), FALSE))
    /\ UNCHANGED <<instance, clock, queue, work, starter, signaller, sigRead, budget, waitsOn>>

TimerStep(n, w) == (\E s \in Slots : ArmTimer(n, w, s)) \/ FetchTimer(n, w) \/ FireTimer(n, w)

\* renew: renew_lease while the handler runs (WHERE version = v).  A worker renews when
\* its lease would lapse within RenewAhead ticks; a run renews at most MaxRenewals times.
\* On a conflict: if the row still carries our lease (a rerun was recorded on it) and
\* RenewAdoptsRerun is on, adopt the row's version and owe a rerun (the next Renew then
\* succeeds); otherwise the lease is lost and the run goes on unrenewed, so it may now
\* outlive its lease.
Renew(n, w, s) ==
    /\ work[n][w][s].phase = "running"
    /\ work[n][w][s].renewals < MaxRenewals
    /\ work[n][w][s].lease <= clock + RenewAhead
    /\ CASE task[w].status \in LiveTask /\ task[w].version = work[n][w][s].version ->  \* renewed
            /\ task' = [task EXCEPT ![w].run_after = clock + Lease, ![w].version = @ + 1]
            /\ work' = [work EXCEPT ![n][w][s].version = @ + 1, ![n][w][s].lease = clock + Lease,
                                    ![n][w][s].bound = TRUE, ![n][w][s].renewals = @ + 1]
            /\ hist' = TaskWrote(w, work[n][w][s])
        [] RenewAdoptsRerun /\ task[w].status \in LiveTask
           /\ task[w].run_after = work[n][w][s].lease ->                          \* conflict
            /\ UNCHANGED <<task, hist>>
            /\ work' = [work EXCEPT ![n][w][s].version = task[w].version, ![n][w][s].owed = TRUE]
        [] OTHER ->                                                            \* conflict
            /\ UNCHANGED <<task, hist>>
            /\ work' = [work EXCEPT ![n][w][s].renewals = MaxRenewals, ![n][w][s].bound = FALSE]
    /\ UNCHANGED <<instance, clock, queue, starter, signaller, budget, sigRead>>

\* The outcome of finishing with a versioned write (finishTask).
FinishOutcome(n, w, s) ==
    CASE task[w].status = "ABSENT" -> "gone"
      [] task[w].version = work[n][w][s].version -> "ok"
         \* a rerun recorded on our lease by an honoured, bumping schedule
      [] task[w].status \in LiveTask /\ task[w].run_after = work[n][w][s].lease -> "rerun"
      [] OTHER -> "lost"

\* remove: finish a completed run (saved or not) by DELETE ... WHERE version = v.  On a version mismatch: row gone -> removed elsewhere; same run_after as
\* held -> a rerun was recorded on our lease -> run again at once; else lease lost.
Remove(n, w, s) ==
    /\ work[n][w][s].phase = "ended"
    /\ work[n][w][s].result \in {"completed", "waiting"}
    /\ LET o == FinishOutcome(n, w, s) IN
       /\ task' = IF o = "ok" THEN [task EXCEPT ![w] = Removed(w)] ELSE task
       /\ hist' = IF o = "ok" THEN TaskWrote(w, work[n][w][s]) ELSE hist
       /\ work' = [work EXCEPT ![n][w][s] =
                    IF o = "rerun"
                    THEN [@ EXCEPT !.phase = "rerun", !.version = task[w].version]
                    ELSE NoItem]
    /\ UNCHANGED <<instance, clock, queue, starter, signaller, budget, sigRead>>

\* reschedule_retry: finish a failed run with retries left: PENDING, later run_after,
\* version+1, WHERE version = v.  A conflict leaves the row to whoever holds it now.
RescheduleRetry(n, w, s) ==
    /\ work[n][w][s].phase = "ended"
    /\ work[n][w][s].result = "failed"
    /\ work[n][w][s].retry < MaxRetries
    /\ task' = IF FinishOutcome(n, w, s) = "ok"
               THEN [task EXCEPT ![w].status = "PENDING", ![w].run_after = clock + Backoff,
                                 ![w].version = @ + 1]
               ELSE task
    /\ hist' = IF FinishOutcome(n, w, s) = "ok" THEN TaskWrote(w, work[n][w][s]) ELSE hist
    /\ work' = [work EXCEPT ![n][w][s] = NoItem]
    /\ UNCHANGED <<instance, clock, queue, starter, signaller, budget, sigRead>>

\* The writes of mark_failed, without its retry check.
DeadLetter(n, w, s) ==
    /\ IF FinishOutcome(n, w, s) = "ok"
       THEN /\ task' = [task EXCEPT ![w].status = "FAILED", ![w].version = @ + 1]
            /\ instance' = [instance EXCEPT ![w] =
                             IF @.status = "RUNNING"
                             THEN [status |-> "FAILED", version |-> @.version + 1]
                             ELSE @]
            /\ starter' = [starter EXCEPT ![n][w] = Answer(@)]
            /\ signaller' = [signaller EXCEPT ![n][w] = Answer(@)]
            \* The instance write reads the instance in its own transaction: nothing to lose.
            /\ LET h == TaskWrote(w, work[n][w][s])
               IN hist' = IF instance[w].status = "RUNNING"
                          THEN [h EXCEPT !.writes[w] = @ + 1] ELSE h
       ELSE UNCHANGED <<task, instance, starter, signaller, hist>>
    /\ work' = [work EXCEPT ![n][w][s] = NoItem]
    /\ UNCHANGED <<clock, queue, budget, sigRead>>

\* mark_failed: past MaxRetries the row becomes FAILED (dead letter) and, in the same
\* transaction, a RUNNING instance becomes FAILED; the node fails its callers' futures.
MarkFailed(n, w, s) ==
    /\ work[n][w][s].phase = "ended"
    /\ work[n][w][s].result = "failed"
    /\ work[n][w][s].retry >= MaxRetries
    /\ DeadLetter(n, w, s)

-----------------------------------------------------------------------------
(* Hidden steps: time and faults.                                           *)

\* A node still holds the lease on w's row and is promised it will not lapse under it.
HoldsLease(n, w) ==
    \E it \in {queue[n][w]} \cup {work[n][w][s] : s \in Slots} :
        /\ it.phase # "none"
        /\ it.bound
        /\ task[w].status \in LiveTask
        /\ task[w].run_after = it.lease

Shift(t) == IF t > 0 THEN t - 1 ELSE 0
ShiftItem(it) == [it EXCEPT !.lease = Shift(@)]

\* A TIMER row waits for time; a held one is held to its lease like a task row.
TimerWaits(w) == timer[w].row.status \in LiveTask /\ timer[w].row.run_after > clock
TimerLeaseKept(w) == timer[w].heldBy # {} => timer[w].row.run_after > clock + 1

\* The clock moves one tick, when some row waits for time and no held lease would lapse.
\* At MaxClock every stored time moves down instead (see the header).
Tick ==
    /\ \/ \E w \in Workflows : task[w].status \in LiveTask /\ task[w].run_after > clock
       \/ \E w \in Workflows : TimerWaits(w)
    /\ \A n \in Nodes, w \in Workflows :
          HoldsLease(n, w) => task[w].run_after > clock + 1
    /\ \A w \in Workflows : TimerLeaseKept(w)
    /\ IF clock < MaxClock
       THEN /\ clock' = clock + 1
            /\ UNCHANGED <<task, queue, work, sigRead, timer>>
       ELSE /\ UNCHANGED clock
            /\ task' = [w \in Workflows |-> [task[w] EXCEPT !.run_after = Shift(@)]]
            /\ queue' = [n \in Nodes |-> [w \in Workflows |-> ShiftItem(queue[n][w])]]
            /\ work' = [n \in Nodes |-> [w \in Workflows |-> [s \in Slots |->
                          ShiftItem(work[n][w][s])]]]
            /\ timer' = [w \in Workflows |-> [timer[w] EXCEPT !.row.run_after = Shift(@)]]
    /\ UNCHANGED <<instance, starter, signaller, budget, sigRead, waitsOn, hist>>

\* A node crashes and restarts at once: its queue and its runs are gone (their rows stay,
\* leased until they lapse).  A caller between its two writes is kept apart from the node
\* (its own failure is CallerFails), but a call waiting for its result is in the node's
\* process: an awaiting caller's future is in the node's memory (node.crash clears them), so
\* it ends with the node ("lost") and is no longer owed an answer.  That is a choice: CallersAnswered does not
\* ask a crashed node's callers to be answered.
\* (A polling caller needs nothing of its node: it is left as it is, dead or not.)
LostCall(phase) == IF phase = "awaiting" THEN "lost" ELSE phase
Crash(n) ==
    /\ budget.crash > 0
    /\ \E w \in Workflows : \/ queue[n][w].phase # "none"
                            \/ \E s \in Slots : work[n][w][s].phase # "none"
                            \/ n \in timer[w].heldBy
    /\ queue' = [queue EXCEPT ![n] = [w \in Workflows |-> NoItem]]
    /\ work' = [work EXCEPT ![n] = [w \in Workflows |-> [s \in Slots |-> NoItem]]]
    /\ timer' = [w \in Workflows |-> [timer[w] EXCEPT !.heldBy = @ \ {n}]]
    /\ starter' = [starter EXCEPT ![n] = [w \in Workflows |-> LostCall(@[w])]]
    /\ signaller' = [signaller EXCEPT ![n] = [w \in Workflows |-> LostCall(@[w])]]
    /\ budget' = [budget EXCEPT !.crash = @ - 1]
    /\ UNCHANGED <<instance, task, clock, sigRead, waitsOn, hist>>

\* A running handler outlives its lease: the lease may now lapse while it runs.
OutliveLease(n, w, s) ==
    /\ budget.outlive > 0
    /\ work[n][w][s].phase = "running" /\ work[n][w][s].bound
    /\ work' = [work EXCEPT ![n][w][s].bound = FALSE]
    /\ budget' = [budget EXCEPT !.outlive = @ - 1]
    /\ UNCHANGED <<instance, task, clock, queue, starter, signaller, sigRead, hist>>

\* A lease lapses early under a task still waiting in a queue (finding 3 of the seed): time
\* may now pass its end, and another node may fetch the row before the copy starts.
EarlyExpiry(n, w) ==
    /\ budget.expiry > 0
    /\ queue[n][w].phase = "queued" /\ queue[n][w].bound
    /\ queue' = [queue EXCEPT ![n][w].bound = FALSE]
    /\ budget' = [budget EXCEPT !.expiry = @ - 1]
    /\ UNCHANGED <<instance, task, clock, work, starter, signaller, sigRead, hist>>

\* A finishing write fails in the store: nothing commits, the worker gives the task up
\* and the row stays until its lease lapses.
StoreError(n, w, s) ==
    /\ budget.storeError > 0
    /\ work[n][w][s].phase = "ended"
    /\ work' = [work EXCEPT ![n][w][s] = NoItem]
    /\ budget' = [budget EXCEPT !.storeError = @ - 1]
    /\ UNCHANGED <<instance, task, clock, queue, starter, signaller, sigRead, hist>>

-----------------------------------------------------------------------------
\* The steps that do not touch timers leave timerVars alone here, once, not each in its frame.
CallerStep(n, w) ==
    /\ \/ CreateInstance(n, w) \/ ReadInstance(n, w) \/ UpdateInstance(n, w) \/ Schedule(n, w)
       \/ ScheduleInMemory(n, w) \/ AlreadyQueued(n, w) \/ RetryStart(n, w)
    /\ UNCHANGED timerVars

WorkerStep(n, w) ==
    \/ /\ \/ Fetch(n, w)
          \/ \E s \in Slots : \/ RunStart(n, w, s) \/ Remove(n, w, s)
                             \/ RescheduleRetry(n, w, s) \/ MarkFailed(n, w, s)
       /\ UNCHANGED timerVars
    \/ \E s \in Slots : RunEnd(n, w, s)
    \/ TimerStep(n, w)

Fault(n, w) ==
    \/ Crash(n)
    \/ /\ \/ EarlyExpiry(n, w) \/ CallerFails(n, w) \/ SignalFails(n, w)
          \/ \E s \in Slots : OutliveLease(n, w, s) \/ StoreError(n, w, s)
       /\ UNCHANGED timerVars

Next ==
    \/ \E n \in Nodes, w \in Workflows :
          \/ CallerStep(n, w) \/ WorkerStep(n, w) \/ Fault(n, w)
          \/ (\E s \in Slots : Renew(n, w, s)) /\ UNCHANGED timerVars
    \/ Tick

\* NoLongPauses: a caller does not stall forever, in particular not between the two
\* writes of a start.  A caller can still fail there (CallerFails), which is a fault.
NoLongPauses == \A n \in Nodes : WF_vars(\E w \in Workflows : CallerStep(n, w))

\* Workers keep working and time keeps moving.  Renew and faults get no fairness.
WorkersProgress ==
    /\ \A n \in Nodes : WF_vars(\E w \in Workflows : WorkerStep(n, w))
    /\ WF_vars(Tick)

Spec == Init /\ [][Next]_vars /\ NoLongPauses /\ WorkersProgress

-----------------------------------------------------------------------------
(* Properties                                                              *)

Running(n, w, s) == work[n][w][s].phase = "running"

\* Never two runs of one workflow in progress at once, in two worker slots of one node or
\* of two nodes.
NoOverlappingRuns ==
    \A w \in Workflows : \A n, m \in Nodes, s, r \in Slots :
        Running(n, w, s) /\ Running(m, w, r) => <<n, s>> = <<m, r>>

\* Where a lease can lapse (OutliveLease, EarlyExpiry, a lost renewal), runs may overlap, and
\* the versions fence the stale one's writes (LeaseFenced).  But an overlap needs that lapse:
\* two runs of one workflow overlap only where one of them runs unbound.  A run that starts
\* bound on a lease ending this very tick would share the row with the next fetch.
OverlapNeedsLapse ==
    \A w \in Workflows : \A n, m \in Nodes, s, r \in Slots :
        Running(n, w, s) /\ Running(m, w, r) /\ <<n, s>> # <<m, r>>
            => ~work[n][w][s].bound \/ ~work[m][w][r].bound

\* A RUNNING workflow always has something that will drive it: a live row, a queued task
\* or a run in progress on some node, a caller between its two writes, or a signal between
\* its update and its schedule.  A caller that may start it again later (idle, or failed
\* with a retry left) does not count: whether it schedules depends on the gates and on the
\* caller coming back, so a model that relies on it checks recovery by EventuallyDone.
Driven(w) ==
    \/ task[w].status \in LiveTask
    \/ \E n \in Nodes : \/ queue[n][w].phase # "none"
                        \/ \E s \in Slots : work[n][w][s].phase \in {"running", "rerun"}
                        \/ starter[n][w] \in {"created", "recovering"}
                        \/ signaller[n][w] = "updated"
\* A workflow whose last saved run ended waiting is WaitingIsDriven's.
RunningIsDriven ==
    \A w \in Workflows : instance[w].status = "RUNNING" /\ waitsOn[w] = "none" => Driven(w)

\* A waiting workflow (RUNNING, its last saved run ended waiting) always has something that
\* will drive it: what drives a running one, a live TIMER row (its firing schedules the
\* workflow), or a signal still to come: a signaller yet to read, update or schedule, which
\* NoLongPauses makes go on (the instance exists); a failed signal is not one.  A saved timer
\* with no TIMER row is not one either: nothing will fire it (timer_arming_crash).
TimerDrives(w) == timer[w].row.status \in LiveTask
SignalToCome(w) == \E n \in Nodes : signaller[n][w] \in {"idle", "read", "updated"}
WaitingIsDriven ==
    \A w \in Workflows :
        instance[w].status = "RUNNING" /\ waitsOn[w] # "none" =>
            Driven(w) \/ TimerDrives(w) \/ SignalToCome(w)

\* A terminal workflow stays as it is (an action property).
TerminalIsStable ==
    [][\A w \in Workflows :
         instance[w].status \in Terminal => instance'[w].status = instance[w].status]_vars

\* Every in-process caller waiting for a result gets one: an awaiting caller from its future
\* (a run on its node completes or fails the workflow), a polling one from the store (its
\* poll reads a terminal instance: no step of its own, since a terminal instance stays so).
\* A caller whose node crashed is gone, not answered (see Crash).
\* Before that, a call gets through its own writes: a start creates and schedules (or finds the
\* instance there, or fails: CallerFails), a signal sent to a started workflow reads, updates
\* (again after a conflict) and schedules (or finds it finished, or fails: SignalFails).  A
\* signal that never reads, or reads and never updates, leaves its caller in the call forever.
Waits(phase) == phase \in {"awaiting", "polling"}
Answered(phase, w) ==
    phase \in AnswerPhases \/ (phase = "polling" /\ instance[w].status \in Terminal)
Starting(phase) == phase \in {"idle", "created", "recovering"}
Sending(phase) == phase \in {"idle", "read", "updated"}
CallersAnswered ==
    \A n \in Nodes, w \in Workflows :
        /\ Starting(starter[n][w]) ~> ~Starting(starter[n][w])
        /\ Sending(signaller[n][w]) /\ instance[w].status # "ABSENT" ~> ~Sending(signaller[n][w])
        /\ Waits(starter[n][w]) ~> Answered(starter[n][w], w)
        /\ Waits(signaller[n][w]) ~> Answered(signaller[n][w], w)

\* No lost update: every instance write that commits was computed from the last write before
\* it (a run's save from what the run read, a signal's update from what the signal read).  The
\* version check of run_end and update_instance is what keeps it; a save that overwrote a
\* signal's update, or an update that overwrote a run's save, would lose the other's work.
NoLostUpdate == ~hist.lost

\* Leases are fenced: no write of a task row (a renewal, a remove, a retry, a dead letter)
\* commits for a lease that a later grant superseded.  A lease may lapse under a node that
\* still runs (OutliveLease, EarlyExpiry): the row's version is what stops the stale node's
\* writes, and this is what it is for.  With ContinueVersions off, a row removed and inserted
\* again reaches a stale holder's version again (lease_faults_aba).
LeaseFenced == ~hist.stale

\* A timer does not fire early: its TIMER row is leased (to be fired) only once it is due, as
\* a task row's lease only once its run_after has passed (an action property).
TimerOnTime ==
    [][\A w \in Workflows :
         timer'[w].row.status = "RUNNING" /\ timer'[w].row.version # timer[w].row.version
             => timer[w].row.run_after <= clock]_vars

\* A dead letter is earned: a row is marked FAILED only once its retries are spent.
DeadLetterEarned ==
    \A w \in Workflows : task[w].status = "FAILED" => task[w].retry_count >= MaxRetries

\* A dead letter fails its workflow: mark_failed writes the FAILED row and the FAILED instance in
\* one transaction, so a dead-lettered row's workflow is FAILED.  Where leases may lapse this
\* need not hold (one run completes the workflow while an overlapping run's failure
\* dead-letters the row, lease_faults_fenced_retry), so only models without lease faults check it.
DeadLetterFailsWorkflow ==
    \A w \in Workflows : task[w].status = "FAILED" => instance[w].status = "FAILED"

\* A worker slot is given back: whatever a slot holds (a run, a rerun owed, a run that ended
\* with its finishing write still to make) it lets go of, so that no run that is over keeps a
\* node's capacity.
SlotsFreed ==
    \A n \in Nodes, w \in Workflows, s \in Slots :
        work[n][w][s].phase # "none" ~> work[n][w][s].phase = "none"

\* Every started workflow reaches a terminal state.
EventuallyDone ==
    \A w \in Workflows : (instance[w].status = "RUNNING") ~> (instance[w].status \in Terminal)

=============================================================================
