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
(*   CrashStep                   Crash(c): an entry of c would reach VT    *)
(*   CloseStep                   Close(c), only where closing stops the    *)
(*                               heartbeat (close_waits_for_handlers off)  *)
(*                                                                         *)
(* Every hidden fault is paid for.  The header's `faults` says how many   *)
(* of each kind the run injected (crash, pause, heartbeat_lag, close,     *)
(* reject, ack_fail; a kind left out is 0) and the spec takes at most     *)
(* that many (`spent`): one heartbeat_lag per lease that lapsed under a   *)
(* late heartbeat (HeartbeatLag is per entry), one crash or close per     *)
(* node, one pause per stall, and the logged faults too: a `rejected`     *)
(* invoke_start and a `failed` ack past their budget are rejected at      *)
(* their line, naming faults.reject / faults.ack_fail.  Without them a    *)
(* dead heartbeat, a renewal that stops at max_processing_ms or a close   *)
(* that does not wait would all pass as a holder that stalled.            *)
(*                                                                         *)
(* A wall-clock trace (settings.wall_clock: a real server, where a        *)
(* process may stall with nothing injected) may also lag or stall where   *)
(* its own clock shows it: the node has logged no line for at least       *)
(* VT - HB (Silent), the least a stall must last for an entry that the    *)
(* heartbeat renewed every HB to reach VT (HB is the header's             *)
(* heartbeat_ms, at most VT/3 here, so that a header claiming a long      *)
(* period cannot shorten the silence).  A heartbeat thread that falls     *)
(* behind while its node goes on logging is not excused: a trace cannot   *)
(* tell it from a heartbeat that stopped, and the design's timing         *)
(* assumption is that it keeps up.  A node whose only work is one long    *)
(* call logs nothing while it runs, so there a dead heartbeat reads as a  *)
(* stall: the limit of what a wall-clock trace shows.                     *)
(*                                                                         *)
(* A jump that would take a protected entry to VT with no fault left to   *)
(* pay for it is rejected at that line, naming RenewedWithinVT: the       *)
(* entry, its holder, and how idle it would be.                           *)
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

\* The header's faults: how many of each hidden fault the run injected (0 when left out).
CONSTANTS CrashBudget, PauseBudget, LagBudget, CloseBudget, RejectBudget, AckFailBudget

\* The header's wall_clock (a real server's times) and heartbeat_ms.
CONSTANTS WallClock, HeartbeatMs

\* Each of ClockSlack, Drained, the budgets, WallClock and HeartbeatMs holds one value per trace
\* of the batch (per_trace in the system file: settings and counts differ from run to run, and
\* as constants they would split the batches or need an instance per trace): trace t's is
\* CrashBudget[t], and so on.
ASSUME \A i \in DOMAIN HeartbeatMs : HeartbeatMs[i] \in Nat

VARIABLES
    t,      \* which trace of the batch
    l,      \* how many of its lines are explained
    clock,  \* ms since the trace's first line
    ids,    \* the stream ids seen so far; an entry's number is its index here
    spent,  \* the faults taken so far, by the header's kind
    lastAt  \* [Consumers -> ms]: when each node logged its last line (0 before its first)

traceVars == <<t, l, clock, ids>>

Budget == [crash |-> CrashBudget[t], pause |-> PauseBudget[t], heartbeat_lag |-> LagBudget[t],
           close |-> CloseBudget[t], reject |-> RejectBudget[t], ack_fail |-> AckFailBudget[t]]

\* Take one fault of kind k, if the run injected one more.
Pay(k) == spent[k] < Budget[k] /\ spent' = [spent EXCEPT ![k] = @ + 1]

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
\* Idle time is all the spec knows of last_touched, and only for a pending entry.
SpecIdle(x) == IF status'[x] = "pending" THEN idle'[x] ELSE 0
LoggedIdle ==
    IF E.state.entry # Nil /\ E.state.entry.pending
    THEN Min(VT, E.now - E.state.entry.last_touched) ELSE 0

\* The logged idle time, or the spec's when they differ by ClockSlack at most.
IdleSeen(x) ==
    IF SpecIdle(x) - LoggedIdle <= ClockSlack[t] /\ LoggedIdle - SpecIdle(x) <= ClockSlack[t]
    THEN SpecIdle(x) ELSE LoggedIdle

\* The idle time a step read before writing (renew, release, ack: args.idle_ms, which the
\* schema requires on those lines), as the spec has it before the step: Nil when the entry is
\* not pending (new, or gone), as XPENDING finds no record then and the trace logs null.
SpecIdleRead(x) == IF status[x] = "pending" THEN idle[x] ELSE Nil
LoggedIdleRead == IF E.args.idle_ms = Nil THEN Nil ELSE Min(VT, E.args.idle_ms)

\* <<spec, logged>> for the idle read, the logged one within ClockSlack taken as the spec's (as
\* in IdleSeen).
IdleRead(x) ==
    IF /\ SpecIdleRead(x) # Nil /\ LoggedIdleRead # Nil
       /\ SpecIdleRead(x) - LoggedIdleRead <= ClockSlack[t]
       /\ LoggedIdleRead - SpecIdleRead(x) <= ClockSlack[t]
    THEN <<SpecIdleRead(x), SpecIdleRead(x)>>
    ELSE <<SpecIdleRead(x), LoggedIdleRead>>

\* The next line is an `op` committed now, on an entry the model has room for.
Logged(op) == /\ l < Lines /\ E.op = op /\ E.now = clock /\ X \in Entries

\* No two consumers hold entry x's lease after the step (Holds after it, written out: priming
\* Holds(c, x) would prime x too, and x reads the trace at the cursor).
HoldsAfter(c, x) == x \in active'[c] /\ x \notin lagging'[c] /\ x \notin lost'[c]
\* (Counted, not compared pairwise: one pass over the consumers.)
OneHolder(x) == Cardinality({c \in Consumers : HoldsAfter(c, x)}) <= 1

\* A logged fault (a rejected invoke_start, a failed ack) is paid for like a hidden one; past its
\* budget the line is rejected naming faults.<kind>: <<budget, the count this line would make>>.
PayLogged(k) ==
    IF spent[k] < Budget[k] THEN spent' = [spent EXCEPT ![k] = @ + 1]
    ELSE Match(t, l + 1, ("faults." \o k) :> <<Budget[k], spent[k] + 1>>)
SpendLogged(outcome) ==
    CASE E.op = "invoke_start" /\ outcome = "rejected" /\ E.outcome = "rejected" -> PayLogged("reject")
      [] E.op = "ack" /\ outcome = "failed" /\ E.outcome = "failed"              -> PayLogged("ack_fail")
      [] OTHER                                                                  -> UNCHANGED spent

\* The logged outcome, the idle read `read` (IdleRead) and the PEL record after the step agree
\* with the spec, the lease has one holder, and the line is explained.  Consumed last, so that
\* it prints only on success.
ExplainsRead(x, outcome, read) ==
    /\ l' = l + 1 /\ UNCHANGED <<t, clock>> /\ Bind
    /\ lastAt' = [lastAt EXCEPT ![E.node] = E.now]
    /\ SpendLogged(outcome)
    /\ Match(t, l + 1, [outcome |-> <<outcome, E.outcome>>,
                        idle_read |-> read,
                        entry |-> <<PelView(x), LoggedPel>>,
                        idle |-> <<SpecIdle(x), IdleSeen(x)>>,
                        NoOverlappingInvocations |-> <<~OneHolder(x), FALSE>>])
    /\ (Drained[t] /\ l + 1 = Lines) =>
          Match(t, l + 1, [EveryEntryAcked |-> <<{ids'[i] : i \in {i \in DOMAIN ids' : status'[i] # "gone"}}, {}>>])
    /\ Consumed(t, l + 1, Lines)

\* A step that reads nothing before writing.
Explains(x, outcome) == ExplainsRead(x, outcome, <<Nil, Nil>>)

-----------------------------------------------------------------------------
(* One Is<Op> per logged op.                                               *)

IsOffer ==
    /\ Logged("offer")
    /\ \E x \in {X} :
        /\ Offer(x)
        /\ Explains(x, "added")

IsReceiveNew ==
    /\ Logged("receive_new")
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
                   checked, elapsed, faults>>

IsReclaim ==
    /\ Logged("reclaim")
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

IsRenew ==
    /\ Logged("renew")
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
    /\ l < Lines /\ X \notin Entries
    /\ Match(t, l + 1, [entries_in_model |-> <<Cardinality(Entries), X>>])
    /\ FALSE

LoggedStep ==
    \/ IsOffer \/ IsReceiveNew \/ IsReclaim \/ IsInvokeStart \/ IsInvokeEnd
    \/ IsRenew \/ IsAck \/ IsRelease \/ EntryPastModel

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
                   lagging, stalled, leaked, lost, checked, faults, t, l, ids, spent, lastAt>>

\* In a wall-clock trace, c has logged nothing from its last line to the next line's time for as
\* long as a stall must last to let an entry it renews every HB reach VT (see the header).
Silent(c) == WallClock[t] /\ E.now - lastAt[c] >= VT - Min(HeartbeatMs[t], VT \div 3)

\* A lag or stall of c: paid from kind k's budget, or free where the trace's clock shows it.
PayOrSilent(c, k) == IF Silent(c) THEN UNCHANGED spent ELSE Pay(k)

\* Entry e of c would reach VT in the jump (c holds it, or it waits in c's hand-off).
OverdueAt(c, e) == Overdue(e) /\ (e \in inbox[c] \/ (e \in Renewing(c) /\ owner[e] = c))
\* Some entry of c would (only c's hand-offs and renewed records need looking at).
OverdueOf(c) == \E e \in inbox[c] \cup Renewing(c) : OverdueAt(c, e)

\* A held invocation's heartbeat runs late, when the jump needs it.
LateHeartbeat ==
    /\ l < Lines /\ Gap > 0
    /\ \E c \in Consumers : \E e \in active[c] :
          /\ Overdue(e) /\ owner[e] = c
          /\ HeartbeatLag(c, e)
          /\ PayOrSilent(c, "heartbeat_lag")
    /\ UNCHANGED <<traceVars, lastAt>>

\* c stalls, when the jump needs it for a hand-off or a leaked record that no heartbeat lag
\* covers (HeartbeatLag applies to running calls only).
Stall ==
    /\ l < Lines /\ Gap > 0
    /\ \E c \in Consumers :
          /\ \E e \in inbox[c] \cup leaked[c] : OverdueAt(c, e)
          /\ Pause(c)
          /\ PayOrSilent(c, "pause")
    /\ UNCHANGED <<traceVars, lastAt>>

\* A stalled consumer goes on at its next line.
Unstall ==
    /\ l < Lines /\ E.node \in Consumers
    /\ Resume(E.node)
    /\ UNCHANGED <<traceVars, spent, lastAt>>

\* c logs no line after the next one's position: only such a node may have crashed.
Done(c) == \A j \in (l + 1)..Lines : Traces[t][j].node # c

\* c crashed (its lines stop, its entries lapse), when the jump needs it; one crash per node.
CrashStep ==
    /\ l < Lines /\ Gap > 0
    /\ \E c \in Consumers :
          /\ OverdueOf(c) /\ Done(c)
          /\ Crash(c)
          /\ Pay("crash")
    /\ UNCHANGED <<traceVars, lastAt>>

\* c closed and, without close_waits_for_handlers, stopped renewing its running calls: taken
\* only then, when the jump needs it (a close that waits keeps every lease fresh, so it
\* explains no lapse and is left out).
CloseStep ==
    /\ l < Lines /\ Gap > 0 /\ ~CloseWaitsForHandlers
    /\ \E c \in Consumers :
          /\ OverdueOf(c)
          /\ Close(c)
          /\ Pay("close")
    /\ UNCHANGED <<traceVars, lastAt>>

\* Never enabled: a jump that would take a protected entry to VT, with no fault left that could
\* lift the timing assumption, says why it is rejected (RenewedWithinVT: the entry and its
\* holder, how idle the jump would make it, and the most idle it may get; a property's pair is
\* <<after the step, allowed>>, as NoOverlappingInvocations').
CanExcuse(c) ==
    \/ Silent(c)
    \/ \E k \in {"heartbeat_lag", "pause"} : spent[k] < Budget[k]
    \/ Done(c) /\ spent["crash"] < Budget["crash"]
    \/ ~CloseWaitsForHandlers /\ spent["close"] < Budget["close"]
LapseUnpaid ==
    /\ l < Lines /\ Gap > 0
    /\ \E c \in Consumers : \E e \in inbox[c] \cup Renewing(c) :
          /\ OverdueAt(c, e) /\ ~CanExcuse(c)
          /\ Match(t, l + 1, [RenewedWithinVT |->
                 <<[entry |-> ids[e], holder |-> c, idle_ms |-> Min(idle[e] + Gap, VT)],
                   [entry |-> ids[e], holder |-> c, idle_ms |-> VT - 1]>>])
    /\ FALSE

\* Time passing before the next line: the jump itself where no protected entry would reach VT,
\* else a fault that lifts the timing assumption (or the line's rejection, LapseUnpaid). Each
\* fault needs an Overdue entry and the jump none: asked once, so that the faults are looked
\* at only where some entry is overdue (rarely), not at every line.
Jump == l < Lines /\ Gap > 0 /\ IF NoneOverdue THEN TraceTick
                                 ELSE LateHeartbeat \/ Stall \/ CrashStep \/ CloseStep \/ LapseUnpaid

Hidden == Jump \/ Unstall

-----------------------------------------------------------------------------
TraceInit ==
    /\ t \in 1..Len(Traces) /\ l = 0 /\ clock = 0 /\ ids = <<>>
    /\ spent = [k \in DOMAIN Budget |-> 0]
    /\ lastAt = [c \in Consumers |-> 0]
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
