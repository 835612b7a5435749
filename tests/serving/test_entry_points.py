"""The human entry points: `/` points to the documentation and the admin; `/admin` and `/docs`
without their trailing slash redirect instead of answering the API's 404."""

from __future__ import annotations

import pytest
from django.test import Client

from flagadmin.core.models import Role
from tests.factories import UserFactory


@pytest.mark.parametrize(
    ("path", "location"),
    [
        pytest.param("/admin", "/admin/", id="admin"),
        pytest.param("/docs", "/docs/", id="docs"),
    ],
)
def test_entry_point__without_slash__redirects(db, path, location):
    response = Client().get(path)

    assert response.status_code == 301
    assert response["Location"] == location


def test_root__small_page_pointing_to_docs_and_admin(db):
    response = Client().get("/")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    page = response.content.decode()
    assert '<a href="/docs/">API documentation</a>' in page
    assert '<a href="/admin/">Django admin</a>' in page


def test_admin__view_site_link_points_to_the_root_page(db):
    client = Client()
    client.force_login(UserFactory(root_role_id=Role.ADMIN))

    response = client.get("/admin/")

    assert response.status_code == 200
    assert '<a href="/">View site</a>' in response.content.decode()


def test_admin__one_groups_entry_with_human_labels(db):
    client = Client()
    client.force_login(UserFactory(root_role_id=Role.ADMIN))

    page = client.get("/admin/").content.decode()

    assert page.count(">Groups<") == 1  # the user groups, once
    assert "/admin/auth/group/" not in page
    assert ">API tokens<" in page


def test_favicon__served_without_a_session(db):
    # Browsers ask every site for it: a 404 here was logged on each first admin page.
    response = Client().get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] in ("image/x-icon", "image/vnd.microsoft.icon")
    content = b"".join(response.streaming_content)
    assert content[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert len(content) < 1024
