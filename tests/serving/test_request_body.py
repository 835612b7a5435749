"""flagadmin/serving/request_body.py: a body the app did not read is read to its end before the
answer goes out (else gunicorn's close resets the connection under nginx's feet: a 502)."""

from __future__ import annotations

import io

from flagadmin.serving.request_body import BodyReadToTheEnd


def answer_without_reading(environ, start_response):
    start_response("400 Bad Request", [("Content-Type", "application/json")])
    return [b"{}"]


def test_body_not_read_by_the_app__read_to_its_end():
    body = io.BytesIO(b"x" * 200_000)
    environ = {"wsgi.input": body, "CONTENT_LENGTH": "200000"}

    result = BodyReadToTheEnd(answer_without_reading)(environ, lambda *args: None)

    assert (list(result), body.read()) == ([b"{}"], b"")


def test_no_body__nothing_read():
    class Unreadable:
        def read(self, size=-1):
            raise AssertionError("no body to read")

    environ = {"wsgi.input": Unreadable(), "CONTENT_LENGTH": ""}

    assert list(BodyReadToTheEnd(answer_without_reading)(environ, lambda *args: None)) == [b"{}"]
