"""Bodies of the variant endpoints: a flag's variants in an environment (Unleash's `variantsSchema`,
a list of `variantSchema`; `pushVariantsSchema` for several environments; `featureVariantsSchema`
in answers), with Unleash's rules: its request schema's, its `variantsSchema` (Joi)'s, and its
`fixVariantWeights`'s, each as a 400 naming the failing property."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from features.serializers import VariantSchemaSerializer
from features.validators import (
    JS_NUMBER_RE,
    MAX_FLAG_NAME_LENGTH,
    MAX_WEIGHT,
    PAYLOAD_TYPES,
    WEIGHT_TYPES,
    variant_weights_problem,
)
from flagadmin.api.fields import (
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
    UrlFriendlyNameField,
)

NOT_JSON = "must be a JSON object or array (a string holding one) when `type` is json"
NOT_NUMBER = "must be a number (a string holding one) when `type` is number"


@extend_schema_serializer(component_name="createVariantPayloadSchema")
class CreateVariantPayloadSchemaSerializer(StrictSerializer):
    """What a variant hands the application besides its name."""

    type = StrictChoiceField(choices=PAYLOAD_TYPES)
    value = StrictCharField(
        help_text="Not empty; for `json` an object or array, for `number` a number."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # Unleash refuses a `json` value that holds no object or array (its validateJsonString).
        # It takes any text as a `number`, which an application reading a number then fails on:
        # refused here too.
        kind, value = attrs["type"], attrs["value"]
        if kind == "json" and not _is_json_structure(value):
            raise serializers.ValidationError({"value": [NOT_JSON]})
        if kind == "number" and not JS_NUMBER_RE.fullmatch(value):
            raise serializers.ValidationError({"value": [NOT_NUMBER]})
        return attrs


def _is_json_structure(text: str) -> bool:
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return isinstance(parsed, dict | list)


@extend_schema_serializer(component_name="createOverrideSchema")
class CreateOverrideSchemaSerializer(StrictSerializer):
    """Users who get this variant whatever the weights: those whose `contextName` field holds one
    of `values`."""

    contextName = StrictCharField(help_text="A context field, e.g. `userId`.")
    values = StrictListField(child=StrictCharField(), help_text="Not empty strings.")


@extend_schema_serializer(component_name="createVariantSchema")
class CreateVariantSchemaSerializer(StrictSerializer):
    """A variant of the flag in the environment."""

    name = UrlFriendlyNameField(
        max_length=MAX_FLAG_NAME_LENGTH, help_text="Unique among the flag's variants."
    )
    weight = StrictIntegerField(
        min_value=0,
        max_value=MAX_WEIGHT,
        help_text="Out of 1000; kept for `fix` variants, computed for `variable` ones.",
    )
    weightType = StrictChoiceField(
        choices=WEIGHT_TYPES,
        required=False,
        help_text="`variable` when left out (Unleash's schema default).",
    )
    stickiness = StrictCharField(
        required=False, help_text="The context field that keeps a user on a variant."
    )
    payload = CreateVariantPayloadSchemaSerializer(required=False)
    overrides = StrictListField(child=CreateOverrideSchemaSerializer(), required=False)


# A whole list of variants: its items, then what Unleash refuses of the list as a whole.
VARIANT_LIST = StrictListField(child=CreateVariantSchemaSerializer())


def check_variant_list(variants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`variants` (each valid) as plain dicts, or a DRF error tree rooted at the list: a name
    used twice (Unleash's Joi `unique`, case-sensitive: `a` and `A` are two variants), no
    `variable` variant, `fix` weights over 1000 (its `fixVariantWeights`)."""
    plain = [_plain(variant) for variant in variants]
    seen: set[str] = set()
    for index, variant in enumerate(plain):
        if variant["name"] in seen:
            raise serializers.ValidationError(
                {index: {"name": ["repeats the name of another variant (names are unique)"]}}
            )
        seen.add(variant["name"])
    if problem := variant_weights_problem(plain):
        raise serializers.ValidationError([problem])
    return plain


def _plain(variant: dict[str, Any]) -> dict[str, Any]:
    plain = dict(variant)
    if "payload" in plain:
        plain["payload"] = dict(plain["payload"])
    if "overrides" in plain:
        plain["overrides"] = [dict(override) for override in plain["overrides"]]
    return plain


@extend_schema_serializer(component_name="pushVariantsSchema")
class PushVariantsSchemaSerializer(StrictSerializer):
    """The same variants for the flag in several environments."""

    variants = StrictListField(
        child=CreateVariantSchemaSerializer(),
        default=list,
        help_text="Each without `weightType` is `variable`, without `stickiness` `default` "
        "(Unleash's defaults here). Left out: none.",
    )
    environments = StrictListField(
        child=StrictCharField(),
        allow_empty=False,
        help_text="Where to write them; each must be one of the flag's environments (a name "
        "given twice counts once).",
    )

    def validate_variants(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # Unleash's controller fills these in before its checks.
        return check_variant_list(
            [{"weightType": "variable", "stickiness": "default", **v} for v in value]
        )

    def validate_environments(self, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


@extend_schema_serializer(component_name="featureVariantsSchema")
class FeatureVariantsSchemaSerializer(serializers.Serializer):
    """A versioned list of a flag's variants."""

    version = serializers.IntegerField(help_text="Always 1.")
    variants = VariantSchemaSerializer(many=True)
