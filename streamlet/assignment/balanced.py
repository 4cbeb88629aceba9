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
   preferring clients that are caught up, under their share of standbys, previous standby holders,
   then most caught up and least loaded; standby counts are then balanced to capacity-proportional
   quotas the same way as actives (immediate moves to caught-up clients, otherwise warmups). Warmups
   count separately from configured standbys (like HATA), and a client never holds a task twice.
   *Why:* a standby is only useful when it is caught up, so it is not dropped before its replacement is.
6. **Deterministic and pure.** Ties are broken by Java UUID order and TaskId; no I/O, no clock (the
   deadline is `now_ms + probing_rebalance_interval_ms`, on the leader's client, or on every client
   when no leader is named). *Why:* every client must agree with the leader, and simulations replay.

Bound on skew (goal 3): let `kept_p` be the stateful actives client p holds after the sticky/orphan
placement (its caught-up previous actives plus tasks that had no caught-up owner and for which p was the
least-loaded caught-up client). Every later move goes to a client strictly below its quota, so in every
round `stateful_actives_p <= max(kept_p, quota_p)`. Without departed or lagging owners `kept_p` is a
subset of p's previous actives, hence the maximum per-thread stateful load never exceeds
max(previous round's maximum, the largest quota per thread) and decreases towards the target.
With `max_warmup_replicas = m` and fully restored warmups between rebalances, a layout with D
stateful-active units to move converges in ceil(D / m) + 1 rebalances (the last one requests no
follow-up); standby rebalancing, when configured, uses the budget left after actives.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from fractions import Fraction

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
    total_capacity = sum(capacities.values())
    quotas = {p: total * capacities[p] // total_capacity for p in capacities}
    extra = total - sum(quotas.values())
    fractional = [p for p in capacities if (total * capacities[p]) % total_capacity]
    fractional.sort(
        key=lambda p: (holdings.get(p, 0) <= quotas[p], Fraction(quotas[p] + 1, capacities[p]), order[p])
    )
    for p in fractional[:extra]:
        quotas[p] += 1
    return quotas


class _Plan:
    """One rebalance's computation; the phases run in the order of the goals."""

    def __init__(self, state: ApplicationState) -> None:
        self.configs = state.assignment_configs
        infos = state.all_tasks
        self.stateful = sorted(t for t, info in infos.items() if info.is_stateful)
        self.stateless = sorted(t for t, info in infos.items() if not info.is_stateful)
        clients = state.kafka_streams_states(True)  # Java UUID order
        self.pids = list(clients)
        if not self.pids and infos:
            raise TaskAssignmentError(f"cannot assign {len(infos)} tasks: there are no clients")
        self.order = {p: i for i, p in enumerate(self.pids)}
        self.cap: dict[uuid.UUID, int] = {}
        for p, client in clients.items():
            if client.num_processing_threads <= 0:
                raise TaskAssignmentError(
                    f"client {p} has capacity {client.num_processing_threads}; it needs at least one thread"
                )
            self.cap[p] = client.num_processing_threads
        self.lag = {p: {t: clients[p].lag_for(t) for t in self.stateful} for p in self.pids}
        self.prev_active = {p: set(clients[p].previous_active_tasks) & set(infos) for p in self.pids}
        self.prev_standby = {p: set(clients[p].previous_standby_tasks) & set(infos) for p in self.pids}
        acceptable = self.configs.acceptable_recovery_lag
        self.caught_up = {
            t: {p for p in self.pids if is_caught_up(self.lag[p][t], acceptable)} for t in self.stateful
        }
        self.budget = self.configs.max_warmup_replicas
        # output
        self.active: dict[uuid.UUID, set[TaskId]] = {p: set() for p in self.pids}  # stateful actives
        self.stateless_active: dict[uuid.UUID, set[TaskId]] = {p: set() for p in self.pids}
        self.standby: dict[uuid.UUID, set[TaskId]] = {p: set() for p in self.pids}  # configured standbys
        self.warmup: dict[uuid.UUID, set[TaskId]] = {p: set() for p in self.pids}

    # ---- helpers -----------------------------------------------------------------------------------------

    def holds(self, p: uuid.UUID, t: TaskId) -> bool:
        return t in self.active[p] or t in self.standby[p] or t in self.warmup[p]

    def load(self, p: uuid.UUID, count: int) -> Fraction:
        return Fraction(count, self.cap[p])

    def most_caught_up(self, t: TaskId) -> list[uuid.UUID]:
        """The caught-up clients, or (KAFKA-13600) those with the smallest lag, -3 first as HATA sorts it."""
        if self.caught_up[t]:
            return [p for p in self.pids if p in self.caught_up[t]]
        best = min(self.lag[p][t] for p in self.pids)
        return [p for p in self.pids if self.lag[p][t] == best]

    # ---- goals 1 and 2: sticky placement, orphans to the least-loaded caught-up client --------------------

    def place_stateful_actives(self) -> None:
        orphans: list[tuple[int, TaskId]] = []
        for t in self.stateful:
            owners = [p for p in self.pids if t in self.prev_active[p]]
            candidates = self.most_caught_up(t)
            keep = None
            if owners:
                best = min(owners, key=lambda p: (p not in self.caught_up[t], self.lag[p][t], self.order[p]))
                if best in candidates:  # caught up, or tied for most caught up when nobody is
                    keep = best
            if keep is not None:
                self.active[keep].add(t)
            else:
                orphans.append((len(candidates), t))
        for _, t in sorted(orphans):  # most constrained first
            p = min(
                self.most_caught_up(t),
                key=lambda p: (
                    self.load(p, len(self.active[p]) + 1),
                    t not in self.prev_standby[p],
                    self.lag[p][t],
                    self.order[p],
                ),
            )
            self.active[p].add(t)

    # ---- goals 3 and 4: over-quota -> under-quota, immediately if caught up, else via warmups --------------

    def balance_stateful_actives(self) -> None:
        held = {p: len(self.active[p]) for p in self.pids}
        quota = fair_quotas(held, self.cap, len(self.stateful), self.order)
        self._move_caught_up(self.active, quota)
        self._warm_up(self.active, quota)

    def _move_caught_up(self, tasks: dict[uuid.UUID, set[TaskId]], quota: dict[uuid.UUID, int]) -> int:
        """Move tasks from over- to under-quota clients that are caught up on them; returns the count."""
        moved = 0
        while True:
            unders = sorted(
                (b for b in self.pids if len(tasks[b]) < quota[b]),
                key=lambda b: (self.load(b, len(tasks[b])), self.order[b]),
            )
            overs = [a for a in self.pids if len(tasks[a]) > quota[a]]
            choice = None
            for b in unders:
                options = [
                    (a, t)
                    for a in overs
                    for t in tasks[a]
                    if b in self.caught_up[t] and not self.holds(b, t)
                ]
                if options:
                    choice = b, min(
                        options,
                        key=lambda at: (
                            -self.load(at[0], len(tasks[at[0]]) - quota[at[0]]),
                            at[1] in self.prev_active[at[0]],  # tasks the source did not own before go first
                            at[1] not in self.prev_standby[b],
                            self.lag[b][at[1]],
                            at[1],
                            self.order[at[0]],
                        ),
                    )
                    break
            if choice is None:
                return moved
            b, (a, t) = choice
            tasks[a].remove(t)
            tasks[b].add(t)
            moved += 1

    def _warm_up(self, tasks: dict[uuid.UUID, set[TaskId]], quota: dict[uuid.UUID, int]) -> None:
        """Warmups on under-quota clients for tasks of the most over-quota clients, while the budget lasts."""
        incoming = dict.fromkeys(self.pids, 0)
        outgoing = dict.fromkeys(self.pids, 0)
        warming = {t for p in self.pids for t in self.warmup[p]}
        exhausted: set[uuid.UUID] = set()
        while self.budget > 0:
            unders = [b for b in self.pids if b not in exhausted and len(tasks[b]) + incoming[b] < quota[b]]
            if not unders:
                return
            b = min(unders, key=lambda b: (self.load(b, len(tasks[b]) + incoming[b]), self.order[b]))
            options = [
                (a, t)
                for a in self.pids
                if len(tasks[a]) - outgoing[a] > quota[a]
                for t in tasks[a]
                if t not in warming and not self.holds(b, t)
            ]
            if not options:
                exhausted.add(b)
                continue
            a, t = min(
                options,
                key=lambda at: (
                    at[1] not in self.prev_standby[b],  # keep restoring what b already has (a running warmup)
                    -self.load(at[0], len(tasks[at[0]]) - outgoing[at[0]] - quota[at[0]]),
                    self.lag[b][at[1]],
                    at[1] in self.prev_active[at[0]],
                    at[1],
                    self.order[at[0]],
                ),
            )
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
        slots = sum(min(replicas, sum(not self.holds(p, t) for p in self.pids)) for t in self.stateful)
        total_capacity = sum(self.cap.values())
        soft_cap = {p: -(-slots * self.cap[p] // total_capacity) for p in self.pids}
        for t in self.stateful:
            for _ in range(replicas):
                candidates = [p for p in self.pids if not self.holds(p, t)]
                if not candidates:
                    break
                p = min(
                    candidates,
                    key=lambda p: (
                        p not in self.caught_up[t],
                        len(self.standby[p]) >= soft_cap[p],
                        t not in self.prev_standby[p],
                        self.lag[p][t],
                        self.load(p, len(self.active[p]) + len(self.standby[p]) + len(self.warmup[p])),
                        self.order[p],
                    ),
                )
                self.standby[p].add(t)
        held = {p: len(self.standby[p]) for p in self.pids}
        quota = fair_quotas(held, self.cap, sum(held.values()), self.order)
        self._move_caught_up(self.standby, quota)
        self._warm_up(self.standby, quota)

    # ---- goal 3: stateless tasks balance the total active load ------------------------------------------

    def place_stateless(self) -> None:
        counts = dict.fromkeys(self.pids, 0)
        previous = {p: sorted(self.prev_active[p] & set(self.stateless)) for p in self.pids}
        for _ in self.stateless:
            p = min(
                self.pids,
                key=lambda p: (
                    self.load(p, len(self.active[p]) + counts[p] + 1),
                    counts[p] >= len(previous[p]),  # on ties, a client keeping one of its own tasks
                    self.order[p],
                ),
            )
            counts[p] += 1
        unplaced = set(self.stateless)
        for p in self.pids:
            for t in previous[p]:
                if len(self.stateless_active[p]) < counts[p] and t in unplaced:
                    self.stateless_active[p].add(t)
                    unplaced.discard(t)
        remaining = sorted(unplaced)
        for p in self.pids:
            while len(self.stateless_active[p]) < counts[p]:
                self.stateless_active[p].add(remaining.pop(0))

    def run(self) -> bool:
        self.place_stateful_actives()
        self.balance_stateful_actives()
        self.place_standbys()
        self.place_stateless()
        return any(self.warmup.values())


class BalancedTaskAssignor:
    """Sticky, capacity-balanced assignor with HATA's availability guarantee (see the module docstring)."""

    def assign(self, application_state: ApplicationState) -> TaskAssignment:
        plan = _Plan(application_state)
        followup = plan.run()
        configs = application_state.assignment_configs
        deadline = application_state.now_ms + configs.probing_rebalance_interval_ms if followup else None
        leader = application_state.leader_process_id
        result = []
        for p in plan.pids:
            tasks = [AssignedTask(t, TaskType.ACTIVE) for t in sorted(plan.active[p] | plan.stateless_active[p])]
            tasks += [AssignedTask(t, TaskType.STANDBY) for t in sorted(plan.standby[p] | plan.warmup[p])]
            gets_deadline = leader is None or leader not in plan.cap or leader == p
            result.append(KafkaStreamsAssignment(p, tasks, deadline if gets_deadline else None))
        return TaskAssignment(result)
