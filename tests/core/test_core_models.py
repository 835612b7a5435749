"""Database rules of the core models."""

import pytest
from django.db import IntegrityError

from tests.factories import UserFactory


@pytest.mark.parametrize(
    ("field", "first", "second"),
    [
        pytest.param("username", "Bob", "bob", id="username"),
        pytest.param("email", "Bob@Example.com", "bob@example.com", id="email"),
    ],
)
def test_user__same_name_in_another_case__rejected_by_the_database(db, field, first, second):
    UserFactory(**{field: first})
    with pytest.raises(IntegrityError):
        UserFactory(**{field: second})
