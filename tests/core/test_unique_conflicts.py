"""`flagadmin.core.db.unique_or_conflict`: the race a pre-check cannot see (a concurrent request
took the value in between) becomes the pre-check's own error; any other IntegrityError stays one."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from flagadmin.api.errors import NameExistsError
from flagadmin.core.db import unique_or_conflict
from groups.models import Group
from tests.factories import GroupFactory


def _taken(name: str) -> NameExistsError | None:
    return NameExistsError("taken") if Group.objects.filter(name=name).exists() else None


def test_unique_or_conflict__value_taken_meanwhile__conflict_error_and_transaction_usable(db):
    GroupFactory(name="race")

    with transaction.atomic():
        with (
            pytest.raises(NameExistsError, match="taken"),
            unique_or_conflict(lambda: _taken("race")),
        ):
            Group.objects.create(name="race")
        # Only the savepoint rolled back: the transaction goes on.
        Group.objects.create(name="other")

    assert sorted(Group.objects.values_list("name", flat=True)) == ["other", "race"]


def test_unique_or_conflict__other_integrity_error__raised_as_it_is(db):
    GroupFactory(name="race")

    with pytest.raises(IntegrityError), unique_or_conflict(lambda: None):
        Group.objects.create(name="race")
