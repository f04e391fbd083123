"""A labelled set of memory pairs for critique_context's conflict judge (docs/tools.md#critique), written for it:
each pair (a stored first, b later), its domain, its kind and whether it is a conflict.

Conflicts (the same subject and predicate, incompatible values or polarity):
    value         the same setting or fact with a different value
    negation      one states what the other denies
    supersession  one says the thing moved on ("we moved from A to B") and the other still states the old state
Not conflicts:
    complement    two facts about one subject that can both hold
    near_topic    similar words about different subjects (two tools, two hosts, two people)
    restatement   the same claim in other words (or a claim and the move that led to it)
"""

from __future__ import annotations

import random
from typing import NamedTuple


class Pair(NamedTuple):
    domain: str
    kind: str
    a: str
    b: str

    @property
    def conflict(self) -> bool:
        return self.kind in CONFLICT_KINDS


CONFLICT_KINDS = ("value", "negation", "supersession")

PAIRS: tuple[Pair, ...] = (
    # value: the same slot, another value
    Pair("config", "value", "The cache TTL is 30 seconds.", "The cache TTL is 60 seconds."),
    Pair("config", "value", "The API gateway allows 100 requests per minute per client.",
         "The API gateway allows 250 requests per minute per client."),
    Pair("config", "value", "max_connections in postgresql.conf is set to 200.",
         "max_connections in postgresql.conf is set to 500."),
    Pair("config", "value", "The worker pool size defaults to 8 threads.",
         "The worker pool size defaults to 4 threads."),
    Pair("config", "value", "The log level in production is WARNING.", "The log level in production is DEBUG."),
    Pair("team", "value", "The sprint length for the platform team is two weeks.",
         "The sprint length for the platform team is three weeks."),
    Pair("team", "value", "The release freeze starts on 12 December.", "The release freeze starts on 5 December."),
    Pair("team", "value", "Our on-call rotation hands over every Monday at 10:00.",
         "Our on-call rotation hands over every Monday at 14:00."),
    Pair("person", "value", "Maria lives in Porto.", "Maria lives in Lisbon."),
    Pair("person", "value", "Tom's birthday is on 3 March.", "Tom's birthday is on 13 March."),
    Pair("person", "value", "Priya reports to the head of data engineering.",
         "Priya reports to the head of infrastructure."),
    Pair("device", "value", "The office NAS has 8 TB of usable storage.",
         "The office NAS has 12 TB of usable storage."),
    Pair("device", "value", "The backup job on the build server runs at 02:00 every night.",
         "The backup job on the build server runs at 04:30 every night."),
    Pair("device", "value", "The VPN endpoint listens on port 1194.", "The VPN endpoint listens on port 443."),
    Pair("tools", "value", "The project requires Node.js 18 or newer.", "The project requires Node.js 20 or newer."),
    # negation: one denies what the other states
    Pair("config", "negation", "Compression is enabled on the reverse proxy.",
         "Compression is disabled on the reverse proxy."),
    Pair("config", "negation", "The staging cluster uses TLS for internal traffic.",
         "The staging cluster does not use TLS for internal traffic."),
    Pair("config", "negation", "Feature flag dark_mode is on for all users.",
         "Feature flag dark_mode is off for all users."),
    Pair("team", "negation", "Deploys happen on Fridays.", "Deploys never happen on Fridays."),
    Pair("team", "negation", "The team agreed to require two approvals per pull request.",
         "The team did not agree to require two approvals per pull request."),
    Pair("team", "negation", "Code freeze applies to documentation changes.",
         "Code freeze does not apply to documentation changes."),
    Pair("person", "negation", "Jonas speaks German fluently.", "Jonas does not speak German."),
    Pair("person", "negation", "Lena is allergic to peanuts.", "Lena is not allergic to peanuts."),
    Pair("person", "negation", "Sam can drive the company van.", "Sam cannot drive the company van."),
    Pair("device", "negation", "The conference room printer supports duplex printing.",
         "The conference room printer doesn't support duplex printing."),
    Pair("device", "negation", "The payment service is reachable from the office network.",
         "The payment service is not reachable from the office network."),
    Pair("device", "negation", "The smoke test passed on the release candidate.",
         "The smoke test failed on the release candidate."),
    Pair("tools", "negation", "ripgrep respects .gitignore files by default.",
         "ripgrep does not respect .gitignore files by default."),
    Pair("tools", "negation", "The linter checks import order.", "The linter no longer checks import order."),
    # supersession: the thing moved on; the other memory states the old state
    Pair("team", "supersession", "Our CI runs on Jenkins.", "We moved our CI from Jenkins to GitHub Actions."),
    Pair("team", "supersession", "The team tracks bugs in Jira.",
         "The team switched from Jira to Linear for bug tracking."),
    Pair("team", "supersession", "Design reviews happen in the Tuesday meeting.",
         "Design reviews moved from the Tuesday meeting to written RFCs."),
    Pair("config", "supersession", "The orders service stores its data in MySQL.",
         "The orders service migrated from MySQL to PostgreSQL."),
    Pair("config", "supersession", "Secrets are kept in a .env file on each host.",
         "Secrets were moved from .env files to Vault."),
    Pair("config", "supersession", "The frontend is bundled with webpack.",
         "The frontend replaced webpack with Vite for bundling."),
    Pair("person", "supersession", "Ahmed works at Contoso as a data analyst.",
         "Ahmed left Contoso and now works at Fabrikam."),
    Pair("person", "supersession", "Chloe lives in Manchester.", "Chloe moved from Manchester to Leeds last spring."),
    Pair("device", "supersession", "The home router is a Netgear R7000.",
         "The Netgear R7000 router was replaced by a Ubiquiti Dream Machine."),
    Pair("device", "supersession", "The status page is hosted on Statuspage.io.",
         "We switched the status page from Statuspage.io to a self-hosted Upptime."),
    Pair("tools", "supersession", "The repository formats Python code with black.",
         "The repository replaced black with ruff format."),
    Pair("tools", "supersession", "Dependencies are pinned with pip-tools.",
         "We moved dependency pinning from pip-tools to uv."),
    # complement: two facts about one subject that both hold
    Pair("tools", "complement", "bzip2 compresses files with the Burrows-Wheeler transform and Huffman coding.",
         "Run tar -cjf archive.tar.bz2 dir/ to create a bzip2-compressed tarball."),
    Pair("config", "complement", "The cache TTL is 30 seconds.", "The cache holds at most 10000 entries."),
    Pair("config", "complement", "The reverse proxy terminates TLS.",
         "The reverse proxy does not cache API responses."),
    Pair("config", "complement", "Logs are shipped to Loki.", "Logs older than 30 days are deleted."),
    Pair("team", "complement", "Deploys happen on Tuesdays and Thursdays.",
         "Deploys need a green build and one approval."),
    Pair("team", "complement", "The platform team owns the Kubernetes clusters.",
         "The platform team does not own the billing database."),
    Pair("team", "complement", "We use PostgreSQL for transactional data.", "We use ClickHouse for analytics."),
    Pair("person", "complement", "Maria lives in Porto.", "Maria works remotely for a Berlin company."),
    Pair("person", "complement", "Jonas speaks German fluently.", "Jonas is learning Japanese."),
    Pair("person", "complement", "Lena is allergic to peanuts.", "Lena does not drink coffee."),
    Pair("device", "complement", "The office NAS has 8 TB of usable storage.",
         "The office NAS takes a snapshot every hour."),
    Pair("device", "complement", "The VPN endpoint listens on port 1194.",
         "The VPN endpoint does not allow split tunnelling."),
    Pair("device", "complement", "The printer supports duplex printing.", "The printer supports scanning to email."),
    Pair("tools", "complement", "git rebase rewrites commit history.", "git rebase -i lets you squash commits."),
    # near_topic: similar words, different subjects
    Pair("tools", "near_topic", "md5sum prints a 128-bit checksum of each file.",
         "b2sum prints a 512-bit checksum of each file."),
    Pair("tools", "near_topic", "gzip is faster than xz.", "xz compresses better than gzip."),
    Pair("tools", "near_topic", "pip installs packages from PyPI.", "npm installs packages from the npm registry."),
    Pair("config", "near_topic", "The staging database has 16 GB of RAM.", "The production database has 64 GB of RAM."),
    Pair("config", "near_topic", "The cache TTL for sessions is 30 minutes.", "The cache TTL for avatars is 7 days."),
    Pair("config", "near_topic", "The EU cluster uses TLS for internal traffic.",
         "The US cluster does not use TLS for internal traffic yet."),
    Pair("team", "near_topic", "The mobile team releases every two weeks.", "The web team releases every day."),
    Pair("team", "near_topic", "Alice leads the search team.", "Bob leads the ranking team."),
    Pair("person", "near_topic", "Tom's birthday is on 3 March.", "Tom's wife's birthday is on 13 March."),
    Pair("person", "near_topic", "Maria lives in Porto.", "Maria's brother lives in Lisbon."),
    Pair("person", "near_topic", "Jonas does not eat meat.", "Jonas's daughter eats meat."),
    Pair("device", "near_topic", "Bob's laptop runs Ubuntu 22.04.", "Alice's laptop runs Fedora 39."),
    Pair("device", "near_topic", "The front-door camera records at 1080p.", "The garage camera records at 4K."),
    Pair("device", "near_topic", "The payment service is reachable from the office network.",
         "The admin service is not reachable from the office network."),
    # restatement: the same claim again, or a claim and the move that led to it
    Pair("config", "restatement", "The cache TTL is 30 seconds.", "Cache entries expire after 30 s."),
    Pair("config", "restatement", "Compression is enabled on the reverse proxy.",
         "The reverse proxy compresses responses."),
    Pair("config", "restatement", "The orders service migrated from MySQL to PostgreSQL.",
         "The orders service stores its data in PostgreSQL."),
    Pair("config", "restatement", "The service does not log request bodies.",
         "Request bodies are never logged by the service."),
    Pair("team", "restatement", "Deploys never happen on Fridays.", "We do not deploy on Fridays."),
    Pair("team", "restatement", "We moved our CI from Jenkins to GitHub Actions.", "Our CI runs on GitHub Actions."),
    Pair("team", "restatement", "The team agreed to require two approvals per pull request.",
         "Every pull request needs two approvals."),
    Pair("person", "restatement", "Maria lives in Porto.", "Maria's home is in Porto."),
    Pair("person", "restatement", "Sam cannot drive the company van.", "Sam is not allowed to drive the company van."),
    Pair("person", "restatement", "Priya reports to the head of data engineering.",
         "The head of data engineering is Priya's manager."),
    Pair("device", "restatement", "The VPN endpoint listens on port 1194.",
         "Port 1194 is where the VPN endpoint listens."),
    Pair("device", "restatement", "The smoke test failed on the release candidate.",
         "The release candidate did not pass the smoke test."),
    Pair("tools", "restatement", "ripgrep respects .gitignore files by default.",
         "By default ripgrep skips files listed in .gitignore."),
    Pair("tools", "restatement", "The project requires Node.js 20 or newer.",
         "Node.js 20 is the minimum for the project."),
)

SEED = 35


def split(pairs: tuple[Pair, ...] = PAIRS, seed: int = SEED) -> tuple[list[Pair], list[Pair]]:
    """(tune, test): each kind shuffled with a fixed seed and cut in half, so both halves hold every kind."""
    rng = random.Random(seed)
    tune: list[Pair] = []
    test: list[Pair] = []
    for kind in dict.fromkeys(p.kind for p in pairs):
        group = [p for p in pairs if p.kind == kind]
        rng.shuffle(group)
        half = (len(group) + 1) // 2
        tune += group[:half]
        test += group[half:]
    return tune, test

# Written after the judge was tuned, in other phrasings (longer sentences, passive voice, reordered values), and
# never tuned on: how far the rules carry beyond the style of PAIRS. bench_contradictions.py reports it apart.
FRESH: tuple[Pair, ...] = (
    Pair("config", "value", "Uploads larger than 25 MB are rejected by the API.",
         "The API rejects uploads larger than 100 MB."),
    Pair("config", "value", "In production the JVM heap is capped at 4 GB.",
         "In production the JVM heap is capped at 6 GB."),
    Pair("config", "value", "The default timeout for outbound HTTP calls is 10 seconds.",
         "Outbound HTTP calls time out after 3 seconds by default."),
    Pair("team", "value", "The quarterly planning meeting is on Wednesday.",
         "The quarterly planning meeting is on Thursday."),
    Pair("person", "value", "Noah's phone extension is 4471.", "Noah's phone extension is 4417."),
    Pair("device", "value", "The Raspberry Pi in the lab runs Debian 11.",
         "The Raspberry Pi in the lab runs Debian 12."),
    Pair("config", "negation", "Password login over SSH is allowed on the bastion host.",
         "Password login over SSH is forbidden on the bastion host."),
    Pair("team", "negation", "Contractors have access to the production logs.",
         "Contractors do not have access to the production logs."),
    Pair("person", "negation", "Elif is available for on-call in August.",
         "Elif is unavailable for on-call in August."),
    Pair("device", "negation", "The thermostat in the server room reports to Home Assistant.",
         "The thermostat in the server room has never reported to Home Assistant."),
    Pair("tools", "negation", "pytest runs the doctests in the docs folder.",
         "pytest doesn't run the doctests in the docs folder."),
    Pair("team", "supersession", "Incidents are announced in the #ops Slack channel.",
         "Incident announcements moved from the #ops Slack channel to the status page."),
    Pair("person", "supersession", "Kofi is the product owner for checkout.",
         "Kofi handed checkout over to Mina and now owns search."),
    Pair("device", "supersession", "The garage door opener uses the Z-Wave hub.",
         "We migrated the garage door opener from the Z-Wave hub to Zigbee."),
    Pair("config", "supersession", "Container images are pushed to Docker Hub.",
         "Container images were moved from Docker Hub to GitHub Container Registry."),
    Pair("config", "complement", "The queue retries a failed job 5 times.",
         "The queue drops jobs older than 24 hours."),
    Pair("team", "complement", "The data team does not work on Fridays.",
         "The data team holds its retro on Thursday afternoons."),
    Pair("person", "complement", "Noah's phone extension is 4471.", "Noah prefers email to phone calls."),
    Pair("device", "complement", "The lab printer is offline on weekends.", "The lab printer prints in colour."),
    Pair("tools", "complement", "zstd compresses quickly at level 3.", "zstd -19 gives smaller files but runs slowly."),
    Pair("tools", "near_topic", "sha256sum is in coreutils.", "b3sum is not in coreutils."),
    Pair("config", "near_topic", "The read replica has 4 vCPUs.", "The primary database has 16 vCPUs."),
    Pair("person", "near_topic", "Elif is available for on-call in August.",
         "Omar is unavailable for on-call in August."),
    Pair("device", "near_topic", "The kitchen speaker is paired with Emma's phone.",
         "The bedroom speaker is paired with Liam's phone."),
    Pair("team", "near_topic", "The backend team uses trunk-based development.",
         "The mobile team does not use trunk-based development."),
    Pair("config", "restatement", "Uploads larger than 25 MB are rejected by the API.",
         "The API refuses any upload over 25 MB."),
    Pair("team", "restatement", "Contractors do not have access to the production logs.",
         "The production logs are off limits to contractors."),
    Pair("device", "restatement", "The lab printer is offline on weekends.",
         "On weekends the lab printer is switched off."),
    Pair("person", "restatement", "Kofi handed checkout over to Mina and now owns search.",
         "Kofi is the product owner for search."),
    Pair("tools", "restatement", "pytest doesn't run the doctests in the docs folder.",
         "The doctests in the docs folder are not collected by pytest."),
)
