"""A planted set for the dream's entity links (docs/engine.md#rem): topics of six notes that are about one named
thing (a service, a person, a device, a code identifier, a project) in different words, and distractor notes
that share only generic words with them ("deploy", "battery", "on-call", "Monday", "Slack"). Written for this
benchmark; a reader would link every pair of notes within a topic and no other pair.

Two halves with different topics and different names: `TUNE` (the thresholds were chosen on it) and `TEST`
(reported). The hard cases are in both: generic capitalised words (Slack, Monday, GitHub, Jira) and generic
hyphenated words (on-call, follow-up, roll-out) that appear in several topics and in distractors, and notes
that name a topic's thing once among other names.

Not a test module; bench_dream_links.py measures it and tests/integration/test_dream_links.py stores a part."""

from __future__ import annotations

import itertools
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Topic:
    name: str  # the named thing the notes share
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Half:
    topics: tuple[Topic, ...]
    distractors: tuple[str, ...]

    def notes(self) -> list[tuple[str, str | None]]:
        """(text, topic name or None for a distractor), topics interleaved the way a working day mixes them."""
        rows = [(text, t.name) for t in self.topics for text in t.notes] + [(d, None) for d in self.distractors]
        order = sorted(range(len(rows)), key=lambda i: (i * 37) % len(rows))  # a fixed shuffle
        return [rows[i] for i in order]

    def related_pairs(self) -> set[frozenset[str]]:
        return {frozenset(p) for t in self.topics for p in itertools.combinations(t.notes, 2)}


TUNE = Half(
    topics=(
        Topic("billing-api", (
            "The billing-api started returning 502s right after the Tuesday deploy.",
            "Doubled the connection pool of billing-api; the gateway errors went away.",
            "billing-api keeps invoices in a separate Postgres schema from the rest of the platform.",
            "On-call note: restart billing-api pods one at a time, never all at once.",
            "Latency dashboards for billing-api live in the payments folder in Grafana.",
            "The follow-up for billing-api is to add retries on the tax lookup.",
        )),
        Topic("Priya Raman", (
            "Priya Raman owns the quarterly access review and wants the list by Friday.",
            "Ask Priya before changing anything in the SSO configuration.",
            "Priya prefers short written updates over meetings.",
            "Raman is out in the first week of March; her backup is the security team lead.",
            "Priya Raman approved the new password rotation policy on Monday.",
            "Priya asked that audit logs be kept for two years instead of one.",
        )),
        Topic("Pixel 7", (
            "The Pixel 7 test phone drains its battery overnight when Bluetooth is on.",
            "Screenshots on the Pixel 7 come out 1080 wide, not 1440.",
            "Our crash on resume only reproduces on the Pixel 7, never on the emulator.",
            "The Pixel 7 in the lab needs a factory reset before the next round of tests.",
            "Dark mode colours look washed out on the Pixel 7 screen.",
            "Charging the Pixel 7 with the old cable is slow; use the one in the drawer.",
        )),
        Topic("parse_invoice", (
            "parse_invoice chokes on totals written with a comma as the decimal mark.",
            "Added a unit test for parse_invoice with a zero-line invoice.",
            "parse_invoice is called twice per upload; the second call is redundant.",
            "Profiling shows parse_invoice spends most of its time in regex compilation.",
            "The return type of parse_invoice should become a dataclass instead of a dict.",
            "Renaming parse_invoice would break the importer scripts that call it by name.",
        )),
    ),
    distractors=(
        "The deploy pipeline takes twelve minutes end to end.",
        "Battery life on laptops improves with the power saver profile.",
        "On-call handover happens every Monday at ten.",
        "Post incident summaries in Slack within a day.",
        "The follow-up meeting moved to Thursday afternoon.",
        "Gateway timeouts are usually a symptom, not a cause.",
        "Unit tests must pass before a merge; no exceptions.",
        "The quarterly review of budgets is due next month.",
        "Screen readers need alt text on every image.",
        "Use GitHub issues for bugs and the Jira board for planning.",
    ),
)

TEST = Half(
    topics=(
        Topic("ledger-sync", (
            "ledger-sync fell six hours behind during the month-end close.",
            "The ledger-sync worker reads from the replica, never the primary.",
            "Memory of ledger-sync grows until the nightly restart; probably a cache without a bound.",
            "On-call should page finance if ledger-sync lags more than an hour.",
            "ledger-sync writes a checkpoint every thousand entries so a crash resumes close to where it stopped.",
            "A follow-up ticket asks to move ledger-sync off the shared cron host.",
        )),
        Topic("Tomás Okafor", (
            "Tomás Okafor is the contact for anything about the data warehouse contracts.",
            "Tomás wants cost estimates in euros, not dollars.",
            "Okafor signed off the vendor renewal on Monday.",
            "Check with Tomás before inviting external auditors.",
            "Tomás Okafor leads the Wednesday architecture review.",
            "Tomás asked for the roadmap slides to include the migration risks.",
        )),
        Topic("ThinkPad X1", (
            "The ThinkPad X1 loaner has a sticky trackpad; file a repair request.",
            "Docker builds on the ThinkPad X1 are twice as slow as on the desktop.",
            "Firmware update 1.42 fixed the ThinkPad X1 fan noise.",
            "The ThinkPad X1 refuses to wake from sleep with the USB hub attached.",
            "Battery on the ThinkPad X1 lasts about five hours of video calls.",
            "Reinstall the VPN client on the ThinkPad X1 after every OS upgrade.",
        )),
        Topic("RetryPolicy", (
            "RetryPolicy doubles the wait after each failure, up to thirty seconds.",
            "The default RetryPolicy retries on timeouts but not on authentication errors.",
            "RetryPolicy needs jitter so that clients do not retry in lockstep.",
            "A RetryPolicy with max attempts zero should mean no retries, but it loops forever.",
            "Every HTTP client in the repo should take a RetryPolicy instead of hard-coded sleeps.",
            "Logging inside RetryPolicy prints the attempt number and the exception type.",
        )),
    ),
    distractors=(
        "The roll-out of the new laptop images starts next week.",
        "Finance closes the books on the third working day of the month.",
        "On-call engineers get a day off after a weekend page.",
        "Architecture decisions are written down in the wiki.",
        "Authentication errors should never be retried blindly.",
        "Share the slides in Slack before the Wednesday meeting.",
        "Fan noise on desktops usually means dust in the heatsink.",
        "A follow-up survey goes to everyone who filed a repair request.",
        "Vendor contracts renew automatically unless cancelled in time.",
        "Open a GitHub issue for every flaky test and tag it in Jira.",
    ),
)
