"""Simulate each support ticket's life: routing, first response, work, waiting, reopen, survey, refund.

The simulation plants the cases the demo rules are about, at rates that make every rule move
its metrics visibly: first responses held until Monday for weekend tickets of basic plans
without 24-hour support, waiting-on-customer intervals (paused clock), neutral 3-star surveys,
dormant tickets and runaway handle timers (outliers), spam and internal QA traffic, late
reopens and late surveys, goodwill credits, transfers counted as escalations, new agents
ramping up. Tickets are produced day by day in creation order, so ids follow time and a
batch can be written before the next is built (bounded memory at any size).
"""
from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from dibench.domains.demo.world import (
    BILLING_TEAM, DAY, END, ENTERPRISE_TEAM, FRONTLINE_BY_REGION, HOUR, HOUR_WEIGHTS, NORDIC, NORDIC_TEAM, OUTAGE_DAYS,
    TECHNICAL_TEAM, Agent, Customer, month_index, ts, weekday,
)

CHANNELS = ("email", "web", "chat", "phone")
CHANNEL_CUM = tuple(itertools.accumulate((0.38, 0.24, 0.22, 0.16)))
PRIORITIES = ("low", "medium", "high", "urgent")
PRIORITY_CUM = {"enterprise": tuple(itertools.accumulate((0.20, 0.38, 0.27, 0.15))),
                "other": tuple(itertools.accumulate((0.32, 0.42, 0.18, 0.08)))}
CATEGORIES = ("billing", "technical", "account", "outage", "general")
CATEGORY_CUM = tuple(itertools.accumulate((0.26, 0.32, 0.20, 0.07, 0.15)))
HOUR_CUM = tuple(itertools.accumulate(HOUR_WEIGHTS))

FRT_MEDIAN_H = {"phone": 0.03, "chat": 0.1, "web": 2.5, "email": 4.0}
FRT_PRIORITY = {"low": 1.3, "medium": 1.0, "high": 0.6, "urgent": 0.35}
FRT_PLAN = {"basic": 1.0, "premium": 0.85, "enterprise": 0.6}
FRT_REGION = {"Europe": 1.0, "North America": 0.95, "Latin America": 1.1, "Asia Pacific": 1.2,
              "Middle East & Africa": 1.05}
WORK_MEDIAN_H = {"billing": 5.0, "technical": 12.0, "account": 3.0, "outage": 8.0, "general": 2.0}
WORK_PRIORITY = {"low": 1.3, "medium": 1.0, "high": 0.8, "urgent": 0.5}
ESCALATION_P = {"low": 0.05, "medium": 0.09, "high": 0.17, "urgent": 0.28}
ESCALATION_TYPES = ("transfer", "engineering", "management")
ESCALATION_CUM = tuple(itertools.accumulate((0.48, 0.38, 0.14)))
SURVEY_P = {"basic": 0.28, "premium": 0.34, "enterprise": 0.45}
CSAT_PLAN = {"basic": -0.1, "premium": 0.15, "enterprise": 0.55}
ACTIVITY_PLAN = {"basic": 1.0, "premium": 1.7, "enterprise": 3.2}
REFUND_P = {"billing": 0.30, "outage": 0.22, "technical": 0.04, "account": 0.04, "general": 0.01}
REFUND_KINDS = ("refund", "service_credit", "goodwill")
REFUND_CUM = tuple(itertools.accumulate((0.45, 0.35, 0.20)))
REFUND_MEDIAN = {"basic": 25.0, "premium": 90.0, "enterprise": 420.0}
AUTO_CLOSE = 28 * DAY  # a resolved ticket closes itself 28 days after its last resolution

# Support hours per coverage class: (open hour, close hour, weekdays only); None = around the clock.
Coverage = tuple[int, int, bool] | None
COVERAGE: dict[str, Coverage] = {"basic": (8, 18, True), "premium": (7, 20, False), "enterprise": None}


def coverage_of(c: Customer) -> Coverage:
    return None if c.has_24h_support else COVERAGE[c.plan]


def next_open(sec: int, cov: Coverage) -> int:
    """First second >= sec inside the coverage window (sec itself for 24-hour coverage)."""
    if cov is None:
        return sec
    open_h, close_h, weekdays_only = cov
    day = sec // DAY
    for d in range(day, day + 8):
        if weekdays_only and weekday(d * DAY) >= 5:
            continue
        if sec < d * DAY + close_h * HOUR:
            return max(sec, d * DAY + open_h * HOUR)
    raise AssertionError("coverage window never opens")  # every class opens within a week


def month_factor(sec: int) -> float:
    """Staffing: response times improve over the two years, and worsen in the holiday and summer peaks."""
    m = month_index(sec)
    month = m % 12 + 1
    return 1.15 - 0.30 * m / 23 + (0.25 if month in (11, 12) else 0.15 if month == 8 else 0.0)


def _pick(rng: random.Random, values: tuple[str, ...], cum: tuple[float, ...]) -> str:
    return values[bisect.bisect_right(cum, rng.random() * cum[-1], 0, len(cum) - 1)]


@dataclass
class Batch:
    """Rows of every ticket-level table for a run of consecutive days."""

    tickets: list[tuple[object, ...]] = field(default_factory=list)
    history: list[tuple[object, ...]] = field(default_factory=list)
    surveys: list[tuple[object, ...]] = field(default_factory=list)
    refunds: list[tuple[object, ...]] = field(default_factory=list)


@dataclass
class _Ticket:
    """What the later steps of one ticket's simulation need to know."""

    created: int
    customer: Customer
    channel: str
    priority: str
    category: str
    escalation: str | None
    spam: bool
    internal: bool


class Simulator:
    def __init__(self, rng: random.Random, customers: list[Customer], agents: list[Agent]) -> None:
        self.rng = rng
        self.external = [c for c in customers if not c.is_internal]
        self.internal = [c for c in customers if c.is_internal]
        self.cum = list(itertools.accumulate(rng.lognormvariate(0.0, 0.9) * ACTIVITY_PLAN[c.plan]
                                             for c in self.external))
        self.team_agents: dict[int, list[Agent]] = {}
        for a in sorted(agents, key=lambda a: (a.team_id, a.hire_day, a.agent_id)):
            self.team_agents.setdefault(a.team_id, []).append(a)
        self.team_hire_days = {t: [a.hire_day for a in lst] for t, lst in self.team_agents.items()}
        self.next_ticket = 1
        self.next_history = 1
        self.next_survey = 1
        self.next_refund = 1

    def batches(self, counts: list[int], batch_tickets: int = 25_000) -> Iterator[Batch]:
        """Batches of whole days, each with at least `batch_tickets` tickets (the last may have fewer)."""
        batch = Batch()
        for day, n in enumerate(counts):
            self._day(batch, day, n)
            if len(batch.tickets) >= batch_tickets:
                yield batch
                batch = Batch()
        if batch.tickets:
            yield batch

    def _day(self, batch: Batch, day: int, n: int) -> None:
        rng = self.rng
        hours = rng.choices(range(24), cum_weights=HOUR_CUM, k=n)
        secs = sorted(day * DAY + h * HOUR + rng.randrange(HOUR) for h in hours)
        outage = day in OUTAGE_DAYS
        for created in secs:
            self._simulate(batch, self._open(created, outage))

    def _customer(self) -> tuple[Customer, bool, bool]:
        r = self.rng.random()
        if r < 0.015:  # internal QA automation files test tickets
            return self.internal[self.rng.randrange(len(self.internal))], False, True
        if r < 0.04:  # spam lands on a random customer's address
            return self.external[self.rng.randrange(len(self.external))], True, False
        i = bisect.bisect_right(self.cum, self.rng.random() * self.cum[-1], 0, len(self.cum) - 1)
        return self.external[i], False, False

    def _open(self, created: int, outage: bool) -> _Ticket:
        rng = self.rng
        cust, spam, internal = self._customer()
        channel = _pick(rng, CHANNELS, CHANNEL_CUM)
        if spam or internal:
            channel = "email" if rng.random() < 0.6 else "web"
        elif channel in ("phone", "chat") and next_open(created, coverage_of(cust)) != created:
            channel = "email" if channel == "phone" else "web"  # phone and chat are closed outside support hours
        if spam:
            return _Ticket(created, cust, channel, "low", "general", None, True, False)
        priority = _pick(rng, PRIORITIES, PRIORITY_CUM["enterprise" if cust.plan == "enterprise" else "other"])
        category = _pick(rng, CATEGORIES, CATEGORY_CUM)
        if outage and rng.random() < 0.6:
            category = "outage"
            if priority in ("low", "medium") and rng.random() < 0.5:
                priority = "urgent"
        escalation = None
        p_esc = ESCALATION_P[priority] * (1.3 if category in ("technical", "outage") else 1.0)
        if not internal and rng.random() < p_esc:
            escalation = _pick(rng, ESCALATION_TYPES, ESCALATION_CUM)
        return _Ticket(created, cust, channel, priority, category, escalation, False, internal)

    def _agent(self, tk: _Ticket) -> Agent:
        rng = self.rng
        c = tk.customer
        team = FRONTLINE_BY_REGION[c.region]
        if c.plan == "enterprise" and rng.random() < 0.75:
            team = ENTERPRISE_TEAM
        elif tk.category == "billing" and rng.random() < 0.7:
            team = BILLING_TEAM
        elif tk.category in ("technical", "outage") and tk.priority in ("high", "urgent") and rng.random() < 0.5:
            team = TECHNICAL_TEAM
        elif c.country_code in NORDIC and rng.random() < 0.6:
            team = NORDIC_TEAM
        day = tk.created // DAY
        agents = self.team_agents[team]
        available = bisect.bisect_right(self.team_hire_days[team], day)
        agent = agents[rng.randrange(available)]
        if day < agent.hire_day + 30 and rng.random() < 0.5:
            agent = agents[rng.randrange(available)]  # new agents get about half the usual load
        return agent

    def _first_response(self, tk: _Ticket) -> int:
        rng = self.rng
        if tk.spam:  # the triage bot closes spam around the clock
            return tk.created + int(rng.uniform(0.02, 0.3) * HOUR)
        c = tk.customer
        median = (FRT_MEDIAN_H[tk.channel] * FRT_PRIORITY[tk.priority] * FRT_PLAN[c.plan]
                  * FRT_REGION[c.region] * month_factor(tk.created))
        lag = rng.lognormvariate(math.log(median), 0.9) * (0.3 if tk.internal else 1.0)
        return next_open(tk.created, coverage_of(tk.customer)) + max(30, int(lag * HOUR))

    def _simulate(self, batch: Batch, tk: _Ticket) -> None:
        rng = self.rng
        ticket_id = self.next_ticket
        self.next_ticket += 1
        agent = self._agent(tk)
        fr = self._first_response(tk)
        segments: list[tuple[str, int, int | None]] = [("new", tk.created, fr)]
        n_wait, stuck = 0, False
        if tk.spam:
            res: int | None = fr + int(rng.uniform(0.01, 0.2) * HOUR)
            segments.append(("open", fr, res))
        else:
            n_wait, stuck, res = self._work(tk, fr, segments)
        reopened, final = None, res
        if res is not None and not tk.spam and not tk.internal:
            p_reopen = 0.075 + (0.05 if tk.escalation else 0.0) + (0.03 if tk.category == "technical" else 0.0)
            if rng.random() < p_reopen:
                reopened, final = self._reopen(res, segments)
        closed = None
        if final is not None:
            closed = final if tk.spam else final + AUTO_CLOSE
            if not tk.spam:
                segments.append(("resolved", final, closed))
            segments.append(("closed", closed, None))
        replies = 1
        if not (tk.spam or tk.internal):
            # Replies up to the first resolution: a later reopen does not change them.
            replies += n_wait + (1 if tk.escalation else 0)
            p_more = 0.35 if tk.channel in ("chat", "phone") else 0.55
            while replies < 12 and rng.random() < p_more:
                replies += 1
        handle = self._handle_minutes(tk, replies)

        kept = _until_now(segments)
        for status, start, end in kept:
            batch.history.append((self.next_history, ticket_id, status, ts(start), ts(end)))
            self.next_history += 1
        batch.tickets.append((
            ticket_id, tk.customer.customer_id, agent.agent_id, tk.channel, tk.priority, tk.category,
            ts(tk.created), ts(_past(fr)), ts(_past(res)), ts(_past(reopened)), ts(_past(closed)), kept[-1][0],
            tk.escalation, replies, handle, tk.spam,
        ))
        if res is not None and res < END and not tk.spam:
            self._survey(batch, ticket_id, tk, fr, res, reopened is not None)
        if not (tk.spam or tk.internal):
            self._refunds(batch, ticket_id, tk, fr, res)

    def _work(self, tk: _Ticket, fr: int, segments: list[tuple[str, int, int | None]]) -> tuple[int, bool, int | None]:
        """Open work split by waiting-on-customer intervals; returns (waits, stuck, first resolution)."""
        rng = self.rng
        factor = {"transfer": 1.4, "engineering": 2.5, "management": 1.8}.get(tk.escalation or "", 1.0)
        median = WORK_MEDIAN_H[tk.category] * WORK_PRIORITY[tk.priority] * factor
        work = rng.lognormvariate(math.log(median), 1.0) * (0.3 if tk.internal else 1.0)
        u = rng.random()
        n_wait = 0 if tk.internal or u < (0.5 if tk.category == "technical" else 0.62) else (
            1 if u < 0.86 else 2 if u < 0.95 else 3)
        dormant = not tk.internal and rng.random() < 0.012  # forgotten in the queue for months
        stuck = not tk.internal and rng.random() < 0.004  # never resolved: permanent backlog
        cuts = sorted(rng.random() for _ in range(n_wait))
        parts = [b - a for a, b in zip([0.0, *cuts], [*cuts, 1.0])]
        t = fr
        for i, part in enumerate(parts):
            dur = max(60, int(part * work * HOUR))
            if i == 0 and dormant:
                dur += int(rng.uniform(65, 240) * DAY)
            segments.append(("open", t, t + dur))
            t += dur
            if i < n_wait:
                wait = int(rng.lognormvariate(math.log(18.0), 1.1) * HOUR)
                segments.append(("waiting_on_customer", t, t + wait))
                t += wait
        if stuck:
            status, start, _ = segments[-1]
            segments[-1] = (status, start, None)
            return n_wait, True, None
        return n_wait, False, t

    def _reopen(self, res: int, segments: list[tuple[str, int, int | None]]) -> tuple[int, int]:
        """The customer writes back after the resolution: 58% within a week, the rest up to 27 days later."""
        rng = self.rng
        delay = rng.uniform(0.25, 7.0) if rng.random() < 0.58 else rng.uniform(7.5, 27.0)
        reopened = res + int(delay * DAY)
        segments.append(("resolved", res, reopened))
        work = int(rng.lognormvariate(math.log(4.0), 0.8) * HOUR) + 60
        segments.append(("open", reopened, reopened + work))
        t = reopened + work
        if rng.random() < 0.25:
            wait = int(rng.lognormvariate(math.log(18.0), 1.1) * HOUR)
            segments.append(("waiting_on_customer", t, t + wait))
            segments.append(("open", t + wait, t + wait + 1800))
            t += wait + 1800
        return reopened, t

    def _handle_minutes(self, tk: _Ticket, replies: int) -> int:
        rng = self.rng
        if tk.spam:
            return rng.randint(1, 3)
        if rng.random() < 0.006:  # a timer left running overnight
            return rng.randint(500, 2400)
        median = 12.0 * (1 + 0.35 * (replies - 1)) * (1.6 if tk.channel == "phone" else 1.0)
        return max(1, int(rng.lognormvariate(math.log(median), 0.7)))

    def _survey(self, batch: Batch, ticket_id: int, tk: _Ticket, fr: int, res: int, reopened: bool) -> None:
        rng = self.rng
        if rng.random() >= (1.0 if tk.internal else SURVEY_P[tk.customer.plan]):
            return
        late = rng.random() >= 0.86  # answered only after a reminder, 1-4 weeks later
        delay = rng.uniform(7.5, 30.0) * DAY if late else min(rng.lognormvariate(math.log(18.0), 0.9) * HOUR, 7 * DAY)
        submitted = res + int(delay)
        if submitted >= END:
            return
        if tk.internal:
            score = 5  # QA scripts always submit five stars
        else:
            adj = CSAT_PLAN[tk.customer.plan]
            adj -= 0.5 if fr - tk.created > 24 * HOUR else 0.0
            adj -= 0.35 if res - tk.created > 72 * HOUR else 0.0
            adj -= 0.6 if reopened else 0.0
            adj -= 0.4 if tk.escalation == "management" else 0.0
            adj += 0.1 if tk.channel == "chat" else 0.0
            adj -= 0.3 if late else 0.0
            score = min(5, max(1, math.floor(3.55 + adj + rng.gauss(0.0, 1.1) + 0.5)))
        batch.surveys.append((self.next_survey, ticket_id, score, ts(submitted)))
        self.next_survey += 1

    def _refunds(self, batch: Batch, ticket_id: int, tk: _Ticket, fr: int, res: int | None) -> None:
        rng = self.rng
        if rng.random() >= REFUND_P[tk.category]:
            return
        for _ in range(1 if rng.random() < 0.9 else 2):
            kind = _pick(rng, REFUND_KINDS, REFUND_CUM)
            median = REFUND_MEDIAN[tk.customer.plan] * (0.35 if kind == "goodwill" else 1.0)
            cents = max(100, int(rng.lognormvariate(math.log(median), 0.7) * 100))
            issued = fr + int(rng.uniform(0.3, 1.0) * (res - fr)) if res is not None else fr + int(
                rng.uniform(1, 48) * HOUR)
            if issued >= END:
                continue
            batch.refunds.append((self.next_refund, ticket_id, kind, f"{cents // 100}.{cents % 100:02d}", ts(issued)))
            self.next_refund += 1


def _past(sec: int | None) -> int | None:
    """A timestamp only if it has happened by the data's end."""
    return sec if sec is not None and sec < END else None


def _until_now(segments: list[tuple[str, int, int | None]]) -> list[tuple[str, int, int | None]]:
    """Status intervals that have begun by the data's end; the current one is left open (NULL end)."""
    kept: list[tuple[str, int, int | None]] = []
    for status, start, end in segments:
        if start >= END:
            break
        if end is not None and end >= END:
            end = None
        kept.append((status, start, end))
        if end is None:
            break
    return kept
