---------------------------- MODULE CommandQueue ----------------------------
(***************************************************************************)
(* The command layer on top of the work queue (seed 002, "near-exactly-   *)
(* once"; ../shared/reference/workqueue-protocol.md; the reference is    *)
(* impl/workqueue/commands.py and its Lua steps).                         *)
(*                                                                         *)
(*  client: SubmitState (SET NX) --> Offer (XADD) --> stream              *)
(*  worker: ReceiveNew/Reclaim --> GuardTake --+--> PutIfOwner SUBMITTING  *)
(*          (a delivery)           (SET NX PX) |    ExternalCall (key=id)  *)
(*                                             |    PutIfOwner PROCESSING  *)
(*                                             |    PutIfOwner terminal    *)
(*                                             +--> GuardRelease --> Ack   *)
(*          a call that throws (CallThrows): GuardRelease, no Ack: the      *)
(*          message stays pending and a later delivery calls again         *)
(*  external system: counts calls and executions per idempotency key      *)
(*                                                                         *)
(* The queue below is abstract: any pending message of a command may be   *)
(* delivered to any free worker at any time, also while another attempt   *)
(* runs it. That is weaker than WorkQueue.tla promises (no overlap while  *)
(* owners live), so safety shown here holds whatever the queue does short *)
(* of losing a message.                                                    *)
(*                                                                         *)
(* Attempt ids: the seed draws a random id per attempt. A worker here runs *)
(* one attempt at a time, and an attempt that lost its guard ends before  *)
(* its worker starts another, so the worker's name identifies the one     *)
(* live attempt it can have: the guard's owner is a worker name.          *)
(*                                                                         *)
(* Guard TTL: the holder renews the guard (GuardRenew) in time unless its *)
(* process stalls; so the guard expires (GuardExpire) only when its       *)
(* holder crashed or is stale (paused past the TTL).                      *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
    WorkerIds,   \* processes that handle deliveries, one attempt at a time each (Workers)
    CommandIds,  \* command ids (Commands)
    NoOne,       \* a model value: no guard owner, no command
    MaxSubmits,  \* successful submit calls per command (the first and its duplicates);
                 \* a retry after a failed submit comes on top (each failure is a fault)
    MaxFaults    \* faults in all (worker crash, worker pause, client failure)

\* Gates: TRUE is the seed's design.
CONSTANTS
    AtomicPutIfOwner,    \* owner check and state write in one script (else two steps)
    RepairOnResubmit,    \* submit offers a message even when the state already exists
    AttemptGuard,        \* a delivery takes the command's attempt guard at all
    TerminalCheck,       \* a delivery that reads a terminal status (or none) only acks
    CancelTakesGuard,    \* cancel is refused while an attempt holds the guard
    ExternalIdempotent,  \* the remote honours the idempotency key (a cooperative remote)
    CancelOn,            \* the client may cancel
    CallChecksGuard,     \* the external call's script refuses an attempt that lost the guard
    ReleaseChecksOwner   \* guard_release deletes the guard only if the attempt owns it

\* Faults.
CONSTANTS
    CrashFault,        \* a worker process dies
    PauseFault,        \* a worker stalls longer than the guard TTL
    ClientCrashFault,  \* the client fails between the state write and the offer
    CallThrowsFault    \* the external system throws after the call (CallThrows)

\* The state record's TTL (state_ttl_ms, a day by default, set again by every state write:
\* submit_state.lua, put_if_owner.lua, cancel.lua). It is far longer than the guard TTL and
\* the queue's visibility timeout, so a record expires only once its command finished; a
\* message of it may still be pending then (a duplicate's, or one whose ack was lost).
CONSTANTS
    StateExpiry,   \* the record's TTL may run out within a behaviour (StateExpire)
    LateResubmit   \* a submit of the same id may come after that (else the client's
                   \* duplicates and retries all come within the TTL)

\* The workers and commands, as definitions of the constants: a trace spec checking several
\* traces in one TLC run gives each trace its own (a cfg may override a definition, not a
\* declared constant, with a value that depends on the trace; traces/systems/command.yaml).
Workers == WorkerIds
Commands == CommandIds

ASSUME /\ MaxSubmits \in Nat \ {0}
       /\ MaxFaults \in Nat
       /\ NoOne \notin WorkerIds \cup CommandIds
       /\ \A g \in {AtomicPutIfOwner, RepairOnResubmit, AttemptGuard, TerminalCheck,
                    CancelTakesGuard, ExternalIdempotent, CancelOn, CallChecksGuard,
                    ReleaseChecksOwner, CrashFault, PauseFault, ClientCrashFault,
                    CallThrowsFault, StateExpiry, LateResubmit} :
                 g \in BOOLEAN

Terminal == {"SUCCEEDED", "FAILED", "CANCELLED"}
Statuses == {"NONE", "PENDING", "SUBMITTING", "PROCESSING"} \cup Terminal
\* An attempt's program counter: what it does next ("drop": release the guard after a call
\* that threw, then end without acking).
PCs == {"idle", "take", "submit", "call", "process", "finish", "release", "ack", "drop"}

-----------------------------------------------------------------------------
(* The store (Redis): command state, attempt guard, stream messages.        *)
VARIABLES
    status,   \* [Commands -> Statuses]: cmd:<id> ("NONE": no record)
    guard,    \* [Commands -> Workers \cup {NoOne}]: cmd-attempt:<id>
    fresh,    \* [Commands -> Nat]: messages never delivered
    msgs      \* [Commands -> Nat]: messages not yet acked (fresh included)
storeVars == <<status, guard, fresh, msgs>>

(* The external system, keyed by command id.                                *)
VARIABLES
    extCalls,  \* [Commands -> Nat]: calls received
    extExec    \* [Commands -> Nat]: side effects performed
externalVars == <<extCalls, extExec>>

(* The client that submits each command.                                    *)
VARIABLES
    client,   \* [Commands -> {"idle", "offer", "done"}]
    submits   \* [Commands -> Nat]: submit calls made
clientVars == <<client, submits>>

(* The workers.                                                              *)
VARIABLES
    wmode,    \* [Workers -> {"running", "paused", "crashed"}]
    cmdOf,    \* [Workers -> Commands \cup {NoOne}]: the command of the current attempt
    pc,       \* [Workers -> PCs]
    stale,    \* [Workers -> BOOLEAN]: the guard may have expired unnoticed (after a stall)
    checked   \* [Workers -> BOOLEAN]: two-step putIfOwner between its check and its write
workerVars == <<wmode, cmdOf, pc, stale, checked>>

(* History, for the properties only.                                         *)
VARIABLES
    staleWrite,     \* a state write committed by an attempt that did not own the guard
    staleCall,      \* an external call made by an attempt that did not own the guard
    lateCall,       \* an external call made while the command was not SUBMITTING
    firstTerminal,  \* [Commands -> Terminal \cup {"NONE"}]: the first terminal status written
    restarted,      \* a SUBMITTING write to a command that had already reached a terminal status
    faults
writeHistory == <<staleWrite, staleCall, lateCall, firstTerminal, restarted>>  \* what writes and calls did
historyVars == <<writeHistory, faults>>

vars == <<storeVars, externalVars, clientVars, workerVars, historyVars>>

TypeOK ==
    /\ status \in [Commands -> Statuses]
    /\ guard \in [Commands -> Workers \cup {NoOne}]
    /\ fresh \in [Commands -> 0..(MaxSubmits + MaxFaults)]
    /\ msgs \in [Commands -> 0..(MaxSubmits + MaxFaults)]
    /\ \A k \in Commands : fresh[k] <= msgs[k]
    /\ extCalls \in [Commands -> Nat]
    /\ extExec \in [Commands -> Nat]
    /\ client \in [Commands -> {"idle", "offer", "done"}]
    /\ submits \in [Commands -> 0..(MaxSubmits + MaxFaults)]
    /\ wmode \in [Workers -> {"running", "paused", "crashed"}]
    /\ cmdOf \in [Workers -> Commands \cup {NoOne}]
    /\ pc \in [Workers -> PCs]
    /\ stale \in [Workers -> BOOLEAN]
    /\ checked \in [Workers -> BOOLEAN]
    /\ staleWrite \in BOOLEAN
    /\ staleCall \in BOOLEAN
    /\ lateCall \in BOOLEAN
    /\ firstTerminal \in [Commands -> Terminal \cup {"NONE"}]
    /\ restarted \in BOOLEAN
    /\ faults \in 0..MaxFaults

-----------------------------------------------------------------------------
CanFault(gate) == gate /\ faults < MaxFaults
Running(w) == wmode[w] = "running"

\* What an attempt does after taking the guard, from the status it reads then. Without the
\* terminal check a finished command is asked for its result again and written again (the
\* reference's `else` branch), and a missing record is submitted afresh.
NextPC(s) ==
    CASE s = "PENDING"    -> "submit"
      [] s = "SUBMITTING" -> "call"      \* an interrupted submission: call again, same key
      [] s = "PROCESSING" -> "finish"
      [] s \in Terminal   -> IF TerminalCheck THEN "release" ELSE "finish"
      [] OTHER            -> IF TerminalCheck THEN "release" ELSE "submit"

\* The status an attempt writes at each program counter (finish: either outcome).
Targets(p) ==
    CASE p = "submit"  -> {"SUBMITTING"}
      [] p = "process" -> {"PROCESSING"}
      [] p = "finish"  -> {"SUCCEEDED", "FAILED"}
      [] OTHER         -> {}

\* The attempt's next step after a state write at p.
AfterWrite(p) == CASE p = "submit" -> "call" [] p = "process" -> "finish" [] OTHER -> "release"

\* End the attempt of w (its message stays pending unless it was acked).
EndAttempt(w) ==
    /\ pc' = [pc EXCEPT ![w] = "idle"]
    /\ cmdOf' = [cmdOf EXCEPT ![w] = NoOne]
    /\ checked' = [checked EXCEPT ![w] = FALSE]
    /\ stale' = [stale EXCEPT ![w] = FALSE]   \* staleness belongs to the attempt

\* Record a committed state write s to command k by worker w.
Wrote(w, k, s) ==
    /\ status' = [status EXCEPT ![k] = s]
    /\ staleWrite' = (staleWrite \/ guard[k] /= w)
    /\ UNCHANGED <<staleCall, lateCall>>
    /\ firstTerminal' = [firstTerminal EXCEPT ![k] =
                            IF @ = "NONE" /\ s \in Terminal THEN s ELSE @]
    /\ restarted' = (restarted \/ (s = "SUBMITTING" /\ firstTerminal[k] /= "NONE"))

-----------------------------------------------------------------------------
Init ==
    /\ status = [k \in Commands |-> "NONE"]
    /\ guard = [k \in Commands |-> NoOne]
    /\ fresh = [k \in Commands |-> 0]
    /\ msgs = [k \in Commands |-> 0]
    /\ extCalls = [k \in Commands |-> 0]
    /\ extExec = [k \in Commands |-> 0]
    /\ client = [k \in Commands |-> "idle"]
    /\ submits = [k \in Commands |-> 0]
    /\ wmode = [w \in Workers |-> "running"]
    /\ cmdOf = [w \in Workers |-> NoOne]
    /\ pc = [w \in Workers |-> "idle"]
    /\ stale = [w \in Workers |-> FALSE]
    /\ checked = [w \in Workers |-> FALSE]
    /\ staleWrite = FALSE
    /\ staleCall = FALSE
    /\ lateCall = FALSE
    /\ firstTerminal = [k \in Commands |-> "NONE"]
    /\ restarted = FALSE
    /\ faults = 0

\* submit_state: SET cmd:<id> PENDING NX. The first call, a retry after a failure, or a
\* duplicate submission. The seed offers a message whether or not the state was created,
\* which repairs a submit that failed between its two steps; the old submit offered only
\* when it created the state.
SubmitState(k) ==
    /\ \/ client[k] = "idle"                               \* the first call, or a retry
       \/ client[k] = "done" /\ submits[k] < MaxSubmits     \* a duplicate
    /\ submits' = [submits EXCEPT ![k] = @ + 1]
    /\ IF status[k] = "NONE"
         THEN /\ status' = [status EXCEPT ![k] = "PENDING"]                   \* created
              /\ client' = [client EXCEPT ![k] = "offer"]
         ELSE /\ client' = [client EXCEPT ![k] =                              \* exists
                               IF RepairOnResubmit THEN "offer" ELSE "done"]
              /\ UNCHANGED status
    /\ UNCHANGED <<guard, fresh, msgs, externalVars, workerVars, historyVars>>

\* offer: XADD of the command's message.
Offer(k) ==
    /\ client[k] = "offer"
    /\ client' = [client EXCEPT ![k] = "done"]
    /\ fresh' = [fresh EXCEPT ![k] = @ + 1]
    /\ msgs' = [msgs EXCEPT ![k] = @ + 1]
    /\ UNCHANGED <<status, guard, externalVars, submits, workerVars, historyVars>>

\* receive_new: a never-delivered message of k reaches w.
ReceiveNew(w, k) ==
    /\ Running(w) /\ pc[w] = "idle"
    /\ fresh[k] > 0
    /\ fresh' = [fresh EXCEPT ![k] = @ - 1]
    /\ pc' = [pc EXCEPT ![w] = "take"]
    /\ cmdOf' = [cmdOf EXCEPT ![w] = k]
    /\ UNCHANGED <<status, guard, msgs, externalVars, clientVars, wmode, stale, checked,
                   historyVars>>

\* reclaim: a delivered, unacked message of k reaches w again (at-least-once).
Reclaim(w, k) ==
    /\ Running(w) /\ pc[w] = "idle"
    /\ msgs[k] > fresh[k]
    /\ pc' = [pc EXCEPT ![w] = "take"]
    /\ cmdOf' = [cmdOf EXCEPT ![w] = k]
    /\ UNCHANGED <<storeVars, externalVars, clientVars, wmode, stale, checked, historyVars>>

\* guard_take: SET cmd-attempt:<id> <attempt> NX PX, then read the state. A delivery that
\* finds the guard taken (busy) leaves its message pending. Without the attempt guard this
\* is only the read (the reference logs no guard_take then).
GuardTake(w) ==
    LET k == cmdOf[w] IN
    /\ Running(w) /\ pc[w] = "take"
    /\ CASE ~AttemptGuard ->                                                 \* read only
              /\ pc' = [pc EXCEPT ![w] = NextPC(status[k])]
              /\ UNCHANGED <<guard, cmdOf, checked, stale>>
         [] guard[k] = NoOne ->                                               \* taken
              /\ guard' = [guard EXCEPT ![k] = w]
              /\ pc' = [pc EXCEPT ![w] = NextPC(status[k])]
              /\ UNCHANGED <<cmdOf, checked, stale>>
         [] OTHER ->                                                          \* busy
              /\ EndAttempt(w)
              /\ UNCHANGED guard
    /\ UNCHANGED <<status, fresh, msgs, externalVars, clientVars, wmode, historyVars>>

\* guard_renew: compare-and-set PEXPIRE, on every heartbeat of an attempt that holds the
\* guard and has not released it. In time it changes nothing (renewed); after a stall it
\* tells the attempt whether it still owns the guard, and if not (lost) the attempt ends and
\* leaves its message pending.
GuardRenew(w) ==
    LET k == cmdOf[w] IN
    /\ AttemptGuard /\ Running(w)
    /\ pc[w] \notin {"idle", "take", "ack", "drop"}
    /\ IF guard[k] = w
         THEN /\ stale' = [stale EXCEPT ![w] = FALSE]                          \* renewed
              /\ UNCHANGED <<pc, cmdOf, checked>>
         ELSE EndAttempt(w)                                                    \* lost
    /\ UNCHANGED <<storeVars, externalVars, clientVars, wmode, historyVars>>

\* The two-step variant's first step: GET the guard and compare (no write).
PutCheck(w) ==
    LET k == cmdOf[w] IN
    /\ ~AtomicPutIfOwner
    /\ Running(w) /\ pc[w] \in {"submit", "process", "finish"} /\ ~checked[w]
    /\ IF guard[k] = w \/ ~AttemptGuard
         THEN /\ checked' = [checked EXCEPT ![w] = TRUE]
              /\ UNCHANGED <<pc, cmdOf, stale>>
         ELSE EndAttempt(w)
    /\ UNCHANGED <<storeVars, externalVars, clientVars, wmode, historyVars>>

\* put_if_owner: one script checks the guard's owner and writes the state (written), or
\* writes nothing (refused). In the two-step variant it writes after an earlier check.
PutIfOwner(w, s) ==
    LET k == cmdOf[w] IN
    /\ Running(w) /\ pc[w] \in {"submit", "process", "finish"}
    /\ s \in Targets(pc[w])
    /\ AtomicPutIfOwner \/ checked[w]
    /\ IF ~AtomicPutIfOwner \/ ~AttemptGuard \/ guard[k] = w
         THEN /\ Wrote(w, k, s)                                                \* written
              /\ pc' = [pc EXCEPT ![w] = AfterWrite(pc[w])]
              /\ checked' = [checked EXCEPT ![w] = FALSE]
              /\ UNCHANGED <<cmdOf, stale>>
         ELSE /\ EndAttempt(w)                                                 \* refused
              /\ UNCHANGED <<status, writeHistory>>
    /\ UNCHANGED <<guard, fresh, msgs, externalVars, clientVars, wmode, faults>>

\* external_call: the call to the external system with the command id as idempotency key,
\* recorded by a script that first checks the guard's owner (external_call.lua): an attempt
\* that lost its guard (a stall past the TTL) is refused there and ends, nothing called.
\* A cooperative remote performs the side effect once per key; an uncooperative one on
\* every call.
CallRefused(w) == CallChecksGuard /\ AttemptGuard /\ guard[cmdOf[w]] /= w

ExternalCall(w) ==
    LET k == cmdOf[w] IN
    /\ Running(w) /\ pc[w] = "call"
    /\ IF CallRefused(w)
         THEN /\ EndAttempt(w)                                                 \* refused
              /\ UNCHANGED <<externalVars, staleCall, lateCall>>
         ELSE /\ extCalls' = [extCalls EXCEPT ![k] = @ + 1]                    \* called
              /\ extExec' = [extExec EXCEPT ![k] = IF ExternalIdempotent /\ @ > 0 THEN @ ELSE @ + 1]
              /\ staleCall' = (staleCall \/ (AttemptGuard /\ guard[k] /= w))
              /\ lateCall' = (lateCall \/ status[k] /= "SUBMITTING")
              /\ pc' = [pc EXCEPT ![w] = "process"]
              /\ UNCHANGED <<cmdOf, stale, checked>>
    /\ UNCHANGED <<storeVars, clientVars, wmode, staleWrite, firstTerminal, restarted, faults>>

\* The external system threw after the call (the reference's handler_throws): the attempt
\* writes nothing more, releases its guard at once (so that the next delivery may call again,
\* same key) and ends without acking, its message left pending. The step itself, which a
\* trace spec takes where the attempt's guard_release line shows it; Throw spends a fault.
CallThrows(w) ==
    /\ Running(w) /\ pc[w] = "process"
    /\ pc' = [pc EXCEPT ![w] = "drop"]
    /\ UNCHANGED <<storeVars, externalVars, clientVars, wmode, cmdOf, stale, checked,
                   writeHistory>>

Throw(w) ==
    /\ CanFault(CallThrowsFault)
    /\ CallThrows(w)
    /\ faults' = faults + 1

\* guard_release: compare-and-delete (released, or lost when another attempt owns it); after
\* a throw the attempt ends there, not acking. Without the owner check a plain DEL, which
\* frees another attempt's guard.
GuardRelease(w) ==
    LET k == cmdOf[w] IN
    /\ Running(w) /\ pc[w] \in {"release", "drop"}
    /\ guard' = [guard EXCEPT ![k] = IF @ = w \/ ~ReleaseChecksOwner THEN NoOne ELSE @]
    /\ IF pc[w] = "release"
         THEN /\ pc' = [pc EXCEPT ![w] = "ack"]
              /\ UNCHANGED <<cmdOf, stale, checked>>
         ELSE EndAttempt(w)
    /\ UNCHANGED <<status, fresh, msgs, externalVars, clientVars, wmode, historyVars>>

\* ack: XACK + XDEL of the delivered message. A duplicate delivery of a message already
\* acked acks nothing (XACK returns 0).
Ack(w) ==
    LET k == cmdOf[w] IN
    /\ Running(w) /\ pc[w] = "ack"
    /\ msgs' = [msgs EXCEPT ![k] = IF @ > fresh[k] THEN @ - 1 ELSE @]
    /\ EndAttempt(w)
    /\ UNCHANGED <<status, guard, fresh, externalVars, clientVars, wmode, historyVars>>

\* cancel: take the guard, write CANCELLED, release, in one step (cancelled); refused while
\* an attempt holds the guard (busy); a no-op once the command is finished (terminal). The
\* last two change nothing: they are here so that a trace spec can match their lines.
Cancel(k) ==
    /\ CancelOn
    /\ status[k] /= "NONE"
    /\ \/ /\ status[k] \notin Terminal                                       \* cancelled
          /\ guard[k] = NoOne \/ ~CancelTakesGuard
          /\ status' = [status EXCEPT ![k] = "CANCELLED"]
          /\ firstTerminal' = [firstTerminal EXCEPT ![k] = IF @ = "NONE" THEN "CANCELLED" ELSE @]
       \/ /\ status[k] \notin Terminal /\ guard[k] /= NoOne /\ CancelTakesGuard  \* busy
          /\ UNCHANGED <<status, firstTerminal>>
       \/ /\ status[k] \in Terminal                                          \* terminal
          /\ UNCHANGED <<status, firstTerminal>>
    /\ UNCHANGED <<guard, fresh, msgs, externalVars, clientVars, workerVars, staleWrite,
                   staleCall, lateCall, restarted, faults>>

-----------------------------------------------------------------------------
(* Hidden actions.                                                          *)

\* The guard's TTL runs out: its holder crashed, or stalled past the TTL.
GuardExpire(k) ==
    /\ guard[k] /= NoOne
    /\ wmode[guard[k]] = "crashed" \/ stale[guard[k]]
    /\ guard' = [guard EXCEPT ![k] = NoOne]
    /\ UNCHANGED <<status, fresh, msgs, externalVars, clientVars, workerVars, historyVars>>

\* A worker process dies mid-attempt; its message stays pending, its guard expires later.
\* Some worker keeps running.
Crash(w) ==
    /\ CanFault(CrashFault)
    /\ wmode[w] /= "crashed"
    /\ \E v \in Workers \ {w} : wmode[v] /= "crashed"
    /\ wmode' = [wmode EXCEPT ![w] = "crashed"]
    /\ EndAttempt(w)
    /\ faults' = faults + 1
    /\ UNCHANGED <<storeVars, externalVars, clientVars, writeHistory>>

\* A worker stalls mid-attempt for longer than the guard TTL. Stall is the step itself, which
\* a trace spec takes with a budget of its own (the faults its trace counts).
Stall(w) ==
    /\ Running(w) /\ pc[w] /= "idle"
    /\ wmode' = [wmode EXCEPT ![w] = "paused"]
    /\ stale' = [stale EXCEPT ![w] = TRUE]
    /\ UNCHANGED <<storeVars, externalVars, clientVars, cmdOf, pc, checked, writeHistory>>

Pause(w) ==
    /\ CanFault(PauseFault)
    /\ Stall(w)
    /\ faults' = faults + 1

Resume(w) ==
    /\ wmode[w] = "paused"
    /\ wmode' = [wmode EXCEPT ![w] = "running"]
    /\ UNCHANGED <<storeVars, externalVars, clientVars, cmdOf, pc, stale, checked,
                   historyVars>>

\* The client fails after writing the state and before offering: the caller sees an error
\* and submits again (ClientFails is the step, for a trace spec's own budget).
ClientFails(k) ==
    /\ client[k] = "offer"
    /\ client' = [client EXCEPT ![k] = "idle"]
    /\ UNCHANGED <<storeVars, externalVars, submits, workerVars, writeHistory>>

ClientCrash(k) ==
    /\ CanFault(ClientCrashFault)
    /\ ClientFails(k)
    /\ faults' = faults + 1

\* The record's TTL ran out (Redis deletes cmd:<id>): only once the command finished (see
\* StateExpiry), and, unless LateResubmit, once the client has made its last submit. A
\* delivery then reads no record; a later submit of the id creates it afresh.
StateExpire(k) ==
    /\ StateExpiry
    /\ status[k] \in Terminal
    /\ LateResubmit \/ (client[k] = "done" /\ submits[k] >= MaxSubmits)  \* no submit to come
    /\ status' = [status EXCEPT ![k] = "NONE"]
    /\ UNCHANGED <<guard, fresh, msgs, externalVars, clientVars, workerVars, historyVars>>

\* The record of a finished command expired.
Expired(k) == status[k] = "NONE" /\ firstTerminal[k] /= "NONE"

-----------------------------------------------------------------------------
WorkerStep(w) ==
    \/ \E k \in Commands : ReceiveNew(w, k) \/ Reclaim(w, k)
    \/ GuardTake(w) \/ GuardRenew(w) \/ PutCheck(w)
    \/ \E s \in Statuses : PutIfOwner(w, s)
    \/ ExternalCall(w) \/ GuardRelease(w) \/ Ack(w)
    \/ Crash(w) \/ Pause(w) \/ Resume(w) \/ Throw(w)

Next ==
    \/ \E k \in Commands :
          SubmitState(k) \/ Offer(k) \/ Cancel(k) \/ GuardExpire(k) \/ ClientCrash(k)
          \/ StateExpire(k)
    \/ \E w \in Workers : WorkerStep(w)

\* Fairness: a client retries until its submit went through (not its duplicates); workers
\* keep taking their steps; a guard whose holder is gone expires in the end.
Fairness ==
    /\ \A k \in Commands :
        /\ WF_vars(client[k] = "idle" /\ SubmitState(k))
        /\ WF_vars(Offer(k))
        /\ WF_vars(GuardExpire(k))
    /\ \A w \in Workers :
        /\ WF_vars(\E k \in Commands : ReceiveNew(w, k))
        /\ WF_vars(\E k \in Commands : Reclaim(w, k))
        /\ WF_vars(GuardTake(w) \/ GuardRenew(w) \/ PutCheck(w))
        /\ WF_vars(\E s \in Statuses : PutIfOwner(w, s))
        /\ WF_vars(ExternalCall(w) \/ GuardRelease(w) \/ Ack(w))
        /\ WF_vars(Resume(w))

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Properties.                                                              *)

\* A stale attempt (whose guard expired or passed to another) never writes the state.
NoStaleWrite == ~staleWrite

\* A command reaches at most one terminal status, and it never changes (its record may expire:
\* the TTL ends it, it does not change it).
TerminalIsStable ==
    \A k \in Commands : firstTerminal[k] /= "NONE" => status[k] \in {firstTerminal[k], "NONE"}

\* No external call is made by an attempt that does not own the guard (the call's own owner
\* check): the stale attempt's call may come long after another attempt took over.
NoStaleCall == ~staleCall

\* The remote is called only while the command is SUBMITTING: a delivery that reads PROCESSING
\* asks for the result instead of calling again (bounds the calls from below what ExternalOnce
\* bounds from above, with a cooperative remote too).
CallOnlySubmitting == ~lateCall

\* A command succeeds or fails only after the remote acted on a call: no attempt writes a
\* result it never asked for, nor one for a side effect that never happened.
FinishedAfterCall == \A k \in Commands : status[k] \in {"SUCCEEDED", "FAILED"} => extExec[k] > 0

\* A finished command is never started again: no attempt writes SUBMITTING (the step before
\* a fresh call of the remote) once it reached a terminal status, also after its record expired.
\* An attempt that finds SUBMITTING retries the same submission: that is not a start.
NoRestart == ~restarted

\* The external side effect happens at most once per command.
ExternalOnce == \A k \in Commands : extExec[k] <= 1

\* The call window of an attempt: from its SUBMITTING write (or its read of SUBMITTING) to its
\* PROCESSING write, where it calls the remote.
CallWindow == {"call", "process"}

\* The attempts of k in their call window that are live: running and not stale. A stale one
\* (stalled past the guard TTL) may still be in its window; its guard has lapsed or passed on.
LiveCalls(k) == {w \in Workers : /\ cmdOf[w] = k /\ pc[w] \in CallWindow
                                 /\ Running(w) /\ ~stale[w]}

\* At most one live attempt of a command is in its call window at a time: two attempts may be
\* there at once only when all but one have lost the guard to a stall. Unlike ExternalOnce this
\* does not hold by construction with a cooperative remote: it is the guard's own promise.
OneLiveAttempt == \A k \in Commands : Cardinality(LiveCalls(k)) <= 1

\* Every submitted command finishes (its record may have expired since) and its messages are
\* acked.
EveryCommandDone ==
    \A k \in Commands :
        status[k] /= "NONE" ~> ((status[k] \in Terminal \/ Expired(k)) /\ msgs[k] = 0)

=============================================================================
