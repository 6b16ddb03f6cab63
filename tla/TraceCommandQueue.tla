------------------------- MODULE TraceCommandQueue -------------------------
(***************************************************************************)
(* The command layer's trace spec: each logged line of a `command` trace  *)
(* is the CommandQueue action of the same name, and its logged fields     *)
(* (outcome; the command's status, guard owner and external call count   *)
(* after it) must be what that action says.  Contract: traces/README.md;  *)
(* names: the Command layer table of tla/README.md.  Checked by           *)
(* `leaseproof traces check` with traces/systems/command.yaml.            *)
(*                                                                         *)
(*   trace op        spec action       store step (impl/workqueue)        *)
(*   submit_state    SubmitState(k)    submit_state.lua  (SET NX)         *)
(*   offer           Offer(k)          offer.lua         (XADD)           *)
(*   receive_new     ReceiveNew(w, k)  receive_new.lua                    *)
(*   reclaim         Reclaim(w, k)     reclaim.lua                        *)
(*   guard_take      GuardTake(w)      guard_take.lua    (SET NX PX)      *)
(*   guard_renew     GuardRenew(w)     guard_renew.lua   (CAS PEXPIRE)    *)
(*   put_if_owner    PutIfOwner(w, s)  put_if_owner.lua  (args.status)    *)
(*   external_call   ExternalCall(w)   external_call.lua (key = cmd id)   *)
(*   guard_release   GuardRelease(w)   guard_release.lua (CAS DEL)        *)
(*   ack             Ack(w)            ack.lua           (XACK + XDEL)    *)
(*   cancel          Cancel(k)         cancel.lua                         *)
(*                                                                         *)
(* Names.  A command id is numbered by its first line (`cmds`): Commands  *)
(* is 1..N.  A spec worker is one delivery: the i-th receive_new or       *)
(* reclaim line of the trace is worker i (`dl[i]` holds its node and,     *)
(* once its guard_take names it, its attempt id).  CommandQueue's worker  *)
(* runs one attempt at a time and the guard owner is its name; the        *)
(* reference runs several attempts per node and names the owner by a     *)
(* random attempt id: one worker per delivery is both.  A line of attempt *)
(* a is the worker bound to a; a guard_take binds the first unbound       *)
(* delivery of its command to its node (such deliveries are alike, so the *)
(* first is as good as any).  A delivery the queue drops (a duplicate, a  *)
(* rejection) is a worker that never takes the guard: no step needed.     *)
(*                                                                         *)
(* Hidden steps (leave l alone), each taken only when the next line      *)
(* needs it, and none free:                                               *)
(*   Stall(w), GuardExpire(k)  the guard's holder stalled (or died: the   *)
(*                             same in a trace) and its guard lapsed: the *)
(*                             next line shows the guard gone or another  *)
(*                             owner. Only once its TTL has passed since  *)
(*                             its last take or renewal (`gexp`, within   *)
(*                             ClockSlack), with no heartbeat of the      *)
(*                             holder's node since (`ghb`), and where a   *)
(*                             fault line of that node holds the moment   *)
(*                             it lapsed: a heartbeat_lag or pause window *)
(*                             (start..end, or one observed later with    *)
(*                             args.since), a crash, or a close that does *)
(*                             not wait for its handlers; or where the    *)
(*                             holder's entry went to another node (its   *)
(*                             heartbeat stops renewing the guard).       *)
(*                             Resume(w) at w's next line                 *)
(*   ClientFails(k)            a submit failed between its state write    *)
(*                             and its offer (an offer_fail line): it is  *)
(*                             submitted again                            *)
(*   GuardTake(w), GuardRelease(w) with AttemptGuard off (the reference   *)
(*                             logs no guard op then: only the read)      *)
(*   PutCheck(w)               the owner read of the two-step putIfOwner  *)
(*                             (AtomicPutIfOwner off), at any time         *)
(*   CallThrows(w)             the external call threw: at the attempt's  *)
(*                             guard_release line, which follows no write *)
(* A heartbeat that renews inside its node's injected lag window, or a    *)
(* guard renewed later than twice the header's heartbeat_ms after its     *)
(* last take or renewal outside any window of its node, is rejected       *)
(* (HeartbeatLagged, HeartbeatAsClaimed): a header cannot shorten the     *)
(* heartbeat the guard TTL is checked against.                            *)
(* Implementation quirks, in ImplQuirk: an ack that fails (an ack_fail    *)
(* line before it) or finds the entry already acked (by another delivery  *)
(* of it) takes no message; the status read after the guard_take.        *)
(*                                                                         *)
(* Besides the protocol, every line must keep, for its command:           *)
(* NoStaleWrite, NoStaleCall (no external call recorded by an attempt     *)
(* that does not own the guard), TerminalIsStable, a guard TTL above the  *)
(* renewal period (GuardOutlivesRenewal, ttl_ms as the header says), a    *)
(* guard held only until its expiry (guard_expires), and one live        *)
(* attempt: no two attempts                                                *)
(* past their guard_take and before their release, neither of them a     *)
(* stalled one whose guard lapsed (with AttemptGuard off, two deliveries  *)
(* that both run the command are rejected at the line that shows it).     *)
(* And what the abstract queue cannot tell: a receive_new is a stream     *)
(* entry's first delivery and a reclaim the next delivery of an entry     *)
(* delivered and not acked, to the line's node, as its logged PEL record  *)
(* says (`pel`); an attempt renews nothing after a lost renewal (the      *)
(* reference's heartbeat stops there: `lostRenew`).                        *)
(***************************************************************************)
EXTENDS CommandQueue, TraceData

VARIABLES
    t,      \* which trace of the batch
    l,      \* how many of its lines are explained
    cmds,   \* the command ids seen so far; a command's number is its index here
    dl,     \* the deliveries so far: dl[w] = [node, attempt, entry] of worker w (attempt Nil: unbound)
    gone,   \* the stream entries acked so far
    pel,    \* the stream entries delivered so far: pel[id] = how many times
    lostRenew \* the attempts whose guard renewal was lost (their heartbeat stops there)

\* Time (ms since the trace's first line, as the checker makes `now` relative).
VARIABLES
    clock,  \* the `now` of the last line explained
    gexp,   \* gexp[k]: when k's guard expires: its last take or renewal's now + its TTL
    ghb     \* ghb[k]: the first heartbeat line (guard_renew) of the holder's node after the
            \* guard's last take or renewal, -1 for none: a heartbeat that ran renews every
            \* guard its node holds, so a guard lapses unrenewed only in a gap after it
timeVars == <<clock, gexp, ghb>>

\* What the fault lines have said (every function below grows with the nodes that log).
VARIABLES
    win,      \* win[n][k]: the line that opened n's window of kind k (0: closed)
    shut,     \* the windows closed so far: [node, line (its start), from, to (ms)]
    down,     \* down[n]: the line of n's crash, or of its close that stops the heartbeat
    pend,     \* pend[n][k]: n's ack_fail / offer_fail lines (their numbers) its next failed ack or
              \* resubmit takes
    used,     \* the fault lines a hidden step needed (their line numbers)
    stopped   \* the nodes that logged their stop
faultVars == <<win, shut, down, pend, used, stopped>>

Windows == {"heartbeat_lag", "pause"}
Pended == {"ack_fail", "offer_fail"}
FaultOps == Windows \cup Pended \cup {"crash", "close", "reject", "stall"}

traceVars == <<t, l, cmds, dl, gone, pel, lostRenew, timeVars, faultVars>>

\* The header's `drained`: the run's stream was empty when the trace was written (read from
\* Redis). Then the trace must end with every command it names finished and every message
\* acked (EveryCommandDone, which a finite trace can show only at an end the run says is one).
CONSTANT Drained

\* From the header: the guard TTL and the heartbeat (renewal) period, ms (settings.guard_ttl_ms,
\* settings.heartbeat_ms); how far the server's clock readings may fall apart
\* (settings.clock_slack_ms, bounded by the system file); whether a closing node keeps renewing
\* (gates.close_waits_for_handlers: if not, a close is a stall). GuardTTL, Heartbeat and
\* ClockSlack hold one value per trace of the batch (per_trace in traces/systems/command.yaml,
\* so that runs of other settings share a TLC run): trace t's is GuardTTL[t], and so on.
CONSTANTS GuardTTL, Heartbeat, ClockSlack, CloseWaits

\* From the header: the state record's TTL, ms (settings.state_ttl_ms), one value per trace.
\* CommandQueue's StateExpire is off here (StateExpiry = FALSE): a trace must end before the
\* TTL could have run out for a record its first line wrote (`state_ttl`).
CONSTANT StateTTL

E == Traces[t][l + 1]                   \* the next line to explain
Lines == Len(Traces[t])

Least(S) == CHOOSE x \in S : \A y \in S : x <= y
Range(s) == {s[i] : i \in DOMAIN s}

\* The number of the next line's command (a new id gets the next number).
K == IF E.cmd \in Range(cmds) THEN CHOOSE i \in DOMAIN cmds : cmds[i] = E.cmd ELSE Len(cmds) + 1
BindK(k) == cmds' = IF k <= Len(cmds) THEN cmds ELSE Append(cmds, E.cmd)

\* The attempt the next line names (Nil for the client's and the queue's lines).
Att == IF "args" \in DOMAIN E THEN IF "attempt" \in DOMAIN E.args THEN E.args.attempt ELSE Nil
       ELSE Nil
Bound(a) == {w \in DOMAIN dl : dl[w].attempt = a}
\* Deliveries of the line's command to the line's node that no attempt has named yet.
Unbound(k) == {w \in DOMAIN dl : /\ dl[w].attempt = Nil /\ dl[w].node = E.node
                             /\ cmdOf[w] = k /\ pc[w] # "idle"}
\* The worker of the next line: the one its attempt is bound to, else the first unbound
\* delivery that has gone past `take` or (for guard_take) is at it; 0 when there is none.
WkOf(k) == CASE Att # Nil /\ Bound(Att) # {} -> CHOOSE w \in Bound(Att) : TRUE
             [] Att # Nil /\ Unbound(k) # {} -> Least(Unbound(k))
             [] OTHER                        -> 0
\* wk (WkOf's) is the worker the line's attempt is bound to: Bound(Att) = {wk} (an attempt is
\* bound to one delivery at most, BindW), read with one lookup instead of a walk of dl.
IsBound(wk) == Att # Nil /\ wk \in DOMAIN dl /\ dl[wk].attempt = Att
BindW(wk) == dl' = IF wk \in DOMAIN dl /\ dl[wk].attempt = Nil
               THEN [dl EXCEPT ![wk].attempt = Att] ELSE dl

\* The guard's owner as the trace names it: the attempt bound to the owning worker.
OwnerAfter(k) == IF guard'[k] = NoOne THEN Nil ELSE dl'[guard'[k]].attempt
CmdAfter(k) ==
    [command |-> IF status'[k] = "NONE" THEN Nil ELSE [status |-> status'[k]],
     guard |-> [owner |-> OwnerAfter(k)],
     external_calls |-> extCalls'[k]]

\* Attempts of k that run it: past their guard_take, before their release, running and
\* not stale (a stalled attempt whose guard lapsed runs on, but learns it at its next step).
Live(k) == {w \in DOMAIN dl' : /\ cmdOf'[w] = k /\ wmode'[w] = "running" /\ ~stale'[w]
                               /\ pc'[w] \in {"submit", "call", "process", "finish", "release", "drop"}}

\* The next line is an `op`, by a node that has not stopped, on a command the model has room for.
Logged(op, k) == E.op = op /\ E.node \notin stopped /\ k \in Commands
\* The node of the worker holding k's guard.
HolderNode(k) == dl[guard[k]].node

\* The fault lines' state of node n (a node that logged none has none open).
WinsOf(n) == IF n \in DOMAIN win THEN win[n] ELSE [kind \in Windows |-> 0]
WinOf(n, kind) == WinsOf(n)[kind]
PendsOf(n) == IF n \in DOMAIN pend THEN pend[n] ELSE [kind \in Pended |-> {}]
DownAt(n) == IF n \in DOMAIN down THEN down[n] ELSE 0
Observed(j, n) == /\ Traces[t][j].op \in Windows /\ Traces[t][j].node = n
                  /\ Traces[t][j].outcome = "observed"
\* Some window of node n overlaps the time from..to: one open now, one closed, or an observed
\* one anywhere in the trace.
WindowIn(n, from, to) ==
    \/ \E kind \in Windows : WinOf(n, kind) # 0
    \/ \E w \in shut : w.node = n /\ w.to >= from /\ w.from <= to
    \/ \E j \in 1..Lines : Observed(j, n) /\ Traces[t][j].args.since <= to + ClockSlack[t]
                          /\ Traces[t][j].now >= from
\* The first fault line of node n whose window holds time x, 0 for none: a lag or pause window
\* (open, or closed since: a guard's lapse is taken only when a line needs it gone) that began
\* by x, n's crash or stopping close by x, or an observed window logged later.
Excuse(n, x) ==
    LET open == {WinOf(n, kind) : kind \in {kind \in Windows : WinOf(n, kind) # 0
                                                             /\ Traces[t][WinOf(n, kind)].now <= x + ClockSlack[t]}}
                \cup {w.line : w \in {w \in shut : w.node = n /\ w.from <= x + ClockSlack[t] /\ x <= w.to + ClockSlack[t]}}
        dead == IF DownAt(n) # 0 /\ Traces[t][DownAt(n)].now <= x + ClockSlack[t] THEN {DownAt(n)} ELSE {}
        seen == {j \in (l + 1)..Lines : Observed(j, n) /\ Traces[t][j].args.since <= x + ClockSlack[t]
                                        /\ x <= Traces[t][j].now}
        lines == open \cup dead \cup seen
    IN IF lines = {} THEN 0 ELSE CHOOSE j \in lines : \A i \in lines : j <= i
Min(a, b) == IF a < b THEN a ELSE b
\* A failed ack or a resubmit takes an injected fault of node n logged before it; with none, the
\* line is rejected naming it.
Take(n, kind) ==
    /\ Match(t, l + 1, ("fault_line." \o kind) :> <<Min(Cardinality(PendsOf(n)[kind]), 1), 1>>)
    /\ \E j \in {Least(PendsOf(n)[kind])} :
          /\ pend' = (n :> [PendsOf(n) EXCEPT ![kind] = @ \ {j}]) @@ pend
          /\ used' = used \cup {j}

\* The line's step found k's guard held (an owner check that passed, a take or cancel that
\* found it busy), or the line shows it still held by the spec's holder.
ShowsGuardHeld(k) ==
    \/ E.op = "guard_renew" /\ E.outcome = "renewed"
    \/ E.op = "guard_release" /\ E.outcome = "released"
    \/ E.op \in {"guard_take", "cancel"} /\ E.outcome = "busy"
    \/ E.op = "external_call" /\ E.outcome = "called" /\ AttemptGuard
    \/ E.op = "put_if_owner" /\ E.outcome = "written" /\ AttemptGuard /\ AtomicPutIfOwner
    \/ /\ E.op \in {"submit_state", "put_if_owner", "external_call", "guard_renew"}
       /\ E.state.guard.owner # Nil /\ E.state.guard.owner = dl[guard[k]].attempt
\* A guard held past its expiry: Redis would have deleted it.
HeldPastTTL(k) == guard[k] # NoOne /\ E.now > gexp[k] + ClockSlack[t] /\ ShowsGuardHeld(k)

\* The cursor has moved: at the last line of a drained trace every command is finished and its
\* messages acked.  Consumed last, so that it prints only on success; the acceptance names the
\* fault lines the behaviour needed.
Finish ==
    /\ (Drained /\ l + 1 = Lines) =>
          Match(t, l + 1, [EveryCommandDone |->
                              <<{cmds'[i] : i \in {i \in DOMAIN cmds' :
                                   status'[i] \notin Terminal \/ msgs'[i] # 0}}, {}>>])
    /\ ConsumedExcused(t, l + 1, Lines, used')

\* Every outcome the spec can give each logged store step: the requirements of a trace set's
\* spec coverage (conformance/traces/spec_coverage.py reads this table; the system file says
\* which of them the designed code cannot reach, and why). Explains holds the spec to it.
Outcomes == [submit_state |-> {"created", "exists"},
             offer |-> {"added"},
             receive_new |-> {"delivered"},
             reclaim |-> {"claimed"},
             guard_take |-> {"taken", "busy"},
             guard_renew |-> {"renewed", "lost"},
             put_if_owner |-> {"written", "refused"},
             external_call |-> {"called", "refused"},
             guard_release |-> {"released", "lost"},
             cancel |-> {"cancelled", "busy", "terminal"},
             ack |-> {"acked", "failed"}]

\* The line's outcome (and, for the command's own ops, its state) agree with the spec, the
\* command keeps the properties, and the line is explained.  The cursor and the names are
\* fixed first (the views read dl'); Consumed last, so that it prints only on success.
Explains(k, outcome, withState) ==
    /\ l' = l + 1 /\ UNCHANGED t /\ BindK(k) /\ clock' = E.now
    /\ Match(t, l + 1,
             [outcome |-> <<outcome, E.outcome>>,
              outcome_in_Outcomes |-> <<E.op \in DOMAIN Outcomes /\ outcome \in Outcomes[E.op], TRUE>>,
              \* Without the guard there is no owner to be stale against (tla/README.md).
              NoStaleWrite |-> <<AttemptGuard /\ staleWrite', FALSE>>,
              TerminalIsStable |-> <<firstTerminal'[k] # "NONE" /\ status'[k] # firstTerminal'[k], FALSE>>,
              OneLiveAttempt |-> <<Cardinality(Live(k)) > 1, FALSE>>,
              state_ttl |-> IF E.now >= StateTTL[t]
                            THEN <<[expires |-> StateTTL[t]], [line_at |-> E.now]>>
                            ELSE <<0, 0>>]
             @@ (IF withState
                 THEN [state |-> <<CmdAfter(k), E.state>>,
                       guard_expires |-> IF HeldPastTTL(k)
                                         THEN <<[expires |-> gexp[k]], [held_at |-> E.now]>>
                                         ELSE <<0, 0>>]
                 ELSE <<>>))
    /\ Finish


-----------------------------------------------------------------------------
(* One Is<Op> per logged op.                                               *)

KeepTime == UNCHANGED <<gexp, ghb>>
KeepBudgets == UNCHANGED faultVars

IsSubmitState(k) ==
    /\ Logged("submit_state", k)
    /\ SubmitState(k)
    /\ UNCHANGED <<dl, gone, pel, lostRenew>> /\ KeepTime /\ KeepBudgets
    /\ Explains(k, IF status[k] = "NONE" THEN "created" ELSE "exists", TRUE)

IsOffer(k) ==
    /\ Logged("offer", k)
    /\ Offer(k)
    /\ UNCHANGED <<dl, gone, pel, lostRenew>> /\ KeepTime /\ KeepBudgets
    /\ Explains(k, "added", FALSE)

\* CommandQueue counts a command's messages, not stream entries, so the queue lines are also
\* checked against each other: a receive_new is an entry's first delivery and a reclaim the
\* next one of a delivered entry not acked, each to the line's node, as the logged PEL record
\* after it says (deliveries, owner). Two deliveries of one entry are never two messages.
Deliveries == IF E.entry \in DOMAIN pel THEN pel[E.entry] ELSE 0
PelMatches(receive) ==
    Match(t, l + 1,
          [entry_deliveries |-> <<IF receive THEN 1 ELSE Deliveries + 1,
                                  IF E.state.entry = Nil THEN 0 ELSE E.state.entry.deliveries>>,
           entry_owner |-> <<E.node, IF E.state.entry = Nil THEN Nil ELSE E.state.entry.owner>>,
           entry_delivered_before |-> <<~receive, E.entry \in DOMAIN pel>>,
           entry_acked |-> <<FALSE, E.entry \in gone>>])

\* A delivery is a new worker, the next one.
Deliver(receive, k) ==
    LET w == Len(dl) + 1 IN
    /\ w \in Workers
    /\ IF receive THEN ReceiveNew(w, k) ELSE Reclaim(w, k)
    /\ dl' = Append(dl, [node |-> E.node, attempt |-> Nil, entry |-> E.entry])
    /\ pel' = (E.entry :> Deliveries + 1) @@ pel
    /\ UNCHANGED <<gone, lostRenew>> /\ KeepTime /\ KeepBudgets
    /\ PelMatches(receive)

IsReceiveNew(k) ==
    /\ Logged("receive_new", k)
    /\ Deliver(TRUE, k)
    /\ Explains(k, "delivered", FALSE)

IsReclaim(k) ==
    /\ Logged("reclaim", k)
    /\ Deliver(FALSE, k)
    /\ Explains(k, "claimed", FALSE)

\* A line of a worker's attempt: the worker exists, is at this command and on this node.
Worker(k, wk) == wk \in DOMAIN dl /\ cmdOf[wk] = k /\ dl[wk].node = E.node

\* The TTL a guard line writes (args.ttl_ms) is the header's, and above the heartbeat period
\* that renews it: a shorter one lapses between two renewals of a live attempt.
TTLMatches ==
    Match(t, l + 1, [ttl_ms |-> <<GuardTTL[t], E.args.ttl_ms>>,
                     GuardOutlivesRenewal |-> <<E.args.ttl_ms <= Heartbeat[t], FALSE>>])

\* A guard taken now expires a TTL later (a guard renewed resets it in IsGuardRenew).
Taken(k) == gexp' = [gexp EXCEPT ![k] = E.now + GuardTTL[t]]

IsGuardTake(k, wk) ==
    /\ Logged("guard_take", k)
    /\ Worker(k, wk) /\ pc[wk] = "take"
    /\ GuardTake(wk)
    /\ BindW(wk) /\ UNCHANGED <<gone, pel, lostRenew>> /\ KeepBudgets
    /\ TTLMatches
    /\ IF guard[k] = NoOne
         THEN Taken(k) /\ ghb' = [ghb EXCEPT ![k] = -1]
         ELSE KeepTime
    /\ Explains(k, IF guard[k] = NoOne THEN "taken" ELSE "busy", TRUE)

(* Implementation quirk (listed with the others under ImplQuirk): LostRenewRunsOn. The   *)
(* heartbeat's renewal finds the guard lost, but the handler runs in another thread and    *)
(* learns it only at its own next guarded step (a write refused, a release lost): until    *)
(* then it is a stale attempt. CommandQueue's GuardRenew ends the attempt at once.         *)
(* Taken only for an attempt that logs a later line: one that logs none is the attempt     *)
(* ended, as far as the rest of the trace can tell (a stale attempt holds no guard and     *)
(* runs no command, and every store step it could take is logged), and keeping both would *)
(* double the search from here to the trace's end.                                         *)
AttemptOf(j) == LET e == Traces[t][j] IN
                IF "args" \in DOMAIN e /\ "attempt" \in DOMAIN e.args THEN e.args.attempt ELSE Nil
LogsAgain(a) == \E j \in (l + 2)..Lines : AttemptOf(j) = a
LostRenewRunsOn(w) ==
    /\ AttemptGuard /\ Running(w)
    /\ pc[w] \notin {"idle", "take", "ack", "drop"}
    /\ guard[cmdOf[w]] # w
    /\ LogsAgain(Att)
    /\ stale' = [stale EXCEPT ![w] = TRUE]
    /\ UNCHANGED <<storeVars, externalVars, clientVars, wmode, cmdOf, pc, checked, historyVars>>

\* The reference's heartbeat stops renewing an attempt once a renewal finds the guard lost
\* (impl/workqueue/commands.py): an attempt renews nothing after that.
\* A guard_renew line is the heartbeat of its node running now: for every other guard the
\* node holds, the first heartbeat since its last take or renewal (ghb), unless it may be the
\* same round of the heartbeat (within half a period of that renewal: one round renews every
\* guard of the node in turn, and a round that began before a take may not renew it).
NextBeat(j) == E.now >= gexp[j] - GuardTTL[t] + Heartbeat[t] \div 2

\* A guard renewal is the heartbeat of its node: none while the node's injected window says
\* its heartbeat lags (HeartbeatLagged: a recorder that logs a lag it did not make), and none
\* later than twice the header's heartbeat period after the guard's last take or renewal,
\* unless a window of the node overlaps the gap (HeartbeatAsClaimed: the header's
\* heartbeat_ms is what GuardOutlivesRenewal checks the TTL against).
LastGuardWrite(k) == gexp[k] - GuardTTL[t]
Overdue(k) == E.now > LastGuardWrite(k) + 2 * Heartbeat[t] + ClockSlack[t]
IsGuardRenew(k, wk) ==
    /\ Logged("guard_renew", k)
    /\ Worker(k, wk)
    /\ GuardRenew(wk) \/ LostRenewRunsOn(wk)
    /\ BindW(wk) /\ UNCHANGED <<gone, pel>> /\ KeepBudgets
    /\ lostRenew' = IF guard[k] = wk THEN lostRenew ELSE lostRenew \cup {Att}
    /\ TTLMatches
    /\ IF guard[k] = wk
         THEN gexp' = [gexp EXCEPT ![k] = E.now + GuardTTL[t]]
         ELSE UNCHANGED gexp
    /\ ghb' = [j \in DOMAIN ghb |->
                 IF j = k /\ guard[k] = wk THEN -1
                 ELSE IF /\ ghb[j] = -1 /\ guard[j] # NoOne /\ dl[guard[j]].node = E.node
                         /\ NextBeat(j)
                      THEN E.now ELSE ghb[j]]
    /\ Match(t, l + 1, [renewed_after_lost |-> <<FALSE, Att \in lostRenew>>,
                        HeartbeatLagged |-> <<\E w \in Windows : WinOf(E.node, w) # 0, FALSE>>,
                        HeartbeatAsClaimed |->
                           IF guard[k] = wk /\ Overdue(k) /\ ~WindowIn(E.node, LastGuardWrite(k), E.now)
                           THEN <<[renewed_after_ms |-> E.now - LastGuardWrite(k)],
                                  [at_most_ms |-> 2 * Heartbeat[t] + ClockSlack[t]]>>
                           ELSE <<0, 0>>])
    /\ Explains(k, IF guard[k] = wk THEN "renewed" ELSE "lost", TRUE)

IsPutIfOwner(k, wk) ==
    /\ Logged("put_if_owner", k)
    /\ Worker(k, wk)
    /\ PutIfOwner(wk, E.args.status)
    /\ BindW(wk) /\ UNCHANGED <<gone, pel, lostRenew>> /\ KeepTime /\ KeepBudgets
    /\ Explains(k, IF pc'[wk] = "idle" THEN "refused" ELSE "written", TRUE)

\* NoStaleCall: a call recorded by an attempt that does not own the guard (the script's owner
\* check skipped) is rejected at that line, whatever explains the rest. CommandQueue's
\* ExternalCall refuses such an attempt (CallChecksGuard, on here).
IsExternalCall(k, wk) ==
    /\ Logged("external_call", k)
    /\ Worker(k, wk)
    /\ ExternalCall(wk)
    /\ BindW(wk) /\ UNCHANGED <<gone, pel, lostRenew>> /\ KeepTime /\ KeepBudgets
    /\ Match(t, l + 1, [NoStaleCall |-> <<AttemptGuard /\ E.outcome = "called" /\ guard[k] # wk, FALSE>>])
    /\ Explains(k, IF CallRefused(wk) THEN "refused" ELSE "called", TRUE)

IsGuardRelease(k, wk) ==
    /\ Logged("guard_release", k)
    /\ Worker(k, wk)
    /\ GuardRelease(wk)
    /\ BindW(wk) /\ UNCHANGED <<gone, pel, lostRenew>> /\ KeepTime /\ KeepBudgets
    /\ Explains(k, IF guard[k] = wk THEN "released" ELSE "lost", TRUE)

IsCancel(k) ==
    /\ Logged("cancel", k)
    /\ Cancel(k)
    /\ UNCHANGED <<dl, gone, pel, lostRenew>> /\ KeepTime /\ KeepBudgets
    /\ Explains(k, CASE status[k] \in Terminal -> "terminal"
                     [] guard[k] = NoOne \/ ~CancelTakesGuard -> "cancelled"
                     [] OTHER -> "busy", TRUE)

\* An ack names no attempt: it is the first of the command's deliveries on its node whose
\* attempt is at its ack (they are alike).
Acker(k) == {w \in DOMAIN dl : dl[w].node = E.node /\ cmdOf[w] = k /\ pc[w] = "ack"}

\* Implementation quirk: an ack that fails (an injected fault, counted in faults.ack_fail: the
\* entry stays pending and comes back), or that finds its entry acked already by another
\* delivery of it (XACK returns 0), ends the attempt and takes no message away. CommandQueue's
\* queue counts messages, not entries, so its Ack would take another of the command's messages.
AckTakesNothing(w) ==
    /\ pc[w] = "ack"
    /\ EndAttempt(w)
    /\ UNCHANGED <<storeVars, externalVars, clientVars, wmode, historyVars>>

\* A failed ack takes the ack_fail line its node logged before it (the injected fault); with
\* none, it is rejected there (fault_line.ack_fail).
IsAck(k) ==
    /\ Logged("ack", k)
    /\ Acker(k) # {}
    /\ LET w == Least(Acker(k)) IN
          IF E.outcome = "acked" /\ E.entry \notin gone
          THEN Ack(w) ELSE AckTakesNothing(w)
    /\ gone' = IF E.outcome = "acked" THEN gone \cup {E.entry} ELSE gone
    /\ UNCHANGED <<dl, pel, lostRenew>> /\ KeepTime
    /\ E.outcome \in {"acked", "failed"}
    /\ IF E.outcome = "failed" THEN Take(E.node, "ack_fail") ELSE UNCHANGED <<pend, used>>
    /\ UNCHANGED <<win, shut, down, stopped>>
    /\ Explains(k, E.outcome, FALSE)

\* Never enabled: a line past the model's Commands or Workers only says why it is rejected.
PastModel(k) ==
    /\ l < Lines
    /\ \/ k \notin Commands
       \/ E.op \in {"receive_new", "reclaim"} /\ Len(dl) + 1 \notin Workers
    /\ Match(t, l + 1, [commands_in_model |-> <<Cardinality(Commands), k>>,
                        deliveries_in_model |-> <<Cardinality(Workers), Len(dl) + 1>>])
    /\ FALSE

-----------------------------------------------------------------------------
(* Fault lines and stops: lines no store step wrote, naming no command.    *)

\* A fault line of kind kind, by a node that has not stopped.
FaultLine(kind) == E.op = kind /\ E.node \notin stopped
KeepAll == UNCHANGED <<storeVars, externalVars, clientVars, workerVars, historyVars,
                       cmds, dl, gone, pel, lostRenew, gexp, ghb>>
\* The line is explained: the clock moves to it.
Noted == /\ l' = l + 1 /\ UNCHANGED t /\ clock' = E.now /\ KeepAll /\ Finish

\* An injected window opens or closes (one open twice, or closed unopened: fault_window).
IsWindow ==
    \E kind \in Windows :
        /\ FaultLine(kind) /\ E.outcome \in {"start", "end"}
        /\ Match(t, l + 1, [fault_window |-> <<IF WinOf(E.node, kind) = 0 THEN "closed" ELSE "open",
                                                IF E.outcome = "start" THEN "closed" ELSE "open">>])
        /\ win' = (E.node :> [WinsOf(E.node) EXCEPT ![kind] = IF E.outcome = "start" THEN l + 1 ELSE 0]) @@ win
        /\ shut' = IF E.outcome = "start" THEN shut
                   ELSE shut \cup {[node |-> E.node, line |-> WinOf(E.node, kind),
                                     from |-> Traces[t][WinOf(E.node, kind)].now, to |-> E.now]}
        /\ UNCHANGED <<down, pend, used, stopped>>
        /\ Noted

\* An observed window (measured by the node: its heartbeat woke, or a renewal returned, late
\* since args.since) spans at most one round of its heartbeat: each guard renewed once.
RenewedIn(n, since, until) ==
    {j \in 1..l : /\ Traces[t][j].op = "guard_renew" /\ Traces[t][j].node = n
                  /\ since < Traces[t][j].now /\ Traces[t][j].now <= until}
IsObserved ==
    \E kind \in Windows :
        /\ FaultLine(kind) /\ E.outcome = "observed" /\ E.args.since <= E.now
        /\ LET mine == RenewedIn(E.node, E.args.since + ClockSlack[t], E.now)
           IN Match(t, l + 1, [HeartbeatLagged |->
                  <<Cardinality({Traces[t][j].cmd : j \in mine}) < Cardinality(mine), FALSE>>])
        /\ UNCHANGED faultVars
        /\ Noted

\* A crash, or a close that stops the node's heartbeat (close_waits_for_handlers off): from
\* here on every guard the node holds may lapse (its attempts log nothing more).
IsDown ==
    /\ FaultLine("crash") \/ FaultLine("close")
    /\ down' = IF E.op = "crash" \/ ~CloseWaits THEN (E.node :> l + 1) @@ down ELSE down
    /\ UNCHANGED <<win, shut, pend, used, stopped>>
    /\ Noted

\* An injected failed ack or offer, for the node's next failed ack or resubmit to take.
IsPended ==
    \E kind \in Pended :
        /\ FaultLine(kind)
        /\ pend' = (E.node :> [PendsOf(E.node) EXCEPT ![kind] = @ \cup {l + 1}]) @@ pend
        /\ UNCHANGED <<win, shut, down, used, stopped>>
        /\ Noted

\* An executor rejection or a late hand-off is the queue's business (a delivery that takes no
\* guard, or takes it late); a stop ends the node's lines.
IsRejectOrStop ==
    /\ FaultLine("reject") \/ FaultLine("stall") \/ FaultLine("stop")
    /\ stopped' = IF E.op = "stop" THEN stopped \cup {E.node} ELSE stopped
    /\ UNCHANGED <<win, shut, down, pend, used>>
    /\ Noted

LineStep == IsWindow \/ IsObserved \/ IsDown \/ IsPended \/ IsRejectOrStop

LoggedStep(k, wk) ==
    \/ IsSubmitState(k) \/ IsOffer(k) \/ IsReceiveNew(k) \/ IsReclaim(k) \/ IsGuardTake(k, wk)
    \/ IsGuardRenew(k, wk) \/ IsPutIfOwner(k, wk) \/ IsExternalCall(k, wk) \/ IsGuardRelease(k, wk) \/ IsCancel(k)
    \/ IsAck(k) \/ PastModel(k)

-----------------------------------------------------------------------------
(* Hidden steps.                                                           *)

\* The next line needs the guard of its command free (a take, a cancel) or lost to its own
\* attempt (a lost renewal or release, a refused write), or shows it gone, while the spec's
\* holder still has it: the holder must have stalled (or died) and its guard lapsed.
GuardMustGo(k, wk) ==
    /\ l < Lines /\ k \in Commands
    /\ guard[k] # NoOne
    /\ \/ E.op = "guard_take" /\ E.outcome = "taken"
       \/ E.op = "cancel" /\ E.outcome = "cancelled"
       \/ /\ E.op \in {"guard_renew", "put_if_owner", "guard_release"}
          /\ E.outcome \in {"lost", "refused"}
          /\ guard[k] = wk
       \/ /\ E.op \in {"submit_state", "guard_renew", "put_if_owner", "external_call", "cancel"}
          /\ E.state.guard.owner = Nil

\* When the guard may lapse (tla/README.md, Command layer): its TTL has passed by the next
\* line (within ClockSlack); the holder's node has shown no heartbeat since its last take or
\* renewal, unless the holder's stream entry went to another node (the reference's heartbeat
\* stops renewing the guard of an invocation whose entry renewal was refused, and
\* TraceWorkQueue explains that reclaim); and, unless its entry went elsewhere, a fault line of
\* the holder's node holds the moment it lapsed (Excuse).
\* (On the expiry's own ms either may be seen: Redis keeps the key until its expiry is past,
\* the twin keeps expiry times as float seconds and may drop it then.)
TTLPassed(k) == gexp[k] <= E.now + ClockSlack[t]
NoHeartbeatSince(k) == ghb[k] = -1 \/ gexp[k] <= ghb[k] + ClockSlack[t]
EntryTaken(w) == \E v \in DOMAIN dl : v > w /\ dl[v].entry = dl[w].entry /\ dl[v].node # dl[w].node
\* (Implications, not disjunctions: TLC would take each true disjunct as a branch of its own,
\* to the same successor; see WorkQueue's Heartbeats.)
CanLapse(k, why) ==
    /\ TTLPassed(k)
    /\ ~NoHeartbeatSince(k) => EntryTaken(guard[k])
    /\ ~EntryTaken(guard[k]) => why # 0

\* The holder stalls past its guard's TTL (it goes on, stale, at its next line: Unstall).
HolderStalls(k) ==
    \E why \in {Excuse(HolderNode(k), gexp[k])} :
        /\ CanLapse(k, why)
        /\ Stall(guard[k]) /\ UNCHANGED faults
        /\ used' = IF EntryTaken(guard[k]) THEN used ELSE used \cup {why}
        /\ UNCHANGED <<t, l, cmds, dl, gone, pel, lostRenew, timeVars, win, shut, down, pend, stopped>>

GuardLapses(k) ==
    /\ GuardExpire(k)
    /\ UNCHANGED traceVars

\* Never enabled: a line needs the guard gone that cannot have lapsed, and says why: it has
\* not expired yet (guard_expires: its expiry, and the line's now that needs it gone), the
\* holder's node's heartbeat ran since without renewing it (heartbeat_before_expiry), or no
\* fault line of the holder's node holds the moment it lapsed (fault_line: the node and that
\* moment; a lag, pause, crash or close window of it needed).
NoLapse(k) ==
    /\ wmode[guard[k]] = "running" /\ ~stale[guard[k]]
    /\ Match(t, l + 1,
          [guard_expires |-> IF TTLPassed(k) THEN <<0, 0>>
                             ELSE <<[expires |-> gexp[k]], [gone_at |-> E.now]>>,
           heartbeat_before_expiry |->
              IF NoHeartbeatSince(k) \/ EntryTaken(guard[k]) THEN <<0, 0>>
              ELSE <<[expires |-> gexp[k]], [heartbeat_at |-> ghb[k]]>>,
           fault_line |-> IF EntryTaken(guard[k]) \/ Excuse(HolderNode(k), gexp[k]) # 0 THEN <<0, 0>>
                          ELSE <<[node |-> HolderNode(k), lapsed_at |-> gexp[k]],
                                 [node |-> HolderNode(k), lapsed_in |-> "a heartbeat_lag, pause, crash or close window"]>>])
    /\ FALSE

\* A stalled attempt goes on at its next line (its guard lapsed meanwhile).
Unstall(wk) ==
    /\ l < Lines /\ IsBound(wk)
    /\ \E w \in {wk} :
          /\ wmode[w] = "paused" /\ cmdOf[w] \in Commands /\ guard[cmdOf[w]] # w
          /\ Resume(w)
    /\ UNCHANGED traceVars

\* The client's submit failed after its state write (an offer_fail line): it submits again.
ClientRetries(k) ==
    /\ l < Lines /\ E.op = "submit_state" /\ k \in Commands
    /\ ClientFails(k) /\ UNCHANGED faults
    /\ Take(E.node, "offer_fail")
    /\ UNCHANGED <<t, l, cmds, dl, gone, pel, lostRenew, timeVars, win, shut, down, stopped>>

\* AttemptGuard off: the delivery reads the status before its first logged line, and goes
\* from release to ack unlogged.
GuardlessRead(k) ==
    /\ l < Lines /\ ~AttemptGuard /\ k \in Commands
    /\ Att = Nil => E.op = "ack"
    /\ Att # Nil => Bound(Att) = {}
    /\ LET ready == {w \in Unbound(k) : pc[w] = "take"} IN
          /\ ready # {}
          /\ GuardTake(Least(ready))
    /\ UNCHANGED traceVars

GuardlessRelease(k) ==
    /\ l < Lines /\ ~AttemptGuard /\ k \in Commands /\ E.op = "ack"
    /\ \E w \in DOMAIN dl : dl[w].node = E.node /\ cmdOf[w] = k /\ GuardRelease(w)
    /\ UNCHANGED traceVars

\* AtomicPutIfOwner off: the owner read of the two-step putIfOwner, at any time before its
\* write (so that a stale write between the two shows up as one).
TwoStepCheck ==
    /\ l < Lines /\ ~AtomicPutIfOwner
    /\ \E w \in DOMAIN dl : PutCheck(w)
    /\ UNCHANGED traceVars

\* CommandQueue's CallThrows (the handler_throws feature): an attempt past its external call
\* releases its guard with no write before it. Taken only at that guard_release line, which
\* the code logs for a thrown call alone (its other releases follow a terminal write or a
\* terminal read).
Threw(wk) ==
    /\ l < Lines /\ E.op = "guard_release" /\ IsBound(wk)
    /\ CallThrows(wk) /\ UNCHANGED <<faults, traceVars>>

(* Implementation quirks, in one place (besides AckTakesNothing above, a logged ack,      *)
(* and LostRenewRunsOn below, a logged guard_renew):                                     *)
(*  - LateStatusRead: the reference reads the status in a step of its own after its        *)
(*    guard_take (impl/workqueue/commands.py), not with it: an attempt whose guard lapsed   *)
(*    in between reads what the next holder wrote (SUBMITTING: it goes to its call, which   *)
(*    the owner check refuses; a terminal status: it releases). CommandQueue's GuardTake    *)
(*    reads the status with the take. Only before the attempt's first step after its take  *)
(*    (pc "submit", which nothing but the take leads to; or "call" or "finish", when the    *)
(*    attempt has logged nothing since its guard_take but its heartbeat's renewals), and    *)
(*    only for an attempt that no longer holds the guard: a holder reads what it would     *)
(*    have read at the take.                                                                *)
StepsOf(a) == {j \in 1..l : AttemptOf(j) = a /\ Traces[t][j].op # "guard_renew"}
FreshTake(a) == /\ StepsOf(a) # {}
                /\ \E j \in {CHOOSE j \in StepsOf(a) : \A i \in StepsOf(a) : i <= j} :
                      Traces[t][j].op = "guard_take"
LateStatusRead(wk) ==
    /\ l < Lines /\ AttemptGuard /\ IsBound(wk)
    /\ \E w \in {wk} :
          /\ Running(w) /\ pc[w] \in {"submit", "call", "finish"} /\ guard[cmdOf[w]] # w
          /\ NextPC(status[cmdOf[w]]) # pc[w]
          /\ pc[w] # "submit" => FreshTake(Att)
          /\ pc' = [pc EXCEPT ![w] = NextPC(status[cmdOf[w]])]
    /\ UNCHANGED <<storeVars, externalVars, clientVars, wmode, cmdOf, stale, checked,
                   historyVars, traceVars>>

(*  - LostRenewRunsOn: defined before IsGuardRenew, which uses it.                        *)

ImplQuirk(wk) == LateStatusRead(wk)

\* The next line needs k's guard gone: its holder stalls, the guard lapses, or (never
\* enabled) the line says why neither can be.
GuardGoes(k, wk) == GuardMustGo(k, wk) /\ (HolderStalls(k) \/ GuardLapses(k) \/ NoLapse(k))

Hidden(k, wk) ==
    \/ GuardGoes(k, wk) \/ Unstall(wk) \/ ClientRetries(k)
    \/ GuardlessRead(k) \/ GuardlessRelease(k) \/ TwoStepCheck \/ Threw(wk) \/ ImplQuirk(wk)

-----------------------------------------------------------------------------
TraceInit ==
    /\ t \in 1..Len(Traces) /\ l = 0 /\ cmds = <<>> /\ dl = <<>> /\ gone = {} /\ pel = <<>>
    /\ lostRenew = {}
    /\ clock = 0 /\ gexp = [k \in Commands |-> 0] /\ ghb = [k \in Commands |-> -1]
    /\ win = <<>> /\ shut = {} /\ down = <<>> /\ pend = <<>> /\ used = {} /\ stopped = {}
    /\ Init

\* The next line's command number (K) and worker (WkOf) are bound once per state: TLC
\* evaluates a definition again at each use inside an action, and both walk the deliveries.
TraceNext ==
    /\ l < Lines
    /\ IF E.op \in FaultOps \cup {"stop"} THEN LineStep
       ELSE \E k \in {K} : \E wk \in {WkOf(k)} : LoggedStep(k, wk) \/ Hidden(k, wk)

=============================================================================
