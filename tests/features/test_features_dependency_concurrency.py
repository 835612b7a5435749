"""A flag page that makes a flag depend on a parent, beside an archive of that parent: each
answers as it would alone or refuses as Unleash refuses (the dependency or the archive), and
no deadlock surfaces (the page locks the parents it names first, as `lock_flag_for_edit` says)."""

from __future__ import annotations

import threading

import pytest
from django.test import Client
from rest_framework.test import APIClient

from features.models import Feature, FeatureDependency
from flagadmin.core.models import Role, TokenType
from tests.admin_forms import change_form_data
from tests.concurrency import concurrent_db, run_together
from tests.factories import FeatureFactory, UserFactory, make_token

ROUNDS = 12


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
def test_flag_page_adds_a_parent_while_the_parent_is_archived__no_deadlock():
    staff_user = UserFactory(root_role_id=Role.ADMIN)
    token = make_token(TokenType.ADMIN, name="archiver")[1]
    pages = {}
    for round_number in range(ROUNDS):
        FeatureFactory(name=f"parent-{round_number:02d}")
        FeatureFactory(name=f"child-{round_number:02d}")
    staff = Client()
    staff.force_login(staff_user)
    for round_number in range(ROUNDS):
        child, parent = f"child-{round_number:02d}", f"parent-{round_number:02d}"
        pages[round_number] = change_form_data(
            staff.get(f"/admin/features/feature/{child}/change/"),
            **{
                "dependencies-TOTAL_FORMS": "1",
                "dependencies-0-parent": parent,
                "dependencies-0-child": child,
                "dependencies-0-enabled": "on",
            },
        )
    start = threading.Barrier(2)

    def work(index: int) -> list[tuple[int, int]]:
        answers = []
        if index == 0:
            client = Client()
            client.force_login(staff_user)
        else:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=token)
        for round_number in range(ROUNDS):
            start.wait(timeout=30)
            if index == 0:
                url = f"/admin/features/feature/child-{round_number:02d}/change/"
                answers.append((round_number, client.post(url, pages[round_number]).status_code))
            else:
                url = f"/api/admin/projects/default/features/parent-{round_number:02d}"
                answers.append((round_number, client.delete(url).status_code))
        return answers

    page_answers, archive_answers = run_together(2, work)

    for (round_number, page), (_, archive) in zip(page_answers, archive_answers, strict=True):
        parent = Feature.objects.get(name=f"parent-{round_number:02d}")
        depends = FeatureDependency.objects.filter(
            child_id=f"child-{round_number:02d}", parent=parent
        ).exists()
        # The dependency first: the page saves it (302) and the archive is refused (403). The
        # archive first: it is done (202) and the page refuses the parent, in its form (200)
        # or, archived after the form was checked, on saving (302, with the reason shown).
        # Never both a dependency and an archived parent.
        assert (page, archive, depends, parent.archived_at is not None) in [
            (302, 403, True, False),
            (200, 202, False, True),
            (302, 202, False, True),
        ], (round_number, page, archive, depends)
