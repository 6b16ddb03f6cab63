--------------------------- MODULE TraceWorkQueue ---------------------------
(***************************************************************************)
(* The work queue's trace spec: each logged line of a `workqueue` trace   *)
(* is the WorkQueue action of the same name, taken by the logged consumer *)
(* on the logged entry, and its logged fields (outcome, args.result, the  *)
(* entry's PEL record after it: pending, owner, deliveries, last_touched) *)
(* must be what that action says.  A renew, release or ack also logs the  *)
(* idle time its script read before writing (args.idle_ms: XPENDING's     *)
(* idle, null when the entry was not pending), which must be the spec's   *)
(* idle before the step (idle_read): the write hides what it replaced, so *)
(* that without it a renewal dropped, or committed twice, would go        *)
(* unseen.  Contract: traces/README.md; names: the Work queue table of    *)
(* tla/README.md.  Checked by `leaseproof traces check` with              *)
(* traces/systems/workqueue.yaml.                                         *)
(*                                                                         *)
(*   trace op      spec action     store step (impl/workqueue)             *)
(*   offer         Offer           offer.lua          (XADD)               *)
(*   receive_new   ReceiveNew      receive_new.lua    (XREADGROUP >)       *)
(*   reclaim       Reclaim         reclaim.lua        (XAUTOCLAIM)         *)
(*   invoke_start  InvokeStart     invoke.lua         (permit taken)       *)
(*   invoke_end    InvokeEnd       invoke.lua         (args.result)        *)
(*   renew         Renew           touch.lua          (owner-checked)      *)
(*   ack           Ack             ack.lua            (XACK + XDEL)        *)
(*   release       Release         touch.lua          (one touch)          *)
(*                                                                         *)
(* Names: a trace's nodes are the Consumers (the producer is one that     *)
(* never polls).  Stream ids are strings the spec cannot order, so an     *)
(* entry is numbered by its first line in the trace (`ids`, a sequence of *)
(* the ids seen so far): Entries is 1..N, N from the system file; a trace *)
(* with more entries is rejected at the first entry past N, saying so.    *)
(*                                                                         *)
(* Time: `clock` counts ms since the trace's first line (the checker      *)
(* makes times relative); one tick is one ms, so VT and MaxProc are the   *)
(* header's visibility_timeout_ms and max_processing_ms.  A logged        *)
(* last_touched lt says idle = min(VT, now - lt) for a pending entry. A   *)
(* logged idle read r says idle = min(VT, r) before the step. The hidden  *)
(* TraceTick jumps to the next line's `now` in one step under Tick's      *)
(* timing assumption (no protected entry reaches VT).                     *)
(*                                                                         *)
(* Hidden steps (leave l alone), each taken only when the next line       *)
(* needs it, so that the search stays close to one path per trace:        *)
(*   TraceTick                   time passes                               *)
(*   LateHeartbeat               HeartbeatLag(c, e): the jump would take   *)
(*                               an entry c holds to VT                    *)
(*   Stall / Unstall             Pause(c) / Resume(c): a hand-off or a     *)
(*                               leaked record would reach VT; resumed at  *)
(*                               c's next line                             *)
(*                                                                         *)
(* No hidden fault is free: each needs a fault line, a line the run       *)
(* logged where the fault happened, by the node it hit, and it excuses    *)
(* only what happens inside its window.                                   *)
(*   stall                  a hand-off the executor started late          *)
(*                          (observed): excuses a lapse of that hand-off  *)
(*   heartbeat_lag, pause   a window: `start` ... `end` (injected by a    *)
(*                          simulation or a test), or `observed` (measured *)
(*                          by the node itself: its heartbeat woke, or a   *)
(*                          renewal returned, args.since..now late); a    *)
(*                          lapse of an entry c holds is excused only at a *)
(*                          time inside one of c's windows (a pause also  *)
(*                          stalls c's hand-offs); an injected window      *)
(*                          shows no renewal by c (HeartbeatLagged), an    *)
(*                          observed one at most one round of them         *)
(*   crash, close           Crash(c) / Close(c) at the line; a close      *)
(*                          stops renewals only where                      *)
(*                          close_waits_for_handlers is off                *)
(*   reject, ack_fail       an injected (or observed) executor rejection   *)
(*                          or failed ack: the next `rejected`            *)
(*                          invoke_start / `failed` ack of the node takes  *)
(*                          it; one that finds none is rejected there      *)
(*   offer_fail             the producer's offer failed: nothing in the    *)
(*                          stream (the command view's business)           *)
(* A `stop` line is no fault: the consumer's end, with the permits it     *)
(* still holds (args.permits_in_use), which must be the spec's.           *)
(* The fault lines a hidden step needed are kept (`used`): the acceptance *)
(* names them (accepted, excused by heartbeat_lag at line 23).            *)
(*                                                                         *)
(* A jump that would take a protected entry to VT with no fault line to   *)
(* excuse it is rejected at that line, naming RenewedWithinVT: the        *)
(* entry, its holder, and how idle it would be.                           *)
(*                                                                         *)
(* At the last line of a trace whose header says `drained` (the stream    *)
(* was empty at export): every entry acked (EveryEntryAcked), and every   *)
(* consumer that polled and did not crash stopped with no permit held     *)
(* (EveryPermitReturned).                                                 *)
(*                                                                         *)
(* Besides the protocol, a trace must keep NoOverlappingInvocations: a    *)
(* line after which two consumers both hold the entry's lease (running,   *)
(* not lagging, not refused) is rejected at that line, even where the     *)
(* header's gates (renew_owner_check off, say) let the protocol reach it. *)
(***************************************************************************)
EXTENDS WorkQueue, TraceData

\* The header's clock_slack_ms: how far apart a real Redis server's PEL stamps and the TIME its
\* script reads may fall (0 in simulation). A logged idle time may differ from the spec's by
\* this much: the one implementation quirk this spec allows, and only in the idle field.
\* One value per trace of the batch, as the constants below: trace t's is ClockSlack[t].
CONSTANT ClockSlack

\* The header's `drained`: the run's stream was empty when the trace was written (read from
\* Redis). Then the trace must end with every entry it offered acked (EveryEntryAcked, which a
\* finite trace can show only at an end that the run says is one).
CONSTANT Drained

VARIABLES
    t,      \* which trace of the batch
    l,      \* how many of its lines are explained
    clock,  \* ms since the trace's first line
    ids,    \* the stream ids seen so far; an entry's number is its index here
    stamp   \* [Entries -> Int]: the PEL stamp (last_touched) the trace last logged of a pending
            \* entry, -1 when none: a step that does not touch the entry logs the same stamp

\* What the fault lines have said so far.
VARIABLES
    win,       \* [Consumers -> [Windows -> Nat]]: the line that opened c's window (0: closed)
    pend,      \* [Consumers -> [Pended -> SUBSET Nat]]: injected faults logged, not yet taken (lines)
    used,      \* the fault lines a hidden step needed (their line numbers)
    stopped,   \* the consumers that logged their stop
    polled     \* the consumers that were delivered an entry
faultVars == <<win, pend, used, stopped, polled>>

Windows == {"heartbeat_lag", "pause"}
Pended == {"reject", "ack_fail"}
FaultOps == Windows \cup Pended \cup {"stall", "crash", "close", "offer_fail"}

traceVars == <<t, l, clock, ids, stamp>>

E == Traces[t][l + 1]                   \* the next line to explain
Lines == Len(Traces[t])

Seen == {ids[i] : i \in DOMAIN ids}
\* The number of the next line's entry (a new id gets the next number). Each Is<Op> binds it
\* once (\E x \in {X}): TLC would evaluate X again at every use of an operator's argument.
X == IF E.entry \in Seen THEN CHOOSE i \in DOMAIN ids : ids[i] = E.entry ELSE Len(ids) + 1
Bind == ids' = IF E.entry \in Seen THEN ids ELSE Append(ids, E.entry)

\* The spec's PEL record of entry x after the step, as the trace writes it (null once gone).
OwnerView(o) == IF o = NoOne THEN Nil ELSE o
PelView(x) ==
    IF status'[x] = "gone" THEN Nil
    ELSE [pending |-> status'[x] = "pending", owner |-> OwnerView(owner'[x]),
          deliveries |-> deliveries'[x]]
LoggedPel ==
    IF E.state.entry = Nil THEN Nil
    ELSE [pending |-> E.state.entry.pending, owner |-> E.state.entry.owner,
          deliveries |-> E.state.entry.deliveries]
\* Idle time is all the spec knows of last_touched: a pending entry's since its stamp, and 0 for
\* one not yet delivered, whose line logs its `now` as last_touched (prelude.lua: on a real
\* server a later reading of its clock, within ClockSlack).
SpecIdle(x) == IF status'[x] = "pending" THEN idle'[x] ELSE 0
LoggedIdle ==
    IF E.state.entry = Nil THEN 0
    ELSE IF E.state.entry.pending THEN Min(VT, E.now - E.state.entry.last_touched)
    ELSE E.now - E.state.entry.last_touched

\* The logged idle time, or the spec's when they differ by ClockSlack at most.
IdleSeen(x) ==
    IF SpecIdle(x) - LoggedIdle <= ClockSlack[t] /\ LoggedIdle - SpecIdle(x) <= ClockSlack[t]
    THEN SpecIdle(x) ELSE LoggedIdle

\* The idle time a step read before writing (renew, release, ack: args.idle_ms, which the
\* schema requires on those lines), as the spec has it before the step: Nil when the entry is
\* not pending (new, or gone), as XPENDING finds no record then and the trace logs null.
SpecIdleRead(x) == IF status[x] = "pending" THEN idle[x] ELSE Nil
LoggedIdleRead == IF E.args.idle_ms = Nil THEN Nil ELSE Min(VT, E.args.idle_ms)

\* The idle time the read must show by the PEL stamp the trace last logged (stamp), uncapped:
\* past VT the spec's idle saturates, and a renewal dropped or doubled inside a lag would not show
\* in it; -1 where no stamp is known. A real server's reads jitter by ClockSlack.
StampedRead(x) == IF stamp[x] # -1 /\ E.args.idle_ms # Nil THEN E.now - stamp[x] ELSE -1
OffStamp(x) == /\ StampedRead(x) # -1
               /\ \/ StampedRead(x) - E.args.idle_ms > ClockSlack[t]
                  \/ E.args.idle_ms - StampedRead(x) > ClockSlack[t]

\* <<spec, logged>> for the idle read, the logged one within ClockSlack taken as the spec's (as
\* in IdleSeen), and exact by the stamp as well.
IdleRead(x) ==
    IF OffStamp(x) THEN <<StampedRead(x), E.args.idle_ms>>
    ELSE IF /\ SpecIdleRead(x) # Nil /\ LoggedIdleRead # Nil
       /\ SpecIdleRead(x) - LoggedIdleRead <= ClockSlack[t]
       /\ LoggedIdleRead - SpecIdleRead(x) <= ClockSlack[t]
    THEN <<SpecIdleRead(x), SpecIdleRead(x)>>
    ELSE <<SpecIdleRead(x), LoggedIdleRead>>

\* The next line is an `op` committed now, by a consumer that has not stopped, on an entry the
\* model has room for.
Logged(op) == /\ l < Lines /\ E.op = op /\ E.now = clock /\ E.node \notin stopped /\ X \in Entries

\* No two consumers hold entry x's lease after the step (Holds after it, written out: priming
\* Holds(c, x) would prime x too, and x reads the trace at the cursor).
HoldsAfter(c, x) == x \in active'[c] /\ x \notin lagging'[c] /\ x \notin lost'[c]
\* (Counted, not compared pairwise: one pass over the consumers.)
OneHolder(x) == Cardinality({c \in Consumers : HoldsAfter(c, x)}) <= 1

\* A rejected invoke_start or a failed ack is a fault: it takes the injected (or observed)
\* fault its node logged before it (a `reject` or `ack_fail` line); with none pending, the
\* line is rejected naming it: <<the faults of that kind the node logged and had not used, 1>>.
TakePended(k) ==
    /\ Match(t, l + 1, ("fault_line." \o k) :> <<Min(Cardinality(pend[E.node][k]), 1), 1>>)
    /\ \E j \in {CHOOSE j \in pend[E.node][k] : \A i \in pend[E.node][k] : j <= i} :
          /\ pend' = [pend EXCEPT ![E.node][k] = @ \ {j}]
          /\ used' = used \cup {j}
TakeLogged(outcome) ==
    CASE E.op = "invoke_start" /\ outcome = "rejected" /\ E.outcome = "rejected" -> TakePended("reject")
      [] E.op = "ack" /\ outcome = "failed" /\ E.outcome = "failed"              -> TakePended("ack_fail")
      [] OTHER                                                                  -> UNCHANGED <<pend, used>>

\* The consumers that polled, did not crash, and have not stopped with every permit back: at
\* the end of a drained run there must be none (EveryPermitReturned; a consumer that leaked a
\* permit logs it at its stop, and one that never stopped shows nothing of its permits).
PermitsOut == {c \in polled' : mode'[c] # "crashed" /\ (c \notin stopped' \/ permits'[c] # {})}

\* The line is explained: the cursor moves on and, at the last line of a drained trace, the
\* work is done (every entry acked, every permit back).  Consumed last, so that it prints only
\* on success; it names the fault lines the behaviour needed.
Advance ==
    /\ l' = l + 1 /\ UNCHANGED <<t, clock>>
    /\ (Drained[t] /\ l + 1 = Lines) =>
          Match(t, l + 1, [EveryEntryAcked |-> <<{ids'[i] : i \in {i \in DOMAIN ids' : status'[i] # "gone"}}, {}>>,
                           EveryPermitReturned |-> <<PermitsOut, {}>>])
    /\ ConsumedExcused(t, l + 1, Lines, used')

\* A step that touches the entry (a delivery, a renewal, a release that touched it) stamps it
\* anew; any other step of a pending entry logs the stamp it had (Redis keeps it exactly), which
\* the idle time alone cannot show once it saturates at VT.
Touches == \/ E.op \in {"receive_new", "reclaim"}
           \/ E.op = "renew" /\ E.outcome = "renewed"
           \/ E.op = "release" /\ E.outcome = "touched"
LoggedStamp == IF E.state.entry # Nil /\ E.state.entry.pending THEN E.state.entry.last_touched ELSE -1
\* On a real server a line's stamp is its script's TIME less the idle time XPENDING read, two
\* clock readings of the server: it may move by ClockSlack (a simulation's is 0), never drift (the
\* stamp kept is the touch's own, not the last line's).
Kept(x) == ~Touches /\ LoggedStamp # -1 /\ stamp[x] # -1
StampKept(x) == IF Kept(x) /\ (stamp[x] - LoggedStamp > ClockSlack[t] \/ LoggedStamp - stamp[x] > ClockSlack[t])
                THEN <<stamp[x], LoggedStamp>> ELSE <<0, 0>>

\* Every outcome the spec can give each logged store step: the requirements of a trace set's
\* spec coverage (conformance/traces/spec_coverage.py reads this table; the system file says
\* which of them the designed code cannot reach, and why). ExplainsRead holds the spec to it.
Outcomes == [offer |-> {"added"},
             receive_new |-> {"delivered"},
             reclaim |-> {"claimed"},
             invoke_start |-> {"started", "rejected", "duplicate_dropped"},
             invoke_end |-> {"ended"},
             renew |-> {"renewed", "refused"},
             ack |-> {"acked", "failed"},
             release |-> {"touched", "refused"}]

\* The logged outcome, the idle read `read` (IdleRead) and the PEL record after the step agree
\* with the spec, the lease has one holder, and the line is explained.
ExplainsRead(x, outcome, read) ==
    /\ Bind
    /\ stamp' = [stamp EXCEPT ![x] = IF Kept(x) THEN @ ELSE LoggedStamp]
    /\ TakeLogged(outcome)
    /\ polled' = IF E.op \in {"receive_new", "reclaim"} THEN polled \cup {E.node} ELSE polled
    /\ UNCHANGED <<win, stopped>>
    /\ Match(t, l + 1, [outcome |-> <<outcome, E.outcome>>,
                        outcome_in_Outcomes |-> <<E.op \in DOMAIN Outcomes /\ outcome \in Outcomes[E.op], TRUE>>,
                        idle_read |-> read,
                        entry |-> <<PelView(x), LoggedPel>>,
                        idle |-> <<SpecIdle(x), IdleSeen(x)>>,
                        stamp_kept |-> StampKept(x),
                        NoOverlappingInvocations |-> <<~OneHolder(x), FALSE>>])
    /\ Advance

\* A step that reads nothing before writing.
Explains(x, outcome) == ExplainsRead(x, outcome, <<Nil, Nil>>)

-----------------------------------------------------------------------------
(* One Is<Op> per logged op.                                               *)

IsOffer ==
    /\ Logged("offer")
    /\ \E x \in {X} :
        /\ Offer(x)
        /\ Explains(x, "added")

\* A poll while c's pause window is open: its poller was stopped (never enabled: says why).
PolledInPause ==
    /\ l < Lines /\ E.op \in {"receive_new", "reclaim"} /\ E.node \in Consumers
    /\ win[E.node]["pause"] # 0
    /\ Match(t, l + 1, [Paused |-> <<"a poll by " \o E.node \o " in its pause from line "
                                       \o ToString(win[E.node]["pause"]), "no poll in a pause">>])
    /\ FALSE

IsReceiveNew ==
    /\ Logged("receive_new")
    /\ win[E.node]["pause"] = 0
    /\ \E x \in {X} :
        /\ ReceiveNew(E.node, x)
        /\ Explains(x, "delivered")

\* A real server's quirk: XAUTOCLAIM measures idle time from the PEL stamp of the entry's last
\* touch, which the server takes as the touching script begins, up to ClockSlack before the TIME
\* that script logged. So a reclaim may come when the logged times make the entry idle for only
\* VT - ClockSlack (never in a simulation, whose ClockSlack is 0). Not an entry a live holder
\* still renews: its heartbeat keeps it short of VT - 1, and a reclaim of it stays
\* RenewedWithinVT's to judge, as a dead heartbeat must not pass for a server's stamp.
ReclaimOnServerStamp(c, e) ==
    /\ ReclaimRetries /\ status[e] = "pending" /\ e \notin inbox[c] /\ ~Protected(e)
    /\ VT - ClockSlack[t] <= idle[e] /\ idle[e] < VT
    /\ Polling(c) /\ FreePermit(c)
    /\ Deliver(c, e)
    /\ UNCHANGED <<status, mode, active, toAck, toRelease, lagging, stalled, leaked, lost,
                   checked, elapsed, faults, doubled>>

IsReclaim ==
    /\ Logged("reclaim")
    /\ win[E.node]["pause"] = 0
    /\ \E x \in {X} :
        /\ Reclaim(E.node, x) \/ ReclaimOnServerStamp(E.node, x)
        /\ Explains(x, "claimed")

\* InvokeStart's three outcomes, read from the state it left.
StartOutcome(c, x) ==
    CASE x \in Renewing(c)     -> "duplicate_dropped"
      [] x \in active'[c]      -> "started"
      [] OTHER                 -> "rejected"

IsInvokeStart ==
    /\ Logged("invoke_start")
    /\ \E x \in {X} :
        /\ InvokeStart(E.node, x)
        /\ Explains(x, StartOutcome(E.node, x))

IsInvokeEnd ==
    /\ Logged("invoke_end")
    /\ \E x \in {X} :
        /\ InvokeEnd(E.node, x, E.args.result)
        /\ Explains(x, "ended")

\* A renewal by c's heartbeat inside one of c's injected windows: the heartbeat said to lag (or
\* the process said to pause) ran (never enabled: says why). An injected window that shows no
\* lateness is a recorder that logs faults it did not make.
RenewedInWindow ==
    /\ l < Lines /\ E.op = "renew" /\ E.node \in Consumers
    /\ \E k \in Windows :
          /\ win[E.node][k] # 0
          /\ Match(t, l + 1, [HeartbeatLagged |->
                 <<"a renewal by " \o E.node \o " in its " \o k \o " from line " \o ToString(win[E.node][k]),
                   "no renewal while its heartbeat lags">>])
    /\ FALSE

IsRenew ==
    /\ Logged("renew")
    /\ \A k \in Windows : win[E.node][k] = 0
    /\ \E x \in {X} :
        /\ Renew(E.node, x)
        /\ ExplainsRead(x, IF x \in lost'[E.node] THEN "refused" ELSE "renewed", IdleRead(x))

IsAck ==
    /\ Logged("ack")
    /\ \E x \in {X} :
        /\ Ack(E.node, x)
        /\ ExplainsRead(x, IF faults' > faults THEN "failed" ELSE "acked", IdleRead(x))

IsRelease ==
    /\ Logged("release")
    /\ \E x \in {X} :
        /\ Release(E.node, x)
        /\ ExplainsRead(x, IF status[x] = "pending" /\ (owner[x] = E.node \/ ~RenewOwnerCheck)
                           THEN "touched" ELSE "refused", IdleRead(x))

\* Never enabled: a line on an entry past the model's Entries only says why it is rejected.
EntryPastModel ==
    /\ l < Lines /\ E.op \notin FaultOps \cup {"stop"} /\ X \notin Entries
    /\ Match(t, l + 1, [entries_in_model |-> <<Cardinality(Entries), X>>])
    /\ FALSE

-----------------------------------------------------------------------------
(* Fault lines and stops: lines no store step wrote, by a consumer.       *)

\* A fault line of kind k committed now by a consumer that has not stopped.
FaultLine(k) == /\ l < Lines /\ E.op = k /\ E.now = clock /\ E.node \in Consumers
                /\ E.node \notin stopped
NoEntry == UNCHANGED <<ids, stamp, polled, used, stopped>>
KeepQueue == UNCHANGED <<storeVars, consumerVars, faults, doubled>>

\* A window opens (injected: a simulation or a test makes the heartbeat lag, or the process
\* pause) or closes; one open twice, or closed unopened, is rejected naming fault_window.
IsWindow ==
    \E k \in Windows :
        /\ FaultLine(k) /\ E.outcome \in {"start", "end"}
        /\ Match(t, l + 1, [fault_window |-> <<IF win[E.node][k] = 0 THEN "closed" ELSE "open",
                                                IF E.outcome = "start" THEN "closed" ELSE "open">>])
        /\ win' = [win EXCEPT ![E.node][k] = IF E.outcome = "start" THEN l + 1 ELSE 0]
        /\ UNCHANGED pend /\ NoEntry /\ KeepQueue
        /\ Advance

\* c's renewals at times in (since, now]: one round of its heartbeat renews each entry once.
RenewedIn(c, since, until) ==
    {j \in 1..l : /\ Traces[t][j].op = "renew" /\ Traces[t][j].node = c
                  /\ since < Traces[t][j].now /\ Traces[t][j].now <= until}
\* An observed window (the node measured it: its heartbeat woke, or a renewal returned, late
\* since args.since): it spans at most one round of renewals, else its lateness is not real
\* (HeartbeatLagged).
IsObserved ==
    \E k \in Windows :
        /\ FaultLine(k) /\ E.outcome = "observed"
        /\ E.args.since <= E.now
        /\ LET mine == RenewedIn(E.node, E.args.since + ClockSlack[t], E.now)
           IN Match(t, l + 1, [HeartbeatLagged |->
                  <<Cardinality({Traces[t][j].entry : j \in mine}) < Cardinality(mine), FALSE>>])
        /\ UNCHANGED <<win, pend>> /\ NoEntry /\ KeepQueue
        /\ Advance

\* A crash, or a close that stops the heartbeat, is needed (`used`) when the node held an entry
\* then: from here its lease may lapse.
Holding(c) == inbox[c] \cup active[c] \cup leaked[c] # {}
Needed(c, why) == used' = IF why /\ Holding(c) THEN used \cup {l + 1} ELSE used

IsCrash ==
    /\ FaultLine("crash")
    /\ Crash(E.node)
    /\ Needed(E.node, TRUE)
    /\ UNCHANGED <<polls, win, pend>> /\ UNCHANGED <<ids, stamp, polled, stopped>>
    /\ Advance

IsClose ==
    /\ FaultLine("close")
    /\ Close(E.node)
    /\ Needed(E.node, ~CloseWaitsForHandlers)
    /\ UNCHANGED <<polls, win, pend>> /\ UNCHANGED <<ids, stamp, polled, stopped>>
    /\ Advance

\* An injected (or observed) rejection or failed ack, for the node's next line of it to take.
IsPended ==
    \E k \in Pended :
        /\ FaultLine(k)
        /\ pend' = [pend EXCEPT ![E.node][k] = @ \cup {l + 1}]
        /\ UNCHANGED win /\ NoEntry /\ KeepQueue
        /\ Advance

\* The producer's offer failed: nothing reached the stream. Or a hand-off the executor started
\* late (a stall it observed: a lapse of the hand-off inside it is excused, Stall).
IsOfferFail ==
    /\ \/ FaultLine("offer_fail")
       \/ FaultLine("stall") /\ E.outcome = "observed" /\ E.args.since <= E.now
    /\ UNCHANGED <<win, pend>> /\ NoEntry /\ KeepQueue
    /\ Advance

\* A consumer's stop: it logs the permits it still holds (args.permits_in_use), which must be
\* the spec's (EveryPermitReturned: <<logged, the spec's>>); it logs nothing after it.
IsStop ==
    /\ FaultLine("stop") /\ mode[E.node] # "crashed"
    /\ Match(t, l + 1, [EveryPermitReturned |-> <<E.args.permits_in_use, Cardinality(permits[E.node])>>])
    /\ stopped' = stopped \cup {E.node}
    /\ UNCHANGED <<ids, stamp, polled, used, win, pend>> /\ KeepQueue
    /\ Advance

LoggedStep ==
    \/ IsOffer \/ IsReceiveNew \/ IsReclaim \/ IsInvokeStart \/ IsInvokeEnd
    \/ IsRenew \/ IsAck \/ IsRelease \/ EntryPastModel \/ PolledInPause \/ RenewedInWindow
    \/ IsWindow \/ IsObserved \/ IsCrash \/ IsClose \/ IsPended \/ IsOfferFail \/ IsStop

-----------------------------------------------------------------------------
(* Hidden steps.                                                           *)

Gap == E.now - clock                    \* how far the next line is ahead

\* Entry e, protected by the heartbeat or a prompt hand-off, would reach VT before the next
\* line: some fault must have lifted the timing assumption first.
\* (The time first: it is cheap, and false for nearly every entry at nearly every jump.)
Overdue(e) == idle[e] + Gap >= VT /\ Protected(e)
\* No entry is Overdue (written out, with the idle time that makes one bound once; negated, so
\* that TLC evaluates it as a value, not as an action's disjunction that branches).
NoneOverdue == \E late \in {VT - Gap} : ~\E e \in Entries : idle[e] >= late /\ Protected(e)

\* Time jumps to the next line's `now`: Tick, Gap times over, in one step.
TraceTick ==
    /\ l < Lines /\ Gap > 0
    /\ NoneOverdue
    /\ idle' = [e \in Entries |-> IF status[e] = "pending" THEN Min(idle[e] + Gap, VT) ELSE 0]
    /\ elapsed' = IF RenewPastMaxProc THEN elapsed
                  ELSE [c \in Consumers |-> [e \in Entries |->
                          IF e \in active[c] THEN Min(elapsed[c][e] + Gap, MaxProc) ELSE 0]]
    /\ clock' = E.now
    /\ UNCHANGED <<status, owner, deliveries, mode, inbox, active, permits, toAck, toRelease,
                   lagging, stalled, leaked, lost, checked, faults, t, l, ids, stamp, faultVars,
                   doubled>>

\* When entry e reaches VT in the jump: the lapse a fault line must excuse happens then.
LapseAt(e) == clock + (VT - idle[e])

\* The fault line of c that excuses a lapse at time x, 0 for none: an open window of kind k in
\* `kinds` that opened no later than x, or an observed one of c logged later whose window holds x.
ObservedAt(c, kinds, x) ==
    {j \in (l + 1)..Lines : /\ Traces[t][j].op \in kinds /\ Traces[t][j].node = c
                            /\ Traces[t][j].outcome = "observed"
                            /\ Traces[t][j].args.since <= x + ClockSlack[t] /\ x <= Traces[t][j].now}
OpenAt(c, kinds, x) == {win[c][k] : k \in {k \in kinds \cap Windows : win[c][k] # 0 /\ Traces[t][win[c][k]].now <= x}}
Excuse(c, kinds, x) ==
    LET lines == OpenAt(c, kinds, x) \cup ObservedAt(c, kinds, x)
    IN IF lines = {} THEN 0 ELSE CHOOSE j \in lines : \A i \in lines : j <= i

\* Entry e of c would reach VT in the jump (c holds it, or it waits in c's hand-off).
OverdueAt(c, e) == Overdue(e) /\ (e \in inbox[c] \/ (e \in Renewing(c) /\ owner[e] = c))

\* A held invocation's heartbeat runs late, when the jump needs it: inside one of c's windows.
LateHeartbeat ==
    /\ l < Lines /\ Gap > 0
    /\ \E c \in Consumers : \E e \in active[c] :
          /\ Overdue(e) /\ owner[e] = c
          /\ \E j \in {Excuse(c, Windows, LapseAt(e))} :
                /\ j # 0
                /\ HeartbeatLag(c, e)
                /\ used' = used \cup {j}
    /\ UNCHANGED <<traceVars, win, pend, stopped, polled>>

\* c stalls, when the jump needs it for a hand-off (inside a pause window of c, or a stall its
\* executor observed: a hand-off started late) or a leaked record (inside a lag or pause window
\* of c: its heartbeat renews those).
StallKinds(c, e) == IF e \in inbox[c] THEN {"pause", "stall"} ELSE Windows
Stall ==
    /\ l < Lines /\ Gap > 0
    /\ \E c \in Consumers : \E e \in inbox[c] \cup leaked[c] :
          /\ OverdueAt(c, e)
          /\ \E j \in {Excuse(c, StallKinds(c, e), LapseAt(e))} :
                /\ j # 0
                /\ Pause(c)
                /\ used' = used \cup {j}
    /\ UNCHANGED <<traceVars, win, pend, stopped, polled>>

\* A stalled consumer goes on at its next line.
Unstall ==
    /\ l < Lines /\ E.node \in Consumers
    /\ Resume(E.node)
    /\ UNCHANGED <<traceVars, faultVars>>

\* Never enabled: a jump that would take a protected entry to VT, with no fault line of its
\* holder whose window holds that time, says why it is rejected (RenewedWithinVT: the entry and
\* its holder, how idle the jump would make it, and the most idle it may get; a property's pair
\* is <<after the step, allowed>>, as NoOverlappingInvocations').
Unexcused(c, e) ==
    IF e \in active[c] THEN Excuse(c, Windows, LapseAt(e)) = 0
    ELSE Excuse(c, StallKinds(c, e), LapseAt(e)) = 0
LapseUnexcused ==
    /\ l < Lines /\ Gap > 0
    /\ \E c \in Consumers : \E e \in inbox[c] \cup Renewing(c) :
          /\ OverdueAt(c, e) /\ Unexcused(c, e)
          /\ Match(t, l + 1, [RenewedWithinVT |->
                 <<[entry |-> ids[e], holder |-> c, idle_ms |-> Min(idle[e] + Gap, VT)],
                   [entry |-> ids[e], holder |-> c, idle_ms |-> VT - 1]>>])
    /\ FALSE

\* Time passing before the next line: the jump itself where no protected entry would reach VT,
\* else a fault that lifts the timing assumption (or the line's rejection, LapseUnexcused). Each
\* fault needs an Overdue entry and the jump none: asked once, so that the faults are looked
\* at only where some entry is overdue (rarely), not at every line.
Jump == l < Lines /\ Gap > 0 /\ IF NoneOverdue THEN TraceTick
                                 ELSE LateHeartbeat \/ Stall \/ LapseUnexcused

Hidden == Jump \/ Unstall

-----------------------------------------------------------------------------
TraceInit ==
    /\ t \in 1..Len(Traces) /\ l = 0 /\ clock = 0 /\ ids = <<>>
    /\ stamp = [e \in Entries |-> -1]
    /\ win = [c \in Consumers |-> [k \in Windows |-> 0]]
    /\ pend = [c \in Consumers |-> [k \in Pended |-> {}]]
    /\ used = {}
    /\ stopped = {}
    /\ polled = {}
    \* A node the header names as NoOne (the owner of an entry nobody holds) would pass for
    \* nobody: its trace is rejected at its first line. (WorkQueue's ASSUME says so of the
    \* models' ConsumerIds; each trace's Consumers is given per trace.)
    /\ Match(t, 1, [node_named_as_no_one |-> <<{}, Consumers \cap {NoOne}>>])
    /\ Init

\* A logged receive_new or reclaim is the store's step of some poll: the poll's turn is hidden
\* (empty polls log nothing, and a turn may have passed in any number of them), so the trace
\* spec leaves polls alone and takes the logged source as the poll's.
TraceNext == (LoggedStep \/ Hidden) /\ UNCHANGED polls

=============================================================================
