"""The fixed world of the demo support company: calendar, countries, plans, teams, people.

Everything random draws from the one `random.Random` the loader passes in, in a fixed order,
so the same seed always gives the same customers and agents. Reference tables are constants.
"""
from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import dataclass

DAY = 86_400
HOUR = 3_600
BASE = dt.datetime(2023, 1, 1)  # a Sunday; every timestamp is whole seconds since BASE
N_DAYS = 731  # 2023-01-01 .. 2024-12-31
END = N_DAYS * DAY  # 2025-01-01 00:00: the data's "now"; later events have not happened yet

# (code, name, region, sampling weight, fixed customer count or 0). The fixed counts keep a
# handful of small countries small at every size, so privacy suppression always has groups to act on.
COUNTRIES: tuple[tuple[str, str, str, float, int], ...] = (
    ("DE", "Germany", "Europe", 10.0, 0), ("FR", "France", "Europe", 8.0, 0),
    ("GB", "United Kingdom", "Europe", 10.0, 0), ("ES", "Spain", "Europe", 5.0, 0),
    ("IT", "Italy", "Europe", 5.0, 0), ("NL", "Netherlands", "Europe", 4.0, 0),
    ("PL", "Poland", "Europe", 3.0, 0), ("IE", "Ireland", "Europe", 2.0, 0),
    ("SE", "Sweden", "Europe", 2.0, 0), ("NO", "Norway", "Europe", 1.5, 0),
    ("DK", "Denmark", "Europe", 1.5, 0), ("FI", "Finland", "Europe", 1.0, 0),
    ("IS", "Iceland", "Europe", 0.0, 3), ("LU", "Luxembourg", "Europe", 0.0, 6),
    ("MT", "Malta", "Europe", 0.0, 4), ("LI", "Liechtenstein", "Europe", 0.0, 2),
    ("US", "United States", "North America", 22.0, 0), ("CA", "Canada", "North America", 5.0, 0),
    ("BR", "Brazil", "Latin America", 4.0, 0), ("MX", "Mexico", "Latin America", 3.0, 0),
    ("CL", "Chile", "Latin America", 1.0, 0), ("UY", "Uruguay", "Latin America", 0.0, 5),
    ("JP", "Japan", "Asia Pacific", 4.0, 0), ("AU", "Australia", "Asia Pacific", 4.0, 0),
    ("IN", "India", "Asia Pacific", 5.0, 0), ("SG", "Singapore", "Asia Pacific", 2.0, 0),
    ("BN", "Brunei", "Asia Pacific", 0.0, 3),
    ("ZA", "South Africa", "Middle East & Africa", 2.0, 0),
    ("AE", "United Arab Emirates", "Middle East & Africa", 2.0, 0),
    ("IL", "Israel", "Middle East & Africa", 1.5, 0), ("NG", "Nigeria", "Middle East & Africa", 1.0, 0),
    ("MU", "Mauritius", "Middle East & Africa", 0.0, 4),
)
NORDIC = ("SE", "NO", "DK", "FI", "IS")

# (plan, display name, monthly fee, support hours); support hours drive first-response delays.
PLANS: tuple[tuple[str, str, str, str], ...] = (
    ("basic", "Basic", "49.00", "Mon-Fri 08:00-18:00"),
    ("premium", "Premium", "199.00", "7 days 07:00-20:00"),
    ("enterprise", "Enterprise", "1490.00", "24x7"),
)

# (team id, name, focus, share of agents); the Nordic desk has a fixed 3 agents at every size,
# a deliberately small group for the agent-level privacy rule.
TEAMS: tuple[tuple[int, str, str, float], ...] = (
    (1, "Frontline EMEA", "general support for Europe, the Middle East and Africa", 0.24),
    (2, "Frontline Americas", "general support for North and Latin America", 0.22),
    (3, "Frontline APAC", "general support for Asia Pacific", 0.12),
    (4, "Billing Desk", "invoices, payments, refunds and credits", 0.14),
    (5, "Technical Escalations", "complex technical problems and outages", 0.14),
    (6, "Enterprise Success", "named support for enterprise accounts", 0.14),
    (7, "Nordic Language Desk", "native-language support for the Nordic countries", 0.0),
)
BILLING_TEAM, TECHNICAL_TEAM, ENTERPRISE_TEAM, NORDIC_TEAM = 4, 5, 6, 7
NORDIC_AGENTS = 3
FRONTLINE_BY_REGION = {"Europe": 1, "Middle East & Africa": 1, "North America": 2, "Latin America": 2,
                       "Asia Pacific": 3}

# Days of major incidents: ticket volume triples and most tickets are outage reports.
OUTAGE_DAYS = frozenset((d - BASE.date()).days for d in (dt.date(2023, 3, 14), dt.date(2023, 9, 5),
                                                        dt.date(2024, 2, 20), dt.date(2024, 10, 8)))
DOW_FACTOR = (1.05, 1.08, 1.05, 1.0, 0.92, 0.42, 0.33)  # Monday .. Sunday
HOUR_WEIGHTS = (0.2, 0.15, 0.1, 0.1, 0.15, 0.3, 0.6, 1.2, 2.2, 2.8, 3.0, 2.9, 2.5, 2.7, 2.8, 2.6, 2.3, 1.9,
                1.4, 1.1, 0.9, 0.7, 0.5, 0.3)

_COMPANY_A = ("Acme", "Blue", "Nova", "Granite", "Harbor", "Summit", "Cedar", "Vertex", "Lumen", "Orbit",
              "Pioneer", "Atlas", "Maple", "Quartz", "Redwood", "Silver", "Tidal", "Union", "Vista", "Zenith")
_COMPANY_B = ("Logistics", "Foods", "Labs", "Retail", "Health", "Media", "Systems", "Travel", "Energy",
              "Studios", "Finance", "Motors", "Apparel", "Robotics", "Analytics", "Farms")
_FIRST = ("Anna", "Ben", "Carla", "David", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Luca",
          "Maya", "Nils", "Olga", "Pablo", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wen", "Yara", "Zoe")
_LAST = ("Adler", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Hansen", "Ito", "Jensen", "Kowalski",
         "Larsen", "Moreau", "Nakamura", "Okafor", "Petrov", "Quinn", "Rossi", "Singh", "Tanaka", "Varga", "Weber")


def weekday(sec: int) -> int:
    """Monday=0 .. Sunday=6 of a timestamp in seconds since BASE (a Sunday)."""
    return (6 + sec // DAY) % 7


def month_index(sec: int) -> int:
    d = BASE + dt.timedelta(seconds=sec)
    return (d.year - BASE.year) * 12 + d.month - 1


def ts(sec: int | None) -> dt.datetime | None:
    return None if sec is None else BASE + dt.timedelta(seconds=sec)


@dataclass(frozen=True, slots=True)
class Customer:
    customer_id: int
    name: str
    plan: str
    has_24h_support: bool
    country_code: str
    region: str
    signup_date: dt.date
    is_internal: bool


@dataclass(frozen=True, slots=True)
class Agent:
    agent_id: int
    name: str
    team_id: int
    hire_day: int  # days since BASE; negative = hired before the data starts

    @property
    def hire_date(self) -> dt.date:
        return BASE.date() + dt.timedelta(days=self.hire_day)


def _plan(rng: random.Random) -> tuple[str, bool]:
    u = rng.random()
    if u < 0.12:
        return "enterprise", True  # enterprise always includes 24-hour support
    if u < 0.42:
        return "premium", rng.random() < 0.35
    return "basic", rng.random() < 0.08  # few basic customers buy the 24-hour add-on


def make_customers(rng: random.Random, n: int) -> list[Customer]:
    """n customers: small countries at their fixed counts, six internal QA tenants, the rest weighted."""
    fixed = [c[0] for c in COUNTRIES for _ in range(c[4])]
    internal = ["DE", "DE", "US", "US", "GB", "GB"]
    n_rest = max(n - len(fixed) - len(internal), 50)
    weighted = [c for c in COUNTRIES if c[3] > 0]
    drawn = rng.choices([c[0] for c in weighted], weights=[c[3] for c in weighted], k=n_rest)
    slots = [(code, False) for code in fixed + drawn] + [(code, True) for code in internal]
    rng.shuffle(slots)
    region = {c[0]: c[2] for c in COUNTRIES}
    out = []
    n_internal = 0
    for i, (code, is_internal) in enumerate(slots, start=1):
        if is_internal:
            n_internal += 1
            plan, has24 = "enterprise", True
            name = f"Internal QA Tenant {n_internal}"
        else:
            plan, has24 = _plan(rng)
            name = f"{rng.choice(_COMPANY_A)} {rng.choice(_COMPANY_B)}"
        signup = dt.date(2018, 1, 1) + dt.timedelta(days=rng.randrange(5 * 365))
        out.append(Customer(i, name, plan, has24, code, region[code], signup, is_internal))
    return out


def make_agents(rng: random.Random, n: int) -> list[Agent]:
    """Agents per team by share; each team keeps two veterans, about 30% of the rest join during the data."""
    counts = {t[0]: max(2, round(n * t[3])) for t in TEAMS}
    counts[NORDIC_TEAM] = NORDIC_AGENTS
    out: list[Agent] = []
    for team_id, k in counts.items():
        for j in range(k):
            veteran = j < 2 or team_id == NORDIC_TEAM or rng.random() >= 0.3
            hire_day = -rng.randrange(30, 6 * 365) if veteran else rng.randrange(0, N_DAYS - 30)
            name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
            out.append(Agent(len(out) + 1, name, team_id, hire_day))
    return out


def day_counts(size: int) -> list[int]:
    """Tickets per day: weekday pattern, growth, season and outage spikes; sums to exactly `size`."""
    weights = []
    for d in range(N_DAYS):
        date = BASE.date() + dt.timedelta(days=d)
        w = DOW_FACTOR[date.weekday()] * (1 + 0.35 * d / (N_DAYS - 1))
        w *= 1.12 if date.month in (11, 12) else 0.9 if date.month == 8 else 1.0
        w *= 3.0 if d in OUTAGE_DAYS else 1.0
        weights.append(w)
    total = sum(weights)
    exact = [size * w / total for w in weights]
    counts = [math.floor(x) for x in exact]
    # Largest remainder, ties broken by day: deterministic and exact.
    order = sorted(range(N_DAYS), key=lambda d: (counts[d] - exact[d], d))
    for d in order[: size - sum(counts)]:
        counts[d] += 1
    return counts
