from tests.conftest import assert_error


def test_unknown_path_without_credentials__401(anon_client, db):
    assert_error(anon_client.get("/api/admin/nope"), 401, "AuthenticationRequired")


def test_unknown_path__404(admin_client):
    body = assert_error(admin_client.get("/api/admin/nope"), 404, "NotFoundError")
    assert body["message"] == "The path you were looking for (/api/admin/nope) is not available."
