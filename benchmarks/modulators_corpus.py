"""The planted cases of benchmarks/bench_modulators.py, written for it (an operations team's notes).

Linked (noradrenaline): each topic has a note the query words find (`hit`) and a follow-up note stored with
link_to the hit, worded without the query's words (`linked`: the fix, the owner, the runbook), which the agent
needs too. `weak` is an earlier phrasing of the same need that the store does not answer (nothing relevant):
what arouses noradrenaline before `query` is asked.

Used (dopamine): each topic has three notes on one subject; `first` is asked, the agent uses `used` (cites it);
`then` is a related later question whose best answer is `used` (`target: used`) or one of the others
(`target: other`, a control: the boost must not bury the answer).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Linked:
    hit: str
    linked: str
    weak: str
    query: str


@dataclass(frozen=True)
class Used:
    used: str
    others: tuple[str, str]
    first: str
    then: str
    target: str  # "used" or "other" (others[0] answers `then`)


LINKED = [
    Linked("The billing outage on March 3 was caused by an expired TLS certificate on the payments gateway.",
           "Runbook: run certbot renew on gw-02, reload nginx, and set a reminder fourteen days before expiry.",
           "money collection stopped working one morning", "what caused the billing outage"),
    Linked("Search latency doubled after the Elasticsearch cluster upgrade to version 8.",
           "Fix applied: heap raised to 16 GB and the refresh interval set to 30s on the product index.",
           "finding products got slow", "why did search latency go up after the upgrade"),
    Linked("The nightly ETL job fails when the vendor's CSV export arrives after 02:00.",
           "Priya owns the vendor relationship; she can ask them to move the drop window earlier.",
           "the overnight data load keeps breaking", "why does the nightly ETL job fail"),
    Linked("Mobile push notifications stopped on Android after the Firebase key rotation.",
           "The new server key lives in Vault under secret/fcm and the notifier reads it at boot.",
           "phones are not buzzing anymore", "why did Android push notifications stop"),
    Linked("Kafka consumer lag on the orders topic spikes every Monday at 09:00.",
           "The weekly report generator floods the broker; it was moved to Sunday night.",
           "order events pile up at the start of the week", "why does consumer lag spike on the orders topic"),
    Linked("Customer emails bounced because the SPF record did not include the new mail provider.",
           "DNS change ticket OPS-4411: add include:spf.mailhost.example to the TXT record.",
           "people are not receiving our messages", "why did customer emails bounce"),
    Linked("The staging database ran out of disk because WAL archiving was failing silently.",
           "Archive bucket permissions were fixed and an alert on pg_stat_archiver failures added.",
           "the test environment storage filled up", "why did the staging database run out of disk"),
    Linked("Login requests time out when the LDAP server in Frankfurt is unreachable.",
           "Failover: the auth service now falls back to the Dublin directory replica after 2 seconds.",
           "users cannot get into the app sometimes", "why do login requests time out"),
    Linked("The image resizing service crashes on PNG files larger than 40 megapixels.",
           "A pixel limit of 30M was added in the upload form; larger uploads get a friendly error.",
           "big pictures break the thumbnail thing", "why does the image resizing service crash"),
    Linked("Invoices showed the wrong currency for Swiss customers after the locale refactor.",
           "Patch 2.14.3 maps de-CH to CHF explicitly; Lena verified it against last month's invoices.",
           "bills look odd for some European clients", "why did invoices show the wrong currency"),
    Linked("The CI pipeline takes 40 minutes because integration tests run serially.",
           "Splitting the suite into four shards with pytest-xdist brought it to 11 minutes.",
           "waiting forever for builds to finish", "why is the CI pipeline so slow"),
    Linked("The analytics dashboard showed zero signups on Friday because the tracking script was blocked.",
           "The script is now served from our own domain, so ad blockers no longer drop it.",
           "numbers on the charts went to nothing", "why did the analytics dashboard show zero signups"),
    Linked("Redis evicted session keys because maxmemory was reached during the flash sale.",
           "Sessions moved to a dedicated instance with noeviction and 8 GB of memory.",
           "people got logged out during the big promotion", "why were session keys evicted from Redis"),
    Linked("The backup job skipped the user uploads volume after the storage migration.",
           "The restic include list now names /srv/uploads; a weekly restore drill checks it.",
           "some files might not be safe", "why did the backup job skip the uploads volume"),
    Linked("Webhook deliveries to partners failed because our egress IP changed.",
           "Partners were sent the new NAT gateway address 203.0.113.40 to allow-list.",
           "partners stopped hearing from us", "why did webhook deliveries to partners fail"),
    Linked("The cron scheduler ran jobs twice after daylight saving time ended.",
           "All schedules were converted to UTC and the host clock set to UTC as well.",
           "things happened double one weekend", "why did the cron scheduler run jobs twice"),
]

DISTRACTORS = [
    "Team lunch is on Thursdays at the Italian place near the office.",
    "The office Wi-Fi password is rotated on the first day of each quarter.",
    "Our design system uses an 8 pixel spacing grid and the Inter typeface.",
    "Quarterly planning happens in the second week of January, April, July and October.",
    "New hires get a laptop, a security key and a buddy for their first month.",
    "The product roadmap is kept in the planning board, not in the wiki.",
    "Expense reports above 500 euros need a manager's approval.",
    "The marketing site is built with a static generator and deployed on every merge.",
    "Code review requires one approval; changes to the payments module require two.",
    "The on-call rotation is weekly and hands over on Monday at 10:00.",
    "Customer support works in two shifts, covering 07:00 to 23:00 CET.",
    "The data warehouse keeps raw events for 13 months and aggregates forever.",
    "Feature flags are managed in the flags service; stale flags are removed monthly.",
    "Our API uses cursor-based pagination with a default page size of 50.",
    "The mobile app supports Android 10 and later and iOS 15 and later.",
    "Architecture decision records live in the docs folder of each repository.",
    "Load tests run against the perf environment every Wednesday night.",
    "The incident review template asks for impact, timeline, causes and actions.",
    "Translations are handled by a vendor and synced twice a week.",
    "Database schema changes go through the migrations repository and a review.",
]

USED = [
    Used("We deploy the API with make release ENV=prod, which tags the commit and pushes the image.",
         ("Deploying the old monolith used Capistrano; it was retired in 2023.",
          "Frontend deploys go through preview environments on every pull request."),
         "how do we deploy the API", "deploys", "used"),
    Used("Rotate database credentials with the vault-rotate script; apps pick them up within five minutes.",
         ("Database credentials used to be stored in the env file on each host.",
          "Read-only analysts get database credentials through the data portal."),
         "how do we rotate database credentials", "database credentials", "used"),
    Used("To reproduce a production bug locally, load the anonymised snapshot with make snapshot-restore.",
         ("Production bugs are triaged in the bug board every morning.",
          "The local dev environment runs with docker compose up."),
         "reproduce a production bug locally", "production bugs", "used"),
    Used("Our Python services pin dependencies with uv lock and update them every second Tuesday.",
         ("The Node services use renovate to open dependency update pull requests.",
          "Dependency licences are checked by the compliance scanner in CI."),
         "how are Python dependencies pinned", "dependency updates", "used"),
    Used("The customer churn report is generated from the subscriptions table by the weekly dbt job.",
         ("Churn interviews are run by the research team each quarter.",
          "The revenue report is generated from the invoices table by the monthly job."),
         "where does the churn report come from", "churn", "used"),
    Used("Alert thresholds for the API live in the monitoring repo under alerts/api.yaml.",
         ("Alerts are routed to the on-call phone through the paging service.",
          "Dashboards for the API are in the observability folder of the wiki."),
         "where are API alert thresholds defined", "API alerts", "used"),
    Used("Customer data deletion requests are processed by the gdpr-erase job within 30 days.",
         ("Customer data exports are produced by the gdpr-export job on request.",
          "Data retention for logs is 90 days in the log platform."),
         "how are deletion requests handled", "customer data export", "other"),
    Used("The staging environment is reset from production every Sunday at 03:00.",
         ("The staging environment URL is staging.internal.example and needs the VPN.",
          "The demo environment is reset every night for sales demos."),
         "when is staging reset", "staging URL", "other"),
    Used("Release notes are written by the feature's author and reviewed by product before release.",
         ("Release dates are announced in the engineering channel on Monday.",
          "Release branches are cut from main every two weeks."),
         "who writes release notes", "release branches", "other"),
    Used("Service-to-service calls authenticate with mTLS certificates issued by the internal CA.",
         ("User-facing requests authenticate with OAuth access tokens from the identity provider.",
          "The internal CA's root certificate is renewed every five years."),
         "how do services authenticate to each other", "OAuth tokens", "other"),
    Used("Queue workers are scaled by the autoscaler on the backlog length, from 2 to 20 pods.",
         ("Web pods are scaled on CPU usage between 3 and 12 replicas.",
          "Cron pods are not autoscaled and run as single instances."),
         "how are queue workers scaled", "scaling", "used"),
    Used("Error budgets are 99.9 % monthly for the API and reviewed in the reliability meeting.",
         ("The status page is updated by the incident commander during an outage.",
          "Error budgets for internal tools are not tracked."),
         "what is the API error budget", "reliability", "used"),
    Used("Feature flags for the checkout are toggled in the flags service by the payments team only.",
         ("Feature flags older than three months are listed in the monthly cleanup report.",
          "Checkout experiments are analysed by the growth team after two weeks."),
         "who can toggle checkout feature flags", "feature flags", "used"),
    Used("Secrets for CI jobs are injected from the CI vault at runtime and never written to disk.",
         ("CI runners are autoscaled spot instances in the build account.",
          "Secrets scanning blocks pushes that contain API keys."),
         "how do CI jobs get secrets", "secrets", "used"),
    Used("Slow queries over 500 ms are logged by the database and summarised daily in the perf channel.",
         ("The query planner statistics are refreshed by autovacuum analyze.",
          "Slow page loads are tracked by real user monitoring in the browser."),
         "where do slow query reports go", "slow queries", "used"),
    Used("The public API is versioned in the URL path, and v1 is supported until the end of 2027.",
         ("The internal gRPC APIs are versioned by package name.",
          "API keys for the public API are issued in the developer portal."),
         "how long is API v1 supported", "API keys", "other"),
]
