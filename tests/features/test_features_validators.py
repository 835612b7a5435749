"""Shape checks of the value objects stored in JSON columns (strategy parameters, constraints,
strategy variants, flag variants, dependency variants), which every write path runs."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from features.validators import (
    validate_constraints,
    validate_dependency_variants,
    validate_flag_name,
    validate_parameters,
    validate_strategy_variants,
    validate_variants,
)

VARIANT = {"name": "blue", "weight": 500, "weightType": "variable", "stickiness": "default"}


@pytest.mark.parametrize(
    ("validator", "value"),
    [
        pytest.param(validate_parameters, {}, id="parameters-empty"),
        pytest.param(validate_parameters, {"rollout": "50"}, id="parameters"),
        pytest.param(validate_constraints, [], id="constraints-empty"),
        pytest.param(
            validate_constraints,
            [{"contextName": "appName", "operator": "IN", "values": ["a"], "inverted": True}],
            id="constraint-values",
        ),
        pytest.param(
            validate_constraints,
            [{"contextName": "version", "operator": "SEMVER_GT", "value": "1.2.3"}],
            id="constraint-value",
        ),
        pytest.param(validate_strategy_variants, [VARIANT], id="strategy-variant"),
        pytest.param(
            validate_strategy_variants,
            [{**VARIANT, "payload": {"type": "json", "value": "{}"}}],
            id="strategy-variant-payload",
        ),
        pytest.param(validate_variants, [{"name": "a", "weight": 1000}], id="variant-minimal"),
        pytest.param(
            validate_variants,
            [
                {
                    "name": "a",
                    "weight": 333.3,
                    "weightType": "fix",
                    "overrides": [{"contextName": "userId", "values": ["1"]}],
                },
                {"name": "b", "weight": 0, "weightType": "variable", "stickiness": "userId"},
            ],
            id="variant-full",
        ),
        pytest.param(validate_dependency_variants, ["a", "b"], id="dependency-variants"),
        pytest.param(validate_flag_name, "it's-(ok)!~*", id="flag-name"),
    ],
)
def test_validators__valid_shapes_pass(validator, value):
    validator(value)


@pytest.mark.parametrize(
    ("validator", "value", "message"),
    [
        pytest.param(validate_parameters, [], "parameters must be object", id="params-list"),
        pytest.param(
            validate_parameters, {"rollout": 50}, "parameters/rollout must be string", id="param"
        ),
        pytest.param(validate_constraints, {}, "constraints must be array", id="constraints"),
        pytest.param(
            validate_constraints,
            [{"operator": "IN"}],
            "constraints/0/contextName is required",
            id="constraint-context",
        ),
        pytest.param(
            validate_constraints,
            [{"contextName": "a", "operator": "LIKE"}],
            "constraints/0/operator must be one of",
            id="constraint-operator",
        ),
        pytest.param(
            validate_constraints,
            [{"contextName": "a", "operator": "IN", "values": [1]}],
            "constraints/0/values/0 must be string",
            id="constraint-values",
        ),
        pytest.param(
            validate_constraints,
            [{"contextName": "a", "operator": "IN", "inverted": "yes"}],
            "constraints/0/inverted must be boolean",
            id="constraint-inverted",
        ),
        # What Unleash refuses in a well-shaped constraint: the Django admin's writes too.
        pytest.param(
            validate_constraints,
            [{"contextName": "a", "operator": "IN"}],
            "constraints/0/values must NOT have fewer than 1 items",
            id="constraint-in-without-values",
        ),
        pytest.param(
            validate_constraints,
            [{"contextName": "a", "operator": "NUM_GT", "value": "ten"}],
            "constraints/0/value must be a number",
            id="constraint-num-not-a-number",
        ),
        pytest.param(
            validate_constraints,
            [{"contextName": "a", "operator": "SEMVER_GT", "value": "1.2"}],
            "constraints/0/value must be a semantic version",
            id="constraint-semver",
        ),
        pytest.param(
            validate_strategy_variants,
            [{**VARIANT, "weight": 1001}],
            "variants/0/weight must be between 0 and 1000",
            id="strategy-variant-weight",
        ),
        pytest.param(
            validate_strategy_variants,
            [{**VARIANT, "weight": 1.5}],
            "variants/0/weight must be integer",
            id="strategy-variant-weight-float",
        ),
        pytest.param(
            validate_strategy_variants,
            [{k: v for k, v in VARIANT.items() if k != "stickiness"}],
            "variants/0/stickiness is required",
            id="strategy-variant-stickiness",
        ),
        pytest.param(
            validate_strategy_variants,
            [{**VARIANT, "payload": {"type": "xml", "value": ""}}],
            "variants/0/payload/type must be one of",
            id="strategy-variant-payload",
        ),
        pytest.param(
            validate_variants,
            [{"name": "a", "weight": 10}, {"name": "a", "weight": 10}],
            'variants/1/name repeats the variant name "a"',
            id="variant-duplicate",
        ),
        pytest.param(
            validate_variants,
            [{"name": "a", "weight": True}],
            "variants/0/weight must be number",
            id="variant-weight-bool",
        ),
        pytest.param(
            validate_variants,
            [{"name": "a", "weight": 10, "overrides": [{"contextName": "userId"}]}],
            "variants/0/overrides/0/values is required",
            id="variant-override",
        ),
        pytest.param(
            validate_variants,
            [
                {"name": "a", "weight": 600, "weightType": "fix"},
                {"name": "b", "weight": 600, "weightType": "fix"},
                {"name": "c", "weight": 0, "weightType": "variable"},
            ],
            "variants must not have fix weights adding up to more than 1000",
            id="variant-fixed-total",
        ),
        pytest.param(
            validate_variants,
            [{"name": "a", "weight": 600, "weightType": "fix"}],
            'variants must contain at least one "variable" variant',
            id="variant-none-variable",
        ),
        pytest.param(
            validate_strategy_variants,
            [{**VARIANT, "weightType": "fix"}],
            'variants must contain at least one "variable" variant',
            id="strategy-variant-none-variable",
        ),
        pytest.param(
            validate_dependency_variants, [1], "variants/0 must be string", id="dependency"
        ),
        pytest.param(validate_flag_name, "a b", "URL friendly", id="flag-name-space"),
        pytest.param(validate_flag_name, "..", "URL friendly", id="flag-name-dot-dot"),
        # JavaScript's `$` does not match before a final newline: Unleash refuses these.
        pytest.param(validate_flag_name, "a\n", "URL friendly", id="flag-name-final-newline"),
        pytest.param(validate_flag_name, "a\x01", "URL friendly", id="flag-name-control"),
        pytest.param(validate_flag_name, "x" * 101, "at most 100", id="flag-name-long"),
    ],
)
def test_validators__bad_shapes_name_the_path(validator, value, message):
    with pytest.raises(ValidationError) as error:
        validator(value)

    assert message in error.value.messages[0]
