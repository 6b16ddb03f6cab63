----------------------------- MODULE WorkQueue -----------------------------
(***************************************************************************)
(* The Redis Streams work queue with invocation-scoped leases (seed 002,   *)
(* ../shared/reference/workqueue-protocol.md; impl/workqueue).             *)
(*                                                                         *)
(*   producer --Offer--> stream --ReceiveNew/Reclaim--> inbox[c]           *)
(*                         |                               |               *)
(*                         |  PEL: owner, idle, deliveries | InvokeStart   *)
(*                         |                               v               *)
(*                         |<------- Renew (heartbeat) -- active[c]        *)
(*                         |                               | InvokeEnd     *)
(*                         |<------- Ack  (done) --------- toAck[c]        *)
(*                         |<------- Release (not done) -- toRelease[c]    *)
(*                                                                         *)
(* Time is abstracted to the idle time of each pending entry (now minus   *)
(* last_touched, in ticks, saturated at the visibility timeout VT): all   *)
(* the protocol ever asks of time is "has this entry been idle for VT?".  *)
(* A trace spec maps a logged last_touched to idle = min(VT, now - lt).   *)
(*                                                                         *)
(* The heartbeat renews every active invocation every VT/3; we model its  *)
(* timeliness by forbidding Tick to let a heartbeated entry reach VT      *)
(* before its Renew. A heartbeat that lags, or a paused process, lifts    *)
(* that restraint for the invocations concerned (`lagging`).              *)
(*                                                                         *)
(* Names of actions are the trace ops of tla/README.md (Work queue).      *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
    ConsumerIds,    \* consumer names (one per process) (Consumers)
    EntryIds,       \* stream entry ids the producer may offer (Entries)
    NoOne,          \* a model value: the owner of an entry that is not pending
    PermitCount,    \* concurrency(): permits per consumer (Permits)
    VTTicks,        \* visibility timeout, in ticks (>= 2) (VT)
    MaxProcTicks,   \* maxProcessingTime, in ticks (MaxProc)
    MaxDeliveries,  \* a handler may answer "not done" only below this delivery count; the
                    \* count saturates there (counting further changes no decision)
    MaxFaults       \* how many faults (crash, pause, lag, ack failure, rejection, close) in all

\* Gates: TRUE is the seed's design; each calibration model switches one off.
CONSTANTS
    RenewOwnerCheck,          \* renewal claims only if XPENDING says we still own it
    RenewPastMaxProc,         \* the heartbeat keeps renewing past maxProcessingTime
    InvocationScopedPermits,  \* a permit is held only while one handler call runs
    AtomicRenew,              \* XPENDING and XCLAIM in one Lua script (else two steps)
    HeartbeatOn,              \* active invocations are renewed every VT/3 at all
    CleanupOnAckFailure,      \* an ack that throws still ends the invocation's record
    ReclaimRetries,           \* polls try XAUTOCLAIM for entries idle for VT at all
    CloseWaitsForHandlers,    \* close keeps renewing until running handlers return
    PermitCheck,              \* a poll takes work only with a free permit (impl permit_bound)
    ReclaimTurn,              \* one poll in PollRatio + 1 tries XAUTOCLAIM first
    PollFallback,             \* a poll whose first source is empty tries the other one
    DropDuplicateStart        \* the executor drops a hand-off of an entry this consumer already
                              \* runs (impl/workqueue/node.py; off: a calibration only, the entry
                              \* runs twice on one consumer: NoDuplicateStart)

\* Faults: which hidden failures may happen (each costs one of MaxFaults).
CONSTANTS
    CrashFault, PauseFault, LagFault, AckFailFault, RejectFault, CloseFault

ASSUME /\ PermitCount \in Nat \ {0}
       /\ VTTicks \in Nat /\ VTTicks >= 2
       /\ MaxProcTicks \in Nat \ {0}
       /\ MaxDeliveries \in Nat \ {0}
       /\ MaxFaults \in Nat
       /\ NoOne \notin ConsumerIds
       /\ \A g \in {RenewOwnerCheck, RenewPastMaxProc, InvocationScopedPermits, AtomicRenew,
                    HeartbeatOn, CleanupOnAckFailure, ReclaimRetries, CloseWaitsForHandlers,
                    PermitCheck, ReclaimTurn, PollFallback, CrashFault, PauseFault, LagFault, AckFailFault, RejectFault, CloseFault} :
              g \in BOOLEAN

\* The entries, consumers, permits and timeouts, as definitions of the constants: a trace spec
\* checking several traces in one TLC run gives each trace its own (a cfg may override a
\* definition, not a declared constant, with a value that depends on the trace;
\* traces/systems/workqueue.yaml, per_trace). The other way, an INSTANCE of the trace spec per
\* trace, costs about twice the search: every name inside is looked up through the instance.
Entries == EntryIds
Consumers == ConsumerIds
Permits == PermitCount
VT == VTTicks
MaxProc == MaxProcTicks

Statuses == {"unsent", "new", "pending", "gone"}
Modes    == {"running", "paused", "closing", "crashed"}
Results  == {"done", "not_done", "threw"}

-----------------------------------------------------------------------------
(* The store: the stream and its consumer group's pending-entries list.     *)
VARIABLES
    status,      \* [Entries -> Statuses]: not offered, undelivered, in the PEL, acked+deleted
    owner,       \* [Entries -> Consumers \cup {NoOne}]: the PEL owner
    idle,        \* [Entries -> 0..VT]: now - last_touched, saturated at VT
    deliveries   \* [Entries -> 0..MaxDeliveries]: the PEL delivery count (saturated)
storeVars == <<status, owner, idle, deliveries>>

(* The consumers (impl/workqueue/node.py, consumer.py): what each holds.   *)
VARIABLES
    mode,        \* [Consumers -> Modes]
    inbox,       \* [Consumers -> SUBSET Entries]: delivered, handed to the executor
    active,      \* [Consumers -> SUBSET Entries]: handler invocations in progress
    permits,     \* [Consumers -> SUBSET Entries]: entries holding one of c's permits
    toAck,       \* [Consumers -> SUBSET Entries]: ended "done", ack not yet committed
    toRelease,   \* [Consumers -> SUBSET Entries]: ended not done / threw, touch not yet committed
    lagging,     \* [Consumers -> SUBSET Entries]: invocations whose lease may have lapsed unnoticed
    stalled,     \* [Consumers -> SUBSET Entries]: hand-offs caught by a pause (likewise)
    leaked,      \* [Consumers -> SUBSET Entries]: records of ended calls kept after a failed ack
    lost,        \* [Consumers -> SUBSET Entries]: invocations whose renewal was refused
    checked,     \* [Consumers -> SUBSET Entries]: two-step renewal between XPENDING and XCLAIM
    elapsed      \* [Consumers -> [Entries -> 0..MaxProc]]: invocation age (old design only)
consumerVars == <<mode, inbox, active, permits, toAck, toRelease, lagging, stalled, leaked, lost,
                 checked, elapsed>>

\* The poll loop's turn (impl/workqueue/core.py Fairness): polls[c] counts c's polls modulo
\* PollRatio + 1; the last of each round tries reclaim first, the others receive_new first.
VARIABLE polls   \* [Consumers -> 0..PollRatio]

VARIABLE faults  \* faults injected so far

\* History: some consumer started an entry it was already running (`active[c]` is a set, so the
\* second invocation would not show in it). Only NoDuplicateStart reads it.
VARIABLE doubled
vars == <<storeVars, consumerVars, polls, faults, doubled>>

\* The seed's ratio of new-first to reclaim-first polls (its default, and the impl's).
PollRatio == 3

TypeOK ==
    /\ status \in [Entries -> Statuses]
    /\ owner \in [Entries -> Consumers \cup {NoOne}]
    /\ idle \in [Entries -> 0..VT]
    /\ deliveries \in [Entries -> 0..MaxDeliveries]
    /\ mode \in [Consumers -> Modes]
    /\ \A v \in {inbox, active, permits, toAck, toRelease, lagging, stalled, leaked, lost,
                 checked} :
           v \in [Consumers -> SUBSET Entries]
    /\ elapsed \in [Consumers -> [Entries -> 0..MaxProc]]
    /\ polls \in [Consumers -> 0..PollRatio]
    /\ faults \in 0..MaxFaults
    /\ doubled \in BOOLEAN

-----------------------------------------------------------------------------
Min(a, b) == IF a < b THEN a ELSE b
Up(c)      == mode[c] \in {"running", "closing"}  \* takes steps
Polling(c) == mode[c] = "running"                 \* may take new work
\* Without the check (PermitCheck off: the reference's permit_bound gate, whose acquire always
\* succeeds) a poll takes work whatever the permits say: the calibration of PermitBound.
FreePermit(c) == ~PermitCheck \/ Cardinality(permits[c]) < Permits
CanFault(gate) == gate /\ faults < MaxFaults

\* The permits a consumer holds after a step: invocation-scoped permits cover the hand-off
\* and the call; the old design's permit stays with the message until it is acked.
PermitsAfter(c, newInbox, newActive) ==
    IF InvocationScopedPermits THEN newInbox \cup newActive \cup leaked[c]
    ELSE permits[c] \cup newInbox

\* Whether the heartbeat still renews an invocation (the old design stopped at MaxProc; a
\* close that does not wait for handlers stops it at once).
\* (Guards as implications, not disjunctions: TLC takes each true disjunct of an action's
\* conjunct as a branch of its own, and evaluates the rest of the step again for each, to the
\* same successor.)
Heartbeats(c, e) ==
    /\ HeartbeatOn
    /\ mode[c] = "closing" => CloseWaitsForHandlers
    /\ ~RenewPastMaxProc => elapsed[c][e] < MaxProc

\* An invocation that holds its lease: it runs, its lease never lapsed unnoticed, and no
\* renewal was refused. A stalled process cannot be stopped by any lease (only fenced
\* writes can, see CommandQueue); what the protocol promises is that a stale invocation
\* learns it at its next heartbeat and never takes the entry back.
Holds(c, e) == e \in active[c] /\ e \notin lagging[c] /\ e \notin lost[c]

\* The records the heartbeat renews: running calls, and with CleanupOnAckFailure off the
\* leaked records of calls whose ack failed (renewed forever, as in the old code).
Renewing(c) == active[c] \cup leaked[c]

\* Entries whose lease the running process keeps fresh: Tick may not let them reach VT.
Protected(e) ==
    \E c \in Consumers :
        /\ Up(c)
        /\ \/ e \in inbox[c] /\ e \notin stalled[c]     \* the hand-off is prompt
           \/ /\ e \in Renewing(c) /\ e \notin lagging[c] /\ e \notin lost[c]
              /\ Heartbeats(c, e) /\ owner[e] = c

-----------------------------------------------------------------------------
Init ==
    /\ status = [e \in Entries |-> "unsent"]
    /\ owner = [e \in Entries |-> NoOne]
    /\ idle = [e \in Entries |-> 0]
    /\ deliveries = [e \in Entries |-> 0]
    /\ mode = [c \in Consumers |-> "running"]
    /\ inbox = [c \in Consumers |-> {}]
    /\ active = [c \in Consumers |-> {}]
    /\ permits = [c \in Consumers |-> {}]
    /\ toAck = [c \in Consumers |-> {}]
    /\ toRelease = [c \in Consumers |-> {}]
    /\ lagging = [c \in Consumers |-> {}]
    /\ stalled = [c \in Consumers |-> {}]
    /\ leaked = [c \in Consumers |-> {}]
    /\ lost = [c \in Consumers |-> {}]
    /\ checked = [c \in Consumers |-> {}]
    /\ elapsed = [c \in Consumers |-> [e \in Entries |-> 0]]
    /\ polls = [c \in Consumers |-> 0]
    /\ faults = 0
    /\ doubled = FALSE

\* offer: XADD (impl/workqueue/queue.py offer)
Offer(e) ==
    /\ status[e] = "unsent"
    /\ status' = [status EXCEPT ![e] = "new"]
    /\ UNCHANGED <<owner, idle, deliveries, consumerVars, faults, doubled>>

\* Delivery of one entry to c (XREADGROUP > or XAUTOCLAIM): the poll first takes a permit.
Deliver(c, e) ==
    /\ owner' = [owner EXCEPT ![e] = c]
    /\ idle' = [idle EXCEPT ![e] = 0]
    /\ deliveries' = [deliveries EXCEPT ![e] = Min(@ + 1, MaxDeliveries)]
    /\ inbox' = [inbox EXCEPT ![c] = @ \cup {e}]
    /\ permits' = [permits EXCEPT ![c] = PermitsAfter(c, inbox'[c], active[c])]

\* What each kind of poll could take: a never-delivered entry, or one idle for VT (not one
\* that c has just been handed).
Fresh(e) == status[e] = "new"
Reclaimable(c, e) ==
    /\ ReclaimRetries
    /\ status[e] = "pending" /\ idle[e] = VT
    /\ e \notin inbox[c]

\* receive_new: XREADGROUP GROUP g c COUNT 1 STREAMS queue >
ReceiveNew(c, e) ==
    /\ Polling(c) /\ FreePermit(c)
    /\ Fresh(e)
    /\ status' = [status EXCEPT ![e] = "pending"]
    /\ Deliver(c, e)
    /\ UNCHANGED <<mode, active, toAck, toRelease, lagging, stalled, leaked, lost, checked,
                   elapsed, faults, doubled>>

\* reclaim: XAUTOCLAIM queue g c VT cursor COUNT 1 (an entry idle for VT changes owner)
Reclaim(c, e) ==
    /\ Polling(c) /\ FreePermit(c)
    /\ Reclaimable(c, e)
    /\ Deliver(c, e)
    /\ UNCHANGED <<status, mode, active, toAck, toRelease, lagging, stalled, leaked, lost,
                   checked, elapsed, faults, doubled>>

\* invoke_start: the executor runs the handler (outcome started), drops an entry this node
\* already runs (duplicate_dropped, a self-reclaim after heartbeat lag), or rejects it
\* (rejected: the permit is released and the entry left for a later reclaim). A hand-off
\* caught by a pause starts lagging: its lease may be gone before the call begins.
InvokeStart(c, e) ==
    /\ Up(c) /\ e \in inbox[c]
    /\ inbox' = [inbox EXCEPT ![c] = @ \ {e}]
    /\ stalled' = [stalled EXCEPT ![c] = @ \ {e}]
    /\ \/ /\ e \in Renewing(c) /\ DropDuplicateStart           \* duplicate_dropped
          /\ UNCHANGED <<active, lagging, elapsed, faults, doubled>>
       \/ /\ e \notin Renewing(c) /\ CanFault(RejectFault)       \* rejected
          /\ faults' = faults + 1
          /\ UNCHANGED <<active, lagging, elapsed, doubled>>
       \/ /\ e \notin Renewing(c) \/ ~DropDuplicateStart          \* started
          \* history: a start of an entry this consumer already runs (NoDuplicateStart)
          /\ doubled' = (doubled \/ e \in active[c])
          /\ active' = [active EXCEPT ![c] = @ \cup {e}]
          /\ elapsed' = [elapsed EXCEPT ![c][e] = 0]
          /\ lagging' = [lagging EXCEPT ![c] =
                            IF e \in stalled[c] THEN @ \cup {e} ELSE @ \ {e}]
          /\ UNCHANGED faults
    /\ permits' = [permits EXCEPT ![c] = PermitsAfter(c, inbox'[c], active'[c])]
    /\ UNCHANGED <<storeVars, mode, toAck, toRelease, leaked, lost, checked>>

\* invoke_end: the handler returns true (done), false (not_done) or throws; the permit
\* is released. A handler may stay not done only below MaxDeliveries deliveries, so that
\* every entry is finished in the end (the model's bound on retries).
InvokeEnd(c, e, r) ==
    /\ Up(c) /\ e \in active[c] /\ e \notin checked[c]
    /\ r # "done" => deliveries[e] < MaxDeliveries   \* (an implication: see Heartbeats)
    /\ active' = [active EXCEPT ![c] = @ \ {e}]
    /\ lagging' = [lagging EXCEPT ![c] = @ \ {e}]
    /\ lost' = [lost EXCEPT ![c] = @ \ {e}]
    /\ elapsed' = [elapsed EXCEPT ![c][e] = 0]
    /\ IF r = "done"
         THEN /\ toAck' = [toAck EXCEPT ![c] = @ \cup {e}]
              /\ UNCHANGED toRelease
         ELSE /\ toRelease' = [toRelease EXCEPT ![c] = @ \cup {e}]
              /\ UNCHANGED toAck
    /\ permits' = [permits EXCEPT ![c] = PermitsAfter(c, inbox[c], active'[c])]
    /\ UNCHANGED <<storeVars, mode, inbox, stalled, leaked, checked, faults, doubled>>

\* renew (the heartbeat, one Lua script): XPENDING for the entry and, only if we still own
\* it, XCLAIM queue g c 0 id JUSTID. Without the owner check it claims regardless.
Renew(c, e) ==
    /\ AtomicRenew
    /\ Up(c) /\ e \in Renewing(c) /\ e \notin lost[c] /\ Heartbeats(c, e)
    /\ IF status[e] = "pending" /\ (owner[e] = c \/ ~RenewOwnerCheck)
         THEN /\ owner' = [owner EXCEPT ![e] = c]                    \* renewed
              /\ idle' = [idle EXCEPT ![e] = 0]
              /\ UNCHANGED lost
         ELSE /\ lost' = [lost EXCEPT ![c] = @ \cup {e}]             \* refused
              /\ UNCHANGED <<owner, idle, doubled>>
    /\ lagging' = [lagging EXCEPT ![c] = @ \ {e}]
    /\ UNCHANGED <<status, deliveries, mode, inbox, active, permits, toAck, toRelease, stalled,
                   leaked, checked, elapsed, faults, doubled>>

\* The later design's non-atomic renewal, step one: XPENDING reads the owner.
RenewCheck(c, e) ==
    /\ ~AtomicRenew
    /\ Up(c) /\ e \in Renewing(c) /\ e \notin lost[c] /\ e \notin checked[c]
    /\ Heartbeats(c, e)
    /\ IF status[e] = "pending" /\ owner[e] = c
         THEN /\ checked' = [checked EXCEPT ![c] = @ \cup {e}]
              /\ UNCHANGED <<lost, lagging, doubled>>
         ELSE /\ lost' = [lost EXCEPT ![c] = @ \cup {e}]
              /\ lagging' = [lagging EXCEPT ![c] = @ \ {e}]
              /\ UNCHANGED checked
    /\ UNCHANGED <<storeVars, mode, inbox, active, permits, toAck, toRelease, stalled, leaked,
                   elapsed, faults, doubled>>

\* ... step two: XCLAIM 0 JUSTID, whatever happened since the check.
RenewClaim(c, e) ==
    /\ ~AtomicRenew
    /\ Up(c) /\ e \in checked[c]
    /\ checked' = [checked EXCEPT ![c] = @ \ {e}]
    /\ IF status[e] = "pending"
         THEN /\ owner' = [owner EXCEPT ![e] = c]
              /\ idle' = [idle EXCEPT ![e] = 0]
              /\ UNCHANGED lost
         ELSE /\ lost' = [lost EXCEPT ![c] = @ \cup {e}]
              /\ UNCHANGED <<owner, idle, doubled>>
    /\ lagging' = [lagging EXCEPT ![c] = @ \ {e}]
    /\ UNCHANGED <<status, deliveries, mode, inbox, active, permits, toAck, toRelease, stalled,
                   leaked, elapsed, faults, doubled>>

\* ack: MULTI XACK XDEL EXEC (XACK does not look at the owner). An ack that fails
\* leaves the entry pending, to be redelivered after VT and acked then.
Ack(c, e) ==
    /\ Up(c) /\ e \in toAck[c]
    /\ toAck' = [toAck EXCEPT ![c] = @ \ {e}]
    /\ \/ /\ status[e] = "pending"                                   \* acked
          /\ status' = [status EXCEPT ![e] = "gone"]
          /\ owner' = [owner EXCEPT ![e] = NoOne]
          /\ idle' = [idle EXCEPT ![e] = 0]
          /\ permits' = [d \in Consumers |->
                            IF InvocationScopedPermits THEN permits[d] ELSE permits[d] \ {e}]
          /\ UNCHANGED <<leaked, faults, doubled>>
       \/ /\ status[e] = "gone"                                      \* acked (no-op)
          /\ UNCHANGED <<status, owner, idle, permits, leaked, faults, doubled>>
       \* failed: the connection drops, whether or not the entry is still pending (a stale
       \* consumer acks an entry a peer took over and acked: found by the seeded simulations)
       \/ /\ status[e] \in {"pending", "gone"} /\ CanFault(AckFailFault)
          /\ faults' = faults + 1
          \* The old code cleaned up only after a successful ack: the call's record (and its
          \* permit) leaked, renewed by the heartbeat forever, its redeliveries dropped.
          /\ IF CleanupOnAckFailure
               THEN UNCHANGED <<leaked, permits, doubled>>
               ELSE /\ leaked' = [leaked EXCEPT ![c] = @ \cup {e}]
                    /\ permits' = [permits EXCEPT ![c] = @ \cup {e}]
          /\ UNCHANGED <<status, owner, idle, doubled>>
    /\ UNCHANGED <<deliveries, mode, inbox, active, toRelease, lagging, stalled, lost, checked,
                   elapsed, doubled>>

\* release: touch a not-done entry once (XCLAIM 0 JUSTID, owner-checked like renewal), so
\* that it comes back a whole VT later.
Release(c, e) ==
    /\ Up(c) /\ e \in toRelease[c]
    /\ toRelease' = [toRelease EXCEPT ![c] = @ \ {e}]
    /\ IF status[e] = "pending" /\ (owner[e] = c \/ ~RenewOwnerCheck)
         THEN /\ idle' = [idle EXCEPT ![e] = 0]                     \* touched
              /\ owner' = [owner EXCEPT ![e] = c]
         ELSE UNCHANGED <<idle, owner, doubled>>                              \* refused
    /\ UNCHANGED <<status, deliveries, mode, inbox, active, permits, toAck, lagging, stalled,
                   leaked, lost, checked, elapsed, faults, doubled>>

-----------------------------------------------------------------------------
(* Hidden actions: no trace line.                                          *)

\* Time passes by one tick; a protected entry must be renewed before it could reach VT.
Tick ==
    /\ \A e \in Entries : Protected(e) => idle[e] < VT - 1
    /\ idle' = [e \in Entries |-> IF status[e] = "pending" THEN Min(idle[e] + 1, VT) ELSE 0]
    \* Invocation age matters only to the old design; tracking it otherwise adds states.
    /\ elapsed' = IF RenewPastMaxProc THEN elapsed
                  ELSE [c \in Consumers |-> [e \in Entries |->
                          IF e \in active[c] THEN Min(elapsed[c][e] + 1, MaxProc) ELSE 0]]
    /\ <<idle', elapsed'>> /= <<idle, elapsed>>
    /\ UNCHANGED <<status, owner, deliveries, mode, inbox, active, permits, toAck, toRelease,
                   lagging, stalled, leaked, lost, checked, faults, doubled>>

\* A consumer process dies: its hand-offs and calls vanish, its PEL entries stay (owned by
\* it) until a peer reclaims them. Some peer keeps running.
Crash(c) ==
    /\ CanFault(CrashFault)
    /\ mode[c] /= "crashed"
    /\ \E d \in Consumers \ {c} : mode[d] = "running"
    /\ mode' = [mode EXCEPT ![c] = "crashed"]
    /\ inbox' = [inbox EXCEPT ![c] = {}]
    /\ active' = [active EXCEPT ![c] = {}]
    /\ permits' = [permits EXCEPT ![c] = {}]
    /\ toAck' = [toAck EXCEPT ![c] = {}]
    /\ toRelease' = [toRelease EXCEPT ![c] = {}]
    /\ lagging' = [lagging EXCEPT ![c] = {}]
    /\ stalled' = [stalled EXCEPT ![c] = {}]
    /\ leaked' = [leaked EXCEPT ![c] = {}]
    /\ lost' = [lost EXCEPT ![c] = {}]
    /\ checked' = [checked EXCEPT ![c] = {}]
    /\ elapsed' = [elapsed EXCEPT ![c] = [e \in Entries |-> 0]]
    /\ faults' = faults + 1
    /\ UNCHANGED <<storeVars, doubled>>

\* A pause (GC, VM freeze) longer than VT: every lease c keeps may lapse unnoticed.
Pause(c) ==
    /\ CanFault(PauseFault)
    /\ mode[c] = "running"
    /\ mode' = [mode EXCEPT ![c] = "paused"]
    /\ lagging' = [lagging EXCEPT ![c] = Renewing(c) \ lost[c]]
    /\ stalled' = [stalled EXCEPT ![c] = inbox[c]]
    /\ faults' = faults + 1
    /\ UNCHANGED <<storeVars, inbox, active, permits, toAck, toRelease, leaked, lost, checked,
                   elapsed, doubled>>

Resume(c) ==
    /\ mode[c] = "paused"
    /\ mode' = [mode EXCEPT ![c] = "running"]
    /\ UNCHANGED <<storeVars, inbox, active, permits, toAck, toRelease, lagging, stalled,
                   leaked, lost, checked, elapsed, faults, doubled>>

\* The heartbeat of one invocation runs late (a slow Redis call, a starved thread).
HeartbeatLag(c, e) ==
    /\ CanFault(LagFault)
    /\ Up(c) /\ Holds(c, e)
    /\ lagging' = [lagging EXCEPT ![c] = @ \cup {e}]
    /\ faults' = faults + 1
    /\ UNCHANGED <<storeVars, mode, inbox, active, permits, toAck, toRelease, stalled, leaked,
                   lost, checked, elapsed, doubled>>

\* close(): stop polling, keep heartbeating running calls until they end (close never makes
\* an entry reclaimable while its handler executes). Some peer keeps running.
Close(c) ==
    /\ CanFault(CloseFault)
    /\ mode[c] = "running"
    /\ \E d \in Consumers \ {c} : mode[d] = "running"
    /\ mode' = [mode EXCEPT ![c] = "closing"]
    /\ faults' = faults + 1
    /\ UNCHANGED <<storeVars, inbox, active, permits, toAck, toRelease, lagging, stalled,
                   leaked, lost, checked, elapsed, doubled>>

-----------------------------------------------------------------------------
\* poll (impl/workqueue/node.py poll): one permit-holding poll of c's loop. Out of every
\* PollRatio + 1 polls, PollRatio try receive_new first and one tries reclaim first; each
\* falls back to the other when its first source is empty.
\*
\* The impl turns the round on every poll, empty ones too, and an empty poll logs nothing.
\* The order matters only when both sources have work (Contested), so polls[c] counts only
\* what the design forces: the contested polls c has given to new work since it last took
\* a retry (or found both sources empty, where the round may have come to its reclaim
\* turn). Any contested poll may take the retry (the round may be at its turn), and the one
\* after PollRatio new ones must: this covers every order of the impl's loop and keeps its
\* promise that retries are not passed over more than PollRatio times in a row.
\*
\* Without the fallback (PollFallback off) a poll waits on its first source (a blocking read)
\* and the round turns only when a poll returns work: polls[c] is then the round itself.
NewReady == \E e \in Entries : Fresh(e)
RetryReady(c) == \E e \in Entries : Reclaimable(c, e)
Contested(c) == NewReady /\ RetryReady(c)
ReclaimDue(c) == ReclaimTurn /\ polls[c] = PollRatio

TakeNew(c) == \E e \in Entries : ReceiveNew(c, e)
TakeRetry(c) == \E e \in Entries : Reclaim(c, e)
Turn(c, n) == polls' = [polls EXCEPT ![c] = n]

\* The design: new work unless a retry is due, a retry when the turn may be reclaim's (any
\* time, with ReclaimTurn) or there is no new work (the fallback); an empty poll may turn the
\* round to its reclaim turn.
FallbackPoll(c) ==
    \/ /\ ~(ReclaimDue(c) /\ RetryReady(c)) /\ TakeNew(c)
       /\ Turn(c, IF ReclaimTurn /\ RetryReady(c) THEN polls[c] + 1 ELSE 0)
    \/ /\ ReclaimTurn \/ ~NewReady
       /\ TakeRetry(c) /\ Turn(c, 0)
    \/ /\ polls[c] > 0 /\ ~NewReady /\ ~RetryReady(c)                   \* an empty poll
       /\ Turn(c, 0)
       /\ UNCHANGED <<storeVars, consumerVars, faults, doubled>>

\* No fallback: the poll serves its turn's source only, and waits there.
WaitingPoll(c) ==
    \/ /\ ~ReclaimDue(c) /\ TakeNew(c)
       /\ Turn(c, IF ReclaimTurn THEN polls[c] + 1 ELSE 0)
    \/ /\ ReclaimDue(c) /\ TakeRetry(c) /\ Turn(c, 0)

Poll(c) ==
    /\ Polling(c) /\ FreePermit(c)
    /\ IF PollFallback THEN FallbackPoll(c) ELSE WaitingPoll(c)

\* Every other step of c (the poll's turn stays).
ConsumerStep(c) ==
    \/ \E e \in Entries :
          \/ InvokeStart(c, e)
          \/ \E r \in Results : InvokeEnd(c, e, r)
          \/ Renew(c, e) \/ RenewCheck(c, e) \/ RenewClaim(c, e)
          \/ Ack(c, e) \/ Release(c, e) \/ HeartbeatLag(c, e)
    \/ Crash(c) \/ Pause(c) \/ Resume(c) \/ Close(c)

Next ==
    \/ \E c \in Consumers : Poll(c)
    \/ /\ \/ \E e \in Entries : Offer(e)
          \/ Tick
          \/ \E c \in Consumers : ConsumerStep(c)
       /\ UNCHANGED polls

\* Fairness: every process keeps taking the steps it can take; faults are not forced. The
\* poll loop is fair as a whole: which source a poll serves is its turn's business, so that
\* neither intake nor retries get a turn of their own.
ProcessFairness ==
    /\ WF_vars((\E e \in Entries : Offer(e)) /\ UNCHANGED polls)
    /\ WF_vars(Tick /\ UNCHANGED polls)
    /\ \A c \in Consumers :
        /\ WF_vars(Poll(c))
        /\ WF_vars((\E e \in Entries : InvokeStart(c, e)) /\ UNCHANGED polls)
        /\ WF_vars((\E e \in Entries : Renew(c, e) \/ RenewCheck(c, e) \/ RenewClaim(c, e))
                   /\ UNCHANGED polls)
        /\ WF_vars((\E e \in Entries : Ack(c, e) \/ Release(c, e)) /\ UNCHANGED polls)
        /\ WF_vars(Resume(c) /\ UNCHANGED polls)

\* Handlers return: every call ends in the end (MCWorkQueue's HangSpec leaves this out).
CallsEnd ==
    \A c \in Consumers :
        WF_vars((\E e \in Entries : \E r \in Results : InvokeEnd(c, e, r)) /\ UNCHANGED polls)

Fairness == ProcessFairness /\ CallsEnd

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Properties.                                                              *)

\* No two invocations of one entry at once while each holds its lease.
\* No consumer starts an entry it is already running: its executor drops such a hand-off
\* (duplicate_dropped). `active[c]` is a set, so the history `doubled` says what it cannot.
NoDuplicateStart == ~doubled

NoOverlappingInvocations ==
    \A e \in Entries : \A c, d \in Consumers : c /= d => ~(Holds(c, e) /\ Holds(d, e))

\* At-least-once: every offered entry is eventually acked and deleted.
EveryEntryAcked == \A e \in Entries : status[e] = "new" ~> status[e] = "gone"

\* Intake never freezes: an entry waiting in the stream is eventually delivered.
IntakeNeverFreezes == \A e \in Entries : status[e] = "new" ~> status[e] /= "new"

\* A lagging invocation whose entry some other consumer now owns (reclaimed it, or acked it)
\* learns that it lost the entry at its next heartbeat (the refused renewal: lost), unless
\* it ends or dies first; it never takes the entry back. Holds, and so
\* NoOverlappingInvocations, leaves lagging invocations out: this is their promise. Under
\* Spec every call ends, which makes it trivial; HangSpec (calls that may never return, as
\* a handler may outrun VT and maxProcessingTime without bound) is where it says something.
LaggingLearnsLoss ==
    \A c \in Consumers : \A e \in Entries :
        (e \in active[c] /\ e \in lagging[c] /\ owner[e] /= c)
            ~> (e \notin active[c] \/ e \in lost[c])

\* No consumer runs more invocations than it has permits.
PermitBound == \A c \in Consumers : Cardinality(active[c]) <= Permits

\* An entry is acked only for a call that ended done: in the step it goes, some consumer's
\* to-ack set gives it up (an action property).  XACK does not look at the owner, so a stale
\* consumer's ack may remove an entry a peer now runs; but an ack on receipt, or of an entry
\* whose call failed, loses work that nobody did.
AckedAfterDone ==
    [][\A e \in Entries :
         status'[e] = "gone" /\ status[e] # "gone" => \E c \in Consumers : e \in toAck[c] \ toAck'[c]]_vars

\* The fault marks name what they mark: a lag (`lagging`) or a loss (`lost`) a call the heartbeat
\* renews, a pause (`stalled`) a hand-off still waiting.  A mark left behind when its call ends
\* or starts would carry over to the consumer's next call of that entry: it would start lagging
\* or lost, time could pass its lease (Protected), and NoOverlappingInvocations, which leaves
\* lagging and lost calls out, would not judge it (a per-call flag kept per entry, in the code).
MarksAreCurrent ==
    \A c \in Consumers :
        /\ lagging[c] \subseteq Renewing(c)
        /\ lost[c] \subseteq Renewing(c)
        /\ stalled[c] \subseteq inbox[c]

=============================================================================
