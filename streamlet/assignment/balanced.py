"""BalancedTaskAssignor ("balanced"): sticky, capacity-balanced, warmup-driven task assignment.

A KIP-924 `TaskAssignor` that keeps HighAvailabilityTaskAssignor's availability guarantee but fixes the
behaviour seed 000 and research note §6.10 describe: HATA re-deals stateful actives round-robin by UUID
on every rebalance, ignoring who owns what, so a join reshuffles existing clients, replacing the client
whose UUID sorts first moves every task, and the warmup/probing transition can be *more* skewed than
either end (one client held 4 of 6 stateful tasks; 3→4 clients took 7 rebalances with 5-vs-1 actives).

Goals, in priority order (a lower goal never overrides a higher one):

1. **Availability like HATA.** A stateful active goes to a caught-up client whenever one exists (lag -2,
   or 0 <= lag <= acceptable.recovery.lag), else to the most caught-up one (KAFKA-13600). *Why:* a task
   placed on a client without its state stops processing until the changelog is restored; no amount of
   balance is worth that while a caught-up copy exists.
2. **Sticky.** A caught-up previous owner keeps its active task unless it is above its fair quota; tasks
   without a usable owner (departed client, lagging owner) go to the least-loaded caught-up client
   (typically the standby, or a fresh client when changelogs are small enough to count as caught up).
   *Why:* every move costs a revocation and usually a restore; HATA's UUID-order re-deal moves tasks
   between clients that were already balanced.
3. **Balanced, and never more skewed during a transition.** Quotas are proportional to capacity
   (threads): each client's stateful-active quota is floor or ceil of `N * threads / total_threads`,
   the ceil slots going first to clients that already hold that many. Tasks only move from over-quota
   to under-quota clients, so a client's stateful-active count never grows past
   max(what it kept, its quota). Stateless tasks then fill the clients so as to minimise the maximum
   total active load per thread (sticky to previous owners on ties). *Why:* the skew seed 000 shows
   comes from moving tasks onto clients that are not short of work.
4. **Warmups toward the target.** An under-quota client gets warmup standbys for tasks of the most
   over-quota clients, at most `max_warmup_replicas` per rebalance (shared with standby rebalancing,
   actives first), and a follow-up (probing) rebalance is requested while any warmup is pending; in the
   rebalance where a warmup is caught up, its task moves. *Why:* moving only caught-up state keeps goal
   1, and asking for a follow-up only while warmups exist makes the result stable (same input, same
   output, no follow-up) once balanced.
5. **Standbys.** `num_standby_replicas` per stateful task on distinct clients other than the active,
   preferring caught-up clients, then previous standby holders, then the smallest lag, then clients
   holding the fewest standbys of the same active client (so a failed client's tasks fail over to
   several clients), then the least loaded; standby counts are then balanced to capacity-proportional
   quotas the same way as actives (immediate moves to caught-up clients, otherwise warmups). Warmups
   count separately from configured standbys (like HATA), and a client never holds a task twice.
   *Why:* a standby is only useful when it is caught up, so it is not dropped before its replacement is.
6. **Deterministic and pure.** Ties are broken by Java UUID order and TaskId; no I/O, no clock (the
   deadline is `now_ms + probing_rebalance_interval_ms`, on the leader's client, or on every client
   when no leader is named). *Why:* every client must agree with the leader, and simulations replay.

Bound on skew (goal 3), per client p: let `kept_p` be the stateful actives p holds after the sticky and
orphan placement (its caught-up previous actives, plus tasks without a usable owner for which p was the
least-loaded caught-up client). Later moves only go to clients strictly below their quota, so in every
rebalance `stateful_actives_p <= max(kept_p, quota_p) <= max(kept_p, ceil(N * threads_p / threads))`.
Without orphans, `kept_p` is a subset of p's previous actives: no client ever ends above
max(what it had, its ceil share), and each keeps at least min(what it had, its floor share). Orphans can
exceed this only when the least-loaded caught-up client is already at the bound (availability first),
e.g. a departed client's task whose only caught-up copy is one survivor's standby.

Convergence (goal 4), in the round model where a warmup is restored by the next rebalance: actives take
the warmup budget m = `max_warmup_replicas` first, so the stateful actives reach their final layout after
ceil(D_a / m) + 1 rebalances when D_a of them must move to clients without their state, and the whole
assignment (D_s standbys too) after about ceil((D_a + D_s) / m) + 1. This is property-tested (bound
ceil(stateful * (1 + standbys) / m) + 1, then a fixed point), not proved: a warmup can be pre-empted
when another under-quota client takes its source's last surplus task first.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from fractions import Fraction
from itertools import groupby

from streamlet.assignment.api import (
    ApplicationState,
    AssignedTask,
    KafkaStreamsAssignment,
    TaskAssignment,
    TaskType,
)
from streamlet.assignment.high_availability import is_caught_up
from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId


def fair_quotas(
    holdings: Mapping[uuid.UUID, int], capacities: Mapping[uuid.UUID, int], total: int, order: Mapping[uuid.UUID, int]
) -> dict[uuid.UUID, int]:
    """Capacity-proportional integer quotas summing to `total`: floor or ceil of `total * cap / sum(cap)`.

    The ceil slots go first to clients already holding more than their floor (no move needed), then to
    the clients whose per-thread load grows least, then by Java UUID order (`order`).
    """
    keys = sorted(capacities, key=lambda p: order[p])
    quotas = _quotas([holdings.get(p, 0) for p in keys], [capacities[p] for p in keys], total)
    return dict(zip(keys, quotas, strict=True))


def _quotas(held: Sequence[int], caps: Sequence[int], total: int) -> list[int]:
    """`fair_quotas` on clients 0..n-1 (index = Java UUID order)."""
    total_capacity = sum(caps)
    quotas = [total * c // total_capacity for c in caps]
    extra = total - sum(quotas)
    fractional = [p for p, c in enumerate(caps) if (total * c) % total_capacity]
    fractional.sort(key=lambda p: (held[p] <= quotas[p], Fraction(quotas[p] + 1, caps[p]), p))
    for p in fractional[:extra]:
        quotas[p] += 1
    return quotas


class _Plan:
    """One rebalance's computation; the phases run in the order of the goals.

    Clients are the integers 0..P-1 in Java UUID order and tasks 0..T-1 in TaskId order, so ties broken
    "by Java UUID order / by TaskId" are ties broken by the integer (and hashing stays cheap).
    """

    def __init__(self, state: ApplicationState) -> None:
        self.configs = state.assignment_configs
        infos = state.all_tasks
        self.task_ids: list[TaskId] = sorted(infos)
        index = {t: i for i, t in enumerate(self.task_ids)}
        self.stateful = [index[t] for t in self.task_ids if infos[t].is_stateful]
        self.stateless = [index[t] for t in self.task_ids if not infos[t].is_stateful]
        states = state.kafka_streams_states(True)  # Java UUID order
        self.pids = list(states)
        if not self.pids and infos:
            raise TaskAssignmentError(f"cannot assign {len(infos)} tasks: there are no clients")
        clients = [states[pid] for pid in self.pids]
        self.clients = range(len(clients))
        for pid, client in zip(self.pids, clients, strict=True):
            if client.num_processing_threads <= 0:
                raise TaskAssignmentError(
                    f"client {pid} has capacity {client.num_processing_threads}; it needs at least one thread"
                )
        self.cap = [c.num_processing_threads for c in clients]
        self.lag: list[dict[int, int]] = []
        for pid, client in zip(self.pids, clients, strict=True):
            sums = client.stateful_tasks_to_lag_sums()
            missing = [self.task_ids[t] for t in self.stateful if self.task_ids[t] not in sums]
            if missing:
                raise TaskAssignmentError(f"client {pid} has no lag for stateful tasks {missing}")
            self.lag.append({t: sums[self.task_ids[t]] for t in self.stateful})
        self.prev_active = [{index[t] for t in c.previous_active_tasks if t in index} for c in clients]
        self.prev_standby = [{index[t] for t in c.previous_standby_tasks if t in index} for c in clients]
        acceptable = self.configs.acceptable_recovery_lag
        self.caught_up = {
            t: {p for p in self.clients if is_caught_up(self.lag[p][t], acceptable)} for t in self.stateful
        }
        self.budget = self.configs.max_warmup_replicas
        # output
        self.active: list[set[int]] = [set() for _ in self.clients]  # stateful actives
        self.stateless_active: list[set[int]] = [set() for _ in self.clients]
        self.standby: list[set[int]] = [set() for _ in self.clients]  # configured standbys
        self.warmup: list[set[int]] = [set() for _ in self.clients]

    # ---- helpers -----------------------------------------------------------------------------------------

    def holds(self, p: int, t: int) -> bool:
        return t in self.active[p] or t in self.standby[p] or t in self.warmup[p]

    def load(self, p: int, count: int) -> Fraction:
        return Fraction(count, self.cap[p])

    def most_caught_up(self, t: int) -> list[int]:
        """The caught-up clients, or (KAFKA-13600) those with the smallest lag, -3 first as HATA sorts it."""
        if self.caught_up[t]:
            return sorted(self.caught_up[t])
        best = min(self.lag[p][t] for p in self.clients)
        return [p for p in self.clients if self.lag[p][t] == best]

    # ---- goals 1 and 2: sticky placement, orphans to the least-loaded caught-up client --------------------

    def place_stateful_actives(self) -> None:
        orphans: list[tuple[int, int]] = []
        for t in self.stateful:
            owners = [p for p in self.clients if t in self.prev_active[p]]
            candidates = self.most_caught_up(t)
            keep = None
            if owners:
                best = min(owners, key=lambda p: (p not in self.caught_up[t], self.lag[p][t], p))
                if best in candidates:  # caught up, or tied for most caught up when nobody is
                    keep = best
            if keep is not None:
                self.active[keep].add(t)
            else:
                orphans.append((len(candidates), t))
        for _, t in sorted(orphans):  # most constrained first
            p = min(
                self.most_caught_up(t),
                key=lambda p: (self.load(p, len(self.active[p]) + 1), t not in self.prev_standby[p], self.lag[p][t], p),
            )
            self.active[p].add(t)

    # ---- goals 3 and 4: over-quota -> under-quota, immediately if caught up, else via warmups --------------

    def balance(self, tasks: list[set[int]], previous: list[set[int]]) -> None:
        """Quotas from the current holdings, caught-up moves, repeated until no move is possible; then warmups.

        Repeating makes the result a fixed point: run again on its own output (every copy restored), the
        sticky placement reproduces the holdings, hence the same quotas and no move (goal 4's stability).
        Each move lowers sum((held - share)^2), so the loop ends.
        """
        total = sum(len(x) for x in tasks)
        while True:
            quota = _quotas([len(x) for x in tasks], self.cap, total)
            if not self._move_caught_up(tasks, quota, previous):
                break
        self._warm_up(tasks, quota, previous)

    def _move_caught_up(self, tasks: list[set[int]], quota: list[int], previous: list[set[int]]) -> int:
        """Move tasks from over- to under-quota clients that are caught up on them; returns the count.

        `previous[p]` is what p had in this role before: tasks it did not have (orphans it just received) move
        first, so that a departed client's tasks, rather than the survivors' own, continue to the newcomer.
        """
        moved = 0
        while True:
            excess = sorted(
                (-self.load(a, len(tasks[a]) - quota[a]), a) for a in self.clients if len(tasks[a]) > quota[a]
            )
            groups = [[a for _, a in group] for _, group in groupby(excess, key=lambda e: e[0])]  # most over first
            unders = sorted(
                (b for b in self.clients if len(tasks[b]) < quota[b]), key=lambda b: (self.load(b, len(tasks[b])), b)
            )
            move = next((m for b in unders if (m := self._caught_up_move(b, groups, tasks, previous))), None)
            if move is None:
                return moved
            a, b, t = move
            tasks[a].remove(t)
            tasks[b].add(t)
            moved += 1

    def _caught_up_move(
        self, b: int, groups: list[list[int]], tasks: list[set[int]], previous: list[set[int]]
    ) -> tuple[int, int, int] | None:
        """The best (source, b, task) with b caught up on the task, from the most over-quota sources, or None."""
        for sources in groups:
            options = [
                (
                    t in previous[a],  # what the source did not have before (orphans it just received) first
                    # then tasks with a surplus caught-up copy: that copy is the warmup placed for this move
                    # (a task that stays where it is has only its active and standby copies)
                    -len(self.caught_up[t]),
                    t not in self.prev_standby[b],
                    self.lag[b][t],
                    t,
                    a,
                )
                for a in sources
                for t in tasks[a]
                if b in self.caught_up[t] and not self.holds(b, t)
            ]
            if options:
                best = min(options)
                return best[-1], b, best[-2]
        return None

    def _warm_up(self, tasks: list[set[int]], quota: list[int], previous: list[set[int]]) -> None:
        """Warmups on under-quota clients for tasks of the most over-quota clients, while the budget lasts."""
        incoming = [0 for _ in self.clients]
        outgoing = [0 for _ in self.clients]
        warming = {t for p in self.clients for t in self.warmup[p]}
        exhausted: set[int] = set()
        while self.budget > 0:
            unders = [b for b in self.clients if b not in exhausted and len(tasks[b]) + incoming[b] < quota[b]]
            if not unders:
                return
            b = min(unders, key=lambda b: (self.load(b, len(tasks[b]) + incoming[b]), b))
            excess = {a: self.load(a, len(tasks[a]) - outgoing[a] - quota[a]) for a in self.clients}
            options = [
                (
                    t not in self.prev_standby[b],  # keep restoring what b already has (a running warmup)
                    -excess[a],  # then the most over-quota source
                    self.lag[b][t],  # then the least to restore
                    t in previous[a],
                    t,
                    a,
                )
                for a in self.clients
                if excess[a] > 0
                for t in tasks[a]
                if t not in warming and not self.holds(b, t)
            ]
            if not options:
                exhausted.add(b)
                continue
            best = min(options)
            a, t = best[-1], best[-2]
            self.warmup[b].add(t)
            warming.add(t)
            outgoing[a] += 1
            incoming[b] += 1
            self.budget -= 1

    # ---- goal 5: standbys --------------------------------------------------------------------------------

    def place_standbys(self) -> None:
        replicas = self.configs.num_standby_replicas
        if replicas <= 0 or not self.stateful:
            return
        owner = {t: p for p in self.clients for t in self.active[p]}
        # pairs[p][o]: standbys on p whose active is on o; spreading them means that when o fails, its
        # tasks fail over to several clients instead of doubling one client's load
        pairs = [[0 for _ in self.clients] for _ in self.clients]
        for t in self.stateful:
            for _ in range(replicas):
                candidates = [
                    (
                        p not in self.caught_up[t],
                        t not in self.prev_standby[p],
                        self.lag[p][t],
                        pairs[p][owner[t]],
                        self.load(p, len(self.active[p]) + len(self.standby[p]) + len(self.warmup[p])),
                        p,
                    )
                    for p in self.clients
                    if not self.holds(p, t)
                ]
                if not candidates:
                    break
                p = min(candidates)[-1]
                self.standby[p].add(t)
                pairs[p][owner[t]] += 1
        self.balance(self.standby, self.prev_standby)

    # ---- goal 3: stateless tasks balance the total active load ------------------------------------------

    def place_stateless(self) -> None:
        counts = [0 for _ in self.clients]
        stateless = set(self.stateless)
        previous = [sorted(self.prev_active[p] & stateless) for p in self.clients]
        for _ in self.stateless:
            p = min(
                self.clients,
                key=lambda p: (
                    self.load(p, len(self.active[p]) + counts[p] + 1),
                    counts[p] >= len(previous[p]),  # on ties, a client keeping one of its own tasks
                    p,
                ),
            )
            counts[p] += 1
        unplaced = set(self.stateless)
        for p in self.clients:
            for t in previous[p]:
                if len(self.stateless_active[p]) < counts[p] and t in unplaced:
                    self.stateless_active[p].add(t)
                    unplaced.discard(t)
        remaining = sorted(unplaced)
        for p in self.clients:
            while len(self.stateless_active[p]) < counts[p]:
                self.stateless_active[p].add(remaining.pop(0))

    def run(self) -> bool:
        self.place_stateful_actives()
        self.balance(self.active, self.prev_active)
        self.place_standbys()
        self.place_stateless()
        return any(self.warmup)


class BalancedTaskAssignor:
    """Sticky, capacity-balanced assignor with HATA's availability guarantee (see the module docstring)."""

    def assign(self, application_state: ApplicationState) -> TaskAssignment:
        plan = _Plan(application_state)
        followup = plan.run()
        configs = application_state.assignment_configs
        deadline = application_state.now_ms + configs.probing_rebalance_interval_ms if followup else None
        leader = application_state.leader_process_id
        ids = plan.task_ids
        result = []
        for p, pid in enumerate(plan.pids):
            tasks = [AssignedTask(ids[t], TaskType.ACTIVE) for t in sorted(plan.active[p] | plan.stateless_active[p])]
            tasks += [AssignedTask(ids[t], TaskType.STANDBY) for t in sorted(plan.standby[p] | plan.warmup[p])]
            gets_deadline = leader is None or leader not in plan.pids or leader == pid
            result.append(KafkaStreamsAssignment(pid, tasks, deadline if gets_deadline else None))
        return TaskAssignment(result)
