"""What SDKs reported, read back for the metrics endpoints (`metrics_views`): the applications
from the registered instances, a flag's usage from the hourly buckets, as Unleash 8.2 answers
them. Times are aware datetimes, which the renderer writes as the API writes every time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Max, Min, QuerySet, Sum
from django.utils import timezone

from definitions.models import StrategyDefinition
from definitions.services import strategy_as_dict
from features.models import ClientInstance, Feature, FeatureUsageBucket
from flagadmin.api.search import any_term

# Unleash's window for the applications that saw a flag and the flags an application saw.
SEEN_WITHIN = timedelta(hours=24)


def _hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _strategies(instances: QuerySet[ClientInstance]) -> list[str]:
    """The strategies the instances announced, in the order first announced."""
    found: dict[str, None] = {}
    for announced in instances.order_by("last_seen_at", "pk").values_list("strategies", flat=True):
        for name in announced or []:
            if isinstance(name, str):
                found.setdefault(name, None)
    return list(found)


@dataclass(frozen=True)
class Application:
    """An application as its instances' registrations make it: its name, when its first
    instance started (or was first seen) and when one was last seen. Unleash's description,
    url, colour and icon are not stored: always None."""

    app_name: str
    created_at: datetime
    updated_at: datetime
    description: None = None
    url: None = None
    color: None = None
    icon: None = None


def list_applications(
    *, terms: list[str], descending: bool, offset: int, limit: int
) -> tuple[list[Application], int]:
    """The applications whose name contains any of `terms` (all without terms), by name,
    `limit` of them from `offset`, and how many there are."""
    instances = ClientInstance.objects.all()
    if terms:
        instances = instances.filter(any_term(["app_name"], terms))
    apps = (
        instances.order_by()
        .values("app_name")
        .annotate(
            created=Min("started_at"), first_seen=Min("last_seen_at"), updated=Max("last_seen_at")
        )
    )
    apps = apps.order_by("-app_name" if descending else "app_name")
    total = apps.count()
    page = [
        Application(app["app_name"], app["created"] or app["first_seen"], app["updated"])
        for app in apps[offset : offset + limit]
    ]
    return page, total


def announced_by_instances(
    app_names: list[str],
) -> dict[str, tuple[list[str], list[str]]]:
    """For each application of `app_names`: the environments its instances run in (sorted) and
    the strategies they announced (in the order first announced). One query."""
    rows = ClientInstance.objects.filter(app_name__in=app_names)
    environments: dict[str, set[str]] = {}
    strategies: dict[str, dict[str, None]] = {}
    for name, environment, announced in rows.order_by("last_seen_at", "pk").values_list(
        "app_name", "environment", "strategies"
    ):
        environments.setdefault(name, set()).add(environment)
        for strategy in announced or []:
            if isinstance(strategy, str):
                strategies.setdefault(name, {}).setdefault(strategy, None)
    return {
        name: (sorted(found), list(strategies.get(name, {})))
        for name, found in environments.items()
    }


def application_detail(app_name: str) -> dict[str, Any] | None:
    """`applicationDetailSchema` for the application, its `instances` the `ClientInstance`
    rows (the view serialises them); None when no SDK registered it."""
    instances = ClientInstance.objects.filter(app_name=app_name)
    listed = list(instances.order_by("last_seen_at", "pk"))
    if not listed:
        return None
    names = _strategies(instances)
    definitions = {s.name: s for s in StrategyDefinition.objects.filter(name__in=names)}
    seen = list(
        FeatureUsageBucket.objects.filter(
            app_name=app_name, hour__gte=_hour(timezone.now() - SEEN_WITHIN)
        )
        .order_by("feature_name")
        .values_list("feature_name", flat=True)
        .distinct()
    )
    flags = {
        flag["name"]: flag
        for flag in Feature.objects.filter(name__in=seen).values(
            "name", "description", "type", "project", "stale", "created_at", "impression_data"
        )
    }
    started = [i.started_at for i in listed if i.started_at] or [listed[0].last_seen_at]
    return {
        "appName": app_name,
        "createdAt": min(started),
        "description": None,
        "url": None,
        "color": None,
        "icon": None,
        "strategies": [
            strategy_as_dict(definitions[name])
            if name in definitions
            else {"name": name, "notFound": True}
            for name in names
        ],
        "instances": listed,
        "seenToggles": [
            {
                "name": name,
                "description": flags[name]["description"],
                "type": flags[name]["type"],
                "project": flags[name]["project"],
                "stale": flags[name]["stale"],
                "createdAt": flags[name]["created_at"],
                "impressionData": flags[name]["impression_data"],
            }
            if name in flags
            else {"name": name, "notFound": True}
            for name in seen
        ],
        "links": {"self": f"/api/applications/{app_name}"},
    }


def feature_usage(name: str) -> dict[str, Any]:
    """`featureUsageSchema`: the flag's evaluations since an hour ago per environment, and the
    applications that reported it in the last 24 hours."""
    now = timezone.now()
    buckets = FeatureUsageBucket.objects.filter(feature_name=name)
    last_hour: dict[str, dict[str, Any]] = {}
    for environment, hour, yes, no in (
        buckets.filter(hour__gte=now - timedelta(hours=1))
        .order_by("environment", "hour")
        .values_list("environment", "hour")
        .annotate(yes=Sum("yes"), no=Sum("no"))
    ):
        usage = last_hour.setdefault(
            environment, {"environment": environment, "timestamp": hour, "yes": 0, "no": 0}
        )
        usage["yes"] += yes
        usage["no"] += no
    seen = (
        buckets.filter(hour__gte=_hour(now - SEEN_WITHIN))
        .order_by("app_name")
        .values_list("app_name", flat=True)
        .distinct()
    )
    return {
        "version": 1,
        "maturity": "stable",
        "featureName": name,
        "lastHourUsage": list(last_hour.values()),
        "seenApplications": list(seen),
    }


def raw_metrics(name: str, hours_back: int) -> list[dict[str, Any]]:
    """Unleash's `getClientMetricsForToggle`: every hour of the window for each environment
    and application that reported the flag in it, zeros where they did not."""
    current = _hour(timezone.now())
    hours = [current - timedelta(hours=back) for back in range(hours_back)]
    counts: dict[tuple[str, str, datetime], tuple[int, int]] = {}
    for environment, app, hour, yes, no in FeatureUsageBucket.objects.filter(
        feature_name=name, hour__gte=current - timedelta(hours=hours_back)
    ).values_list("environment", "app_name", "hour", "yes", "no"):
        counts[(environment, app, hour)] = (yes, no)
    environments = sorted({key[0] for key in counts})
    apps = sorted({key[1] for key in counts})[:100]
    rows = []
    for environment in environments:
        for app in apps:
            for hour in hours:
                yes, no = counts.get((environment, app, hour), (0, 0))
                rows.append(
                    {
                        "timestamp": hour,
                        "no": no,
                        "yes": yes,
                        "appName": app,
                        "environment": environment,
                        "featureName": name,
                    }
                )
    return sorted(rows, key=lambda row: row["timestamp"])  # stable, as Unleash's sort
