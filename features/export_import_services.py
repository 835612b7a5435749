"""Unleash's import and export of flags (its `export-import-service`), in its format.

`export_features` reads the flags of one environment with what they need (strategies with
their segments, state and variants, tags and tag types, the context fields the strategies and
variants name, dependencies); `validate_import` says what an import would refuse, warn about
and need, as Unleash's `validate`; `import_features` writes an export into a project's
environment through the services that write each kind of row, in one transaction: all or
nothing. See docs/export-import.md.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import transaction

from definitions.models import ContextField, StrategyDefinition
from definitions.services import create_context_field
from features.dependency_services import add_feature_dependency
from features.locks import lock_named_flags
from features.models import (
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureStrategy,
    FeatureTag,
    Segment,
    TagType,
)
from features.services import create_feature, set_feature_environment_variants
from features.services import update_feature_metadata as update_metadata
from features.strategy_services import (
    add_feature_strategy,
    delete_feature_strategy,
    set_feature_environment_enabled,
)
from features.tag_services import create_tag_type, tag_type_as_dict, update_feature_tags
from flagadmin.core.actors import Actor
from flagadmin.core.audit import record_event
from flagadmin.core.db import atomic_retrying_conflicts
from flagadmin.core.errors import InvalidInputError, NotFoundError, Problem
from projects.models import Environment, Project

FEATURES_EXPORTED = "features-exported"
FEATURES_IMPORTED = "features-imported"

# Unleash's display names of the permissions an import may need (its `permissions` table).
PERMISSION_NAMES = {
    "UPDATE_FEATURE": "Update feature flags",
    "CREATE_FEATURE": "Create feature flags",
    "CREATE_TAG_TYPE": "Create tag types",
    "CREATE_CONTEXT_FIELD": "Create context fields",
}

ADMIN_TOKEN_REFUSED = (
    "You can't use an admin token to import features. Please use either a personal access "
    "token (https://docs.getunleash.io/concepts/api-tokens-and-client-keys#personal-access-"
    "tokens) or a service account (https://docs.getunleash.io/concepts/service-accounts)."
)


class ImportRefused(InvalidInputError):
    """An import Unleash's `importVerify` refuses (its 400 `BadDataError`): a sentence, and
    one `{message}` per item where Unleash lists them."""

    def __init__(self, message: str, items: Sequence[str] = ()) -> None:
        super().__init__(*(Problem(item) for item in items), message=message)


# --- export -------------------------------------------------------------------------------


def check_environment(environment: str) -> None:
    """404 for an environment that does not exist (Unleash exports nothing from it and
    validates an import into it without a word: a typo would go unnoticed)."""
    if not Environment.objects.filter(pk=environment).exists():
        raise NotFoundError(f"Could not find environment {environment}")


def _export_names(*, features: list[str] | None, tag: str | None, project: str | None) -> list:
    """The flags an export names, as Unleash selects them: by a tag's value, by name (an empty
    list: every flag), or every active flag of a project."""
    if tag is not None:
        return list(FeatureTag.objects.filter(tag__value=tag).values_list("feature_id", flat=True))
    if features:
        return list(features)
    if project is not None:
        return list(
            Feature.objects.filter(project_id=project, archived_at__isnull=True).values_list(
                "name", flat=True
            )
        )
    return list(Feature.objects.filter(archived_at__isnull=True).values_list("name", flat=True))


def _strategy_export(strategy: FeatureStrategy) -> dict[str, Any]:
    return {
        "name": strategy.name,
        "id": str(strategy.id),
        "featureName": strategy.feature_environment.feature_id,
        "title": strategy.title,
        "parameters": strategy.parameters,
        "constraints": strategy.constraints,
        "variants": strategy.variants,
        "disabled": strategy.disabled,
        "segments": sorted(link.segment_id for link in strategy.segment_links.all()),
    }


def _used_context_names(strategies: Iterable[dict], environments: Iterable[dict]) -> set[str]:
    """The context fields Unleash's export carries: those a strategy's stickiness or
    constraints, or a variant's stickiness or overrides, name."""
    used: set[str] = set()
    for strategy in strategies:
        if stickiness := strategy["parameters"].get("stickiness"):
            used.add(stickiness)
        used.update(c.get("contextName") for c in strategy["constraints"])
    for entry in environments:
        for variant in entry["variants"]:
            used.add(variant.get("stickiness"))
            used.update(o.get("contextName") for o in variant.get("overrides") or [])
    return used


def export_features(
    *,
    environment: str,
    features: list[str] | None = None,
    tag: str | None = None,
    project: str | None = None,
    actor: Actor,
) -> dict[str, Any]:
    """The export of the selected flags from `environment` (Unleash's `exportResultSchema`);
    records `features-exported` with it, as Unleash does."""
    check_environment(environment)
    with transaction.atomic():
        names = _export_names(features=features, tag=tag, project=project)
        flags = list(Feature.objects.filter(name__in=names).order_by("name"))
        names = [flag.name for flag in flags]
        strategies = [
            _strategy_export(strategy)
            for strategy in FeatureStrategy.objects.filter(
                feature_environment__feature_id__in=names,
                feature_environment__environment_id=environment,
            )
            .select_related("feature_environment")
            .prefetch_related("segment_links")
            .order_by("feature_environment__feature_id", "sort_order", "created_at", "id")
        ]
        environments = [
            {
                "enabled": entry.enabled,
                "featureName": entry.feature_id,
                "environment": entry.environment_id,
                "variants": entry.variants,
                "name": entry.feature_id,
            }
            for entry in FeatureEnvironment.objects.filter(
                feature_id__in=names, environment_id=environment
            ).order_by("feature_id")
        ]
        used = _used_context_names(strategies, environments)
        context_fields = [
            {
                "name": field.name,
                "description": field.description,
                "stickiness": field.stickiness,
                "sortOrder": field.sort_order,
                "legalValues": field.legal_values or [],
            }
            for field in ContextField.objects.filter(name__in=used).order_by("sort_order", "name")
        ]
        feature_tags = [
            {"featureName": feature, "tagType": tag_type, "tagValue": value}
            for feature, tag_type, value in FeatureTag.objects.filter(feature_id__in=names)
            .order_by("feature_id", "tag__type_id", "tag__value")
            .values_list("feature_id", "tag__type_id", "tag__value")
        ]
        segment_ids = {segment for strategy in strategies for segment in strategy["segments"]}
        segments = [
            {"id": segment.id, "name": segment.name}
            for segment in Segment.objects.filter(id__in=segment_ids).order_by("id")
        ]
        tag_types = [
            {
                key: tag_type_as_dict(tag_type)[key]
                for key in ("name", "description", "icon", "color")
            }
            for tag_type in TagType.objects.filter(
                name__in={tag["tagType"] for tag in feature_tags}
            ).order_by("name")
        ]
        parents: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for dependency in FeatureDependency.objects.filter(child_id__in=names).order_by(
            "child_id", "parent_id"
        ):
            parents[dependency.child_id].append(
                {
                    "feature": dependency.parent_id,
                    "enabled": dependency.enabled,
                    "variants": dependency.variants,
                }
            )
        result = {
            "features": [
                {
                    "name": flag.name,
                    "description": flag.description,
                    "type": flag.type,
                    "project": flag.project_id,
                    "stale": flag.stale,
                    "impressionData": flag.impression_data,
                    "archived": flag.archived_at is not None,
                }
                for flag in flags
            ],
            "featureStrategies": strategies,
            "featureEnvironments": environments,
            "contextFields": context_fields,
            "featureTags": feature_tags,
            "segments": segments,
            "tagTypes": tag_types,
            "dependencies": [
                {"feature": child, "dependencies": list_}
                for child, list_ in sorted(parents.items())
            ],
            # Unleash's flag links: this server keeps none.
            "links": [],
        }
        record_event(FEATURES_EXPORTED, actor=actor, data=result)
    return result


# --- what an import would do ----------------------------------------------------------------


class _Plan:
    """An import's data read against the database once: what exists, what is archived, what
    lives elsewhere (Unleash's store queries of `validate` and `importVerify`)."""

    def __init__(self, project_id: str, environment: str, data: dict[str, Any]) -> None:
        self.project_id = project_id
        self.environment = environment
        self.data = data
        self.names = [feature["name"] for feature in data["features"]]
        found = Feature.objects.filter(name__in=set(self.names)).values_list(
            "name", "project_id", "archived_at"
        )
        self.stored = {name: (project, archived) for name, project, archived in found}
        definitions = dict(StrategyDefinition.objects.values_list("name", "built_in"))
        self.definitions = definitions
        self.context_fields = {
            field.name: field
            for field in ContextField.objects.filter(
                name__in={f["name"] for f in data.get("contextFields") or []}
            )
        }

    # Unleash's order of items is the order of the data; each list is as it words it.

    def archived(self) -> list[str]:
        return [
            name
            for name in dict.fromkeys(self.names)
            if name in self.stored and self.stored[name][1] is not None
        ]

    def existing_in_project(self) -> list[str]:
        return [
            name
            for name in dict.fromkeys(self.names)
            if name in self.stored
            and self.stored[name][0] == self.project_id
            and self.stored[name][1] is None
        ]

    def in_other_projects(self) -> list[str]:
        return [
            f"{name} (in project {self.stored[name][0]})"
            for name in dict.fromkeys(self.names)
            if name in self.stored and self.stored[name][0] != self.project_id
        ]

    def duplicates(self) -> list[str]:
        return [name for name, count in Counter(self.names).items() if count > 1]

    def unsupported_strategies(self) -> list[str]:
        return [
            strategy["name"]
            for strategy in self.data["featureStrategies"]
            if strategy["name"] not in self.definitions
        ]

    def strategies_of_other_flags(self) -> list[str]:
        names = set(self.names)
        return list(
            dict.fromkeys(
                strategy["feature_name"]
                for strategy in self.data["featureStrategies"]
                if strategy["feature_name"] not in names
            )
        )

    def custom_strategies(self) -> list[str]:
        names = dict.fromkeys(strategy["name"] for strategy in self.data["featureStrategies"])
        return [name for name in names if self.definitions.get(name) is False]

    def unsupported_context_fields(self) -> list[str]:
        """Fields whose legal values the existing field of that name does not all have."""
        unsupported = []
        for field in self.data.get("contextFields") or []:
            existing = self.context_fields.get(field["name"])
            if existing is None:
                continue
            known = {item.get("value") for item in existing.legal_values or []}
            if any(item["value"] not in known for item in field.get("legalValues") or []):
                unsupported.append(field["name"])
        return unsupported

    def new_context_fields(self) -> list[dict[str, Any]]:
        new = {}
        for field in self.data.get("contextFields") or []:
            if field["name"] not in self.context_fields:
                new.setdefault(field["name"], field)
        return list(new.values())

    def new_tag_types(self) -> list[dict[str, Any]]:
        known = set(
            TagType.objects.filter(name__in={t["name"] for t in self.data["tagTypes"]}).values_list(
                "name", flat=True
            )
        )
        new = {}
        for tag_type in self.data["tagTypes"]:
            if tag_type["name"] not in known:
                new.setdefault(tag_type["name"], tag_type)
        return list(new.values())

    def segment_ids(self) -> dict[int, int | None]:
        """The export's segment ids mapped to this server's segments of the same name
        (usable in the project), as Unleash's `remapSegments`; None for one that is missing."""
        wanted = {segment["name"] for segment in self.data.get("segments") or []}
        usable = {
            segment.name: segment.id
            for segment in Segment.objects.filter(name__in=wanted)
            if segment.project_id in (None, self.project_id)
        }
        return {s["id"]: usable.get(s["name"]) for s in self.data.get("segments") or []}

    def unsupported_segments(self) -> list[str]:
        mapping = self.segment_ids()
        return [s["name"] for s in self.data.get("segments") or [] if mapping[s["id"]] is None]

    def missing_dependencies(self) -> list[str]:
        parents = [
            parent["feature"]
            for dependency in self.data.get("dependencies") or []
            for parent in dependency["dependencies"]
        ]
        outside = [name for name in parents if name not in set(self.names)]
        stored = set(Feature.objects.filter(name__in=outside).values_list("name", flat=True))
        return [name for name in outside if name not in stored]

    def missing_permissions(self, has_permission: Callable[[str], bool]) -> list[str]:
        """Unleash's `getMissingPermissions`, with this server's permissions: strategies and
        variants are changed under `UPDATE_FEATURE`."""
        needed = ["UPDATE_FEATURE"]
        if self.new_tag_types():
            needed.append("CREATE_TAG_TYPE")
        if self.new_context_fields():
            needed.append("CREATE_CONTEXT_FIELD")
        if any(name not in self.stored for name in self.names):
            needed.append("CREATE_FEATURE")
        return [PERMISSION_NAMES[name] for name in needed if not has_permission(name)]


def _item(message: str, items: list[str]) -> list[dict[str, Any]]:
    return [{"message": message, "affectedItems": items}] if items else []


def check_target(project_id: str, environment: str) -> Project:
    """The active project, with `environment` among its environments; 404 otherwise (Unleash
    validates an import into a project or an environment that does not exist)."""
    project = Project.objects.filter(pk=project_id, archived_at__isnull=True).first()
    if project is None:
        raise NotFoundError(f"Active project with id {project_id} does not exist")
    check_environment(environment)
    if not project.environments.filter(pk=environment).exists():
        raise NotFoundError(f"Environment {environment} is not enabled in project {project_id}")
    return project


def validate_import(
    *,
    project_id: str,
    environment: str,
    data: dict[str, Any],
    has_permission: Callable[[str], bool],
) -> dict[str, list[dict[str, Any]]]:
    """Unleash's `validate`: what the import would refuse (`errors`), what it would overwrite
    or skip (`warnings`), and the permissions the caller lacks for it, in Unleash's words."""
    check_target(project_id, environment)
    plan = _Plan(project_id, environment, data)
    errors = [
        *_item(
            "We detected the following custom strategy that needs to be created first:",
            plan.unsupported_strategies(),
        ),
        *_item(
            "We detected the following context fields that do not have matching legal values "
            "with the imported ones:",
            plan.unsupported_context_fields(),
        ),
        *_item(
            "You cannot import a features that already exist in other projects. You already "
            f"have the following features defined outside of project {project_id}:",
            plan.in_other_projects(),
        ),
        *_item(
            "We detected the following features are duplicate in your import data:",
            plan.duplicates(),
        ),
        *_item(
            "We detected the following segments that need to be created first:",
            plan.unsupported_segments(),
        ),
        *_item(
            "We detected the following dependencies that need to be created first:",
            plan.missing_dependencies(),
        ),
    ]
    warnings = [
        *_item(
            "The following strategy types will be used in import. Please make sure the "
            "strategy type parameters are configured as in source environment:",
            plan.custom_strategies(),
        ),
        *_item(
            "The following features will not be imported as they are currently archived. To "
            "import them, please unarchive them first:",
            plan.archived(),
        ),
        *_item(
            "The following features already exist in this project and will be overwritten:",
            plan.existing_in_project(),
        ),
    ]
    permissions = _item(
        "We detected you are missing the following permissions:",
        plan.missing_permissions(has_permission),
    )
    return {"errors": errors, "warnings": warnings, "permissions": permissions}


# --- import ---------------------------------------------------------------------------------


def _without_archived(data: dict[str, Any], archived: set[str]) -> dict[str, Any]:
    """Unleash's `removeArchivedFeatures`: archived flags, and what names them, are skipped."""
    tags = [t for t in data.get("featureTags") or [] if t["featureName"] not in archived]
    return {
        **data,
        "features": [f for f in data["features"] if f["name"] not in archived],
        "featureEnvironments": [
            e
            for e in data.get("featureEnvironments") or []
            if (e.get("featureName") or e.get("name")) not in archived
        ],
        "featureStrategies": [
            s
            for s in data["featureStrategies"]
            if s.get("feature_name") and s["feature_name"] not in archived
        ],
        "featureTags": tags,
        "tagTypes": [
            t for t in data["tagTypes"] if t["name"] in {tag.get("tagType") for tag in tags}
        ],
    }


def _verify(plan: _Plan, has_permission: Callable[[str], bool]) -> None:
    """Unleash's `importVerify`, its refusals in its order and words (and duplicates, which
    Unleash only reports in `validate` and then fails on with a 409 halfway)."""
    if strays := plan.strategies_of_other_flags():
        # Unleash would add them to whatever flag of that name the project has, or fail.
        raise ImportRefused(
            "Some strategies name flags that are not in the import: " + ", ".join(strays)
        )
    if unsupported := plan.unsupported_strategies():
        raise ImportRefused(
            "Some of the strategies you are trying to import are not supported.",
            [f"{name} is not supported." for name in unsupported],
        )
    if unsupported := plan.unsupported_context_fields():
        raise ImportRefused(
            "Some of the context fields you are trying to import are not supported.",
            [f"{name} is not supported." for name in unsupported],
        )
    if missing := plan.missing_permissions(has_permission):
        raise MissingImportPermissions(missing)
    if elsewhere := plan.in_other_projects():
        raise ImportRefused(
            f"These features exist already in other projects: {', '.join(elsewhere)}"
        )
    if duplicates := plan.duplicates():
        raise ImportRefused(
            "We detected the following features are duplicate in your import data: "
            + ", ".join(duplicates)
        )
    if unsupported := plan.unsupported_segments():
        raise ImportRefused(f"Unsupported segments: {', '.join(unsupported)}")
    if missing := plan.missing_dependencies():
        raise ImportRefused(f"The following dependent features are missing: {', '.join(missing)}")


class MissingImportPermissions(Exception):
    """The caller lacks permissions an import needs (Unleash's 403 `PermissionError`); the
    API layer answers 403 naming the first."""

    def __init__(self, missing: Sequence[str]) -> None:
        self.missing = list(missing)
        super().__init__(", ".join(self.missing))


def import_features(
    *,
    project_id: str,
    environment: str,
    data: dict[str, Any],
    has_permission: Callable[[str], bool],
    actor: Actor,
) -> None:
    """Import an export into the project's environment, as Unleash's `import` does, in one
    transaction: the flags created or updated (`feature-created`,
    `feature-metadata-updated`), the environment variants set, new tag types and tags, new
    context fields, the environment's strategies of those flags replaced
    (`feature-strategy-remove`, `feature-strategy-add`), each flag turned on or off there,
    the dependencies added; then `features-imported`. Archived flags are skipped."""
    check_target(project_id, environment)

    def run() -> None:
        stored = Feature.objects.filter(
            name__in={f["name"] for f in data["features"]}, archived_at__isnull=False
        ).values_list("name", flat=True)
        cleaned = _without_archived(data, set(stored))
        plan = _Plan(project_id, environment, cleaned)
        _verify(plan, has_permission)
        _write(plan, actor)
        record_event(FEATURES_IMPORTED, actor=actor, project=project_id, environment=environment)

    atomic_retrying_conflicts(run)


def _write(plan: _Plan, actor: Actor) -> None:
    data, project_id, environment = plan.data, plan.project_id, plan.environment
    parents = [
        parent["feature"]
        for dependency in data.get("dependencies") or []
        for parent in dependency["dependencies"]
    ]
    # The flags first, by name (docs/lock-order.md), with the parents they will refer to.
    flags = lock_named_flags(project_id, sorted({*plan.names, *parents}))
    for feature in data["features"]:
        fields = {
            "description": feature.get("description"),
            "type": feature.get("type") or "release",
            "impression_data": bool(feature.get("impressionData")),
        }
        current = flags.get(feature["name"])
        if current is None:
            current = create_feature(
                project_id=project_id, name=feature["name"], actor=actor, **fields
            )
        if current.stale != bool(feature.get("stale")) or any(
            getattr(current, key) != value for key, value in fields.items()
        ):
            current = update_metadata(
                feature=current, stale=bool(feature.get("stale")), actor=actor, **fields
            )
        flags[feature["name"]] = current

    entries = data.get("featureEnvironments") or []
    for entry in entries:
        name = entry.get("featureName")
        if name in flags and entry.get("variants"):
            set_feature_environment_variants(
                feature=flags[name],
                environment=environment,
                variants=entry["variants"],
                actor=actor,
            )

    for tag_type in plan.new_tag_types():
        create_tag_type(fields={k: v for k, v in tag_type.items() if v is not None}, actor=actor)
    wanted: dict[str, set[tuple[str, str]]] = {name: set() for name in plan.names}
    for tag in data.get("featureTags") or []:
        if tag.get("tagType") and tag["featureName"] in wanted:
            wanted[tag["featureName"]].add((tag["tagType"], tag["tagValue"]))
    held: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for feature, tag_type, value in FeatureTag.objects.filter(
        feature_id__in=plan.names
    ).values_list("feature_id", "tag__type_id", "tag__value"):
        held[feature].add((tag_type, value))
    for name in dict.fromkeys(plan.names):
        added, removed = wanted[name] - held[name], held[name] - wanted[name]
        if added or removed:
            update_feature_tags(
                feature=flags[name], added=sorted(added), removed=sorted(removed), actor=actor
            )

    for field in plan.new_context_fields():
        fields = {"name": field["name"]}
        for key in ("description", "legalValues", "stickiness"):
            if field.get(key) is not None:
                fields[key] = field[key]
        create_context_field(fields=fields, actor=actor)

    for strategy in (
        FeatureStrategy.objects.filter(
            feature_environment__feature_id__in=plan.names,
            feature_environment__environment_id=environment,
        )
        .select_related("feature_environment")
        .order_by("feature_environment__feature_id", "sort_order", "id")
    ):
        delete_feature_strategy(
            feature=flags[strategy.feature_environment.feature_id],
            environment=environment,
            strategy=strategy,
            actor=actor,
        )
    segment_ids = plan.segment_ids()
    for strategy in data["featureStrategies"]:
        add_feature_strategy(
            feature=flags[strategy["feature_name"]],
            environment=environment,
            name=strategy["name"],
            parameters=strategy["parameters"],
            constraints=strategy["constraints"],
            variants=strategy["variants"],
            segments=[segment_ids[s] for s in strategy["segments"] if segment_ids.get(s)],
            title=strategy["title"],
            disabled=strategy["disabled"],
            sort_order=strategy["sort_order"],
            actor=actor,
        )
    for entry in entries:
        name = entry.get("featureName") or entry.get("name")
        if name in flags:
            set_feature_environment_enabled(
                feature=flags[name], environment=environment, enabled=entry["enabled"], actor=actor
            )
    imported = set(plan.names)
    for dependency in data.get("dependencies") or []:
        if dependency["feature"] not in imported:
            continue
        for parent in dependency["dependencies"]:
            add_feature_dependency(
                project_id=project_id,
                child_name=dependency["feature"],
                parent_name=parent["feature"],
                enabled=parent["enabled"],
                variants=parent["variants"],
                actor=actor,
            )
