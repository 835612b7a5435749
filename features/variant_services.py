"""A flag's variants in its environments (Unleash's environment variants), written as Unleash 8.2
writes them: weights fixed and the list sorted (`features.variants.fix_variant_weights`), one
`feature-environment-variants-updated` event per environment with the variants before and
after, in the transaction that stores them (so the client payload's revision moves with them).

Unleash 8.2 deprecates environment variants in favour of strategy variants: replacing or
patching them in one environment (PUT, PATCH) is refused while no environment of the flag has
any (403 `InvalidOperationError`), unless its `enableLegacyVariants` flag is on, which it is not
by default. Its batch endpoint (`variants-batch`) has no such check, and neither has this one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction

from features.locks import FeatureEnvironmentNotFound, lock_flag_environment
from features.models import Feature, FeatureEnvironment
from features.services import store_environment_variants
from features.variants import fix_variant_weights
from flagadmin.core.actors import Actor
from flagadmin.core.errors import InvalidOperationError, NotFoundError


def not_in_environment(feature: Feature, environment: str) -> NotFoundError:
    """Unleash's 404 for a flag without that environment (unknown, or not in its project)."""
    return NotFoundError(f"Could not find {feature.name} in {environment}")


def environment_variants(feature: Feature, environment: str) -> list[dict[str, Any]]:
    """The flag's variants in `environment`, as stored (sorted by name); 404 when the flag has
    no such environment."""
    found = (
        FeatureEnvironment.objects.filter(feature=feature, environment_id=environment)
        .values_list("variants", flat=True)
        .first()
    )
    if found is None:
        raise not_in_environment(feature, environment)
    return found


def _locked(feature: Feature, environment: str) -> FeatureEnvironment:
    try:
        return lock_flag_environment(feature, environment)
    except FeatureEnvironmentNotFound:
        raise not_in_environment(feature, environment) from None


def _check_legacy_variants_in_use(feature: Feature) -> None:
    """Unleash's `verifyLegacyVariants`: environment variants are changed one environment at a
    time only for a flag that has some already."""
    if not FeatureEnvironment.objects.filter(feature=feature).exclude(variants=[]).exists():
        raise InvalidOperationError(
            f"Environment variants deprecated for feature: {feature.name}. Use strategy "
            "variants instead."
        )


def set_environment_variants(
    *, feature: Feature, environment: str, variants: list[dict[str, Any]], actor: Actor
) -> list[dict[str, Any]]:
    """Replace the flag's variants in `environment` (Unleash's
    `overwriteEnvironmentFeatureVariants`) and return them as stored. 404 without that
    environment; 403 `InvalidOperationError` while the flag has no variants anywhere (see the
    module's doc)."""
    fixed = fix_variant_weights(variants)
    with transaction.atomic():
        state = _locked(feature, environment)
        _check_legacy_variants_in_use(feature)
        store_environment_variants(state, feature, fixed, actor=actor)
    return fixed


def patch_environment_variants(
    *,
    feature: Feature,
    environment: str,
    patch: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    actor: Actor,
) -> list[dict[str, Any]]:
    """Replace the flag's variants in `environment` with `patch(the variants stored)` (a JSON
    Patch applied and its result validated by the caller), computed under the flag
    environment's lock, so that two patches apply one after the other and neither is lost.
    Refused as `set_environment_variants`; returns the variants as stored."""
    with transaction.atomic():
        state = _locked(feature, environment)
        _check_legacy_variants_in_use(feature)
        fixed = fix_variant_weights(patch(list(state.variants)))
        store_environment_variants(state, feature, fixed, actor=actor)
    return fixed


def set_variants_in_environments(
    *,
    feature: Feature,
    environments: Sequence[str],
    variants: list[dict[str, Any]],
    actor: Actor,
) -> list[dict[str, Any]]:
    """The same variants for the flag in each of `environments` (Unleash's
    `overwriteFeatureVariantsOnEnvironments`), all or none, one event per environment in the
    order given; returns them as stored. 404 for an environment the flag does not have (Unleash
    would add the flag to an environment of another project's, and answers 500 for an unknown
    one after writing the events of the others)."""
    fixed = fix_variant_weights(variants)
    with transaction.atomic():
        # Locked in one order (by name), as every writer of several flag environments locks.
        locked = {name: _locked(feature, name) for name in sorted(set(environments))}
        for name in environments:
            store_environment_variants(locked[name], feature, fixed, actor=actor)
    return fixed
